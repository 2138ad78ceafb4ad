//! The counters as an admin reads them: mod_status's HTML section, its
//! `?auto` lines, and the Prometheus text exposition format.

use super::{slot, Job, Outcome, Reason, Snapshot};
use crate::coding::Coding;
use std::fmt::Write;

/// Where a family's samples come from.
#[derive(Clone, Copy)]
enum Source {
    PerOutcome(fn(Outcome) -> usize),
    DecodeCpu,
    PassedOver,
    Jobs,
    One(usize),
    OneMicros(usize),
}

/// A family of Prometheus metrics: name, help, type, samples.
type Family = (&'static str, &'static str, &'static str, Source);

const FAMILIES: [Family; 14] = [
    ("gzip_disk_ng_responses_total", "Responses the gzip-disk-ng handler answered, by outcome and coding.", "counter", Source::PerOutcome(slot::responses)),
    ("gzip_disk_ng_sent_bytes_total", "Body bytes of those responses.", "counter", Source::PerOutcome(slot::sent_bytes)),
    ("gzip_disk_ng_original_bytes_total", "Body bytes the same responses would have had uncompressed; less sent_bytes, what compression saved.", "counter", Source::PerOutcome(slot::original_bytes)),
    ("gzip_disk_ng_decode_cpu_seconds_total", "CPU time spent decoding siblings for clients that accept none of their codings.", "counter", Source::DecodeCpu),
    ("gzip_disk_ng_siblings_passed_over_total", "Siblings not used for a response, by reason: stale, refused by access rules, window over the decoding limit, undecodable.", "counter", Source::PassedOver),
    ("gzip_disk_ng_ondemand_copies_total", "On-demand copies asked for, by what became of them.", "counter", Source::Jobs),
    ("gzip_disk_ng_compressor_cpu_seconds_total", "CPU time of the on-demand compressor processes.", "counter", Source::OneMicros(slot::COMPRESSOR_CPU_US)),
    ("gzip_disk_ng_compressor_starts_total", "On-demand compressor processes started.", "counter", Source::One(slot::COMPRESSOR_STARTS)),
    ("gzip_disk_ng_compressor_restarts_total", "On-demand compressors started again after one died.", "counter", Source::One(slot::COMPRESSOR_RESTARTS)),
    ("gzip_disk_ng_compressor_pid", "Process id of the last on-demand compressor started.", "gauge", Source::One(slot::COMPRESSOR_PID)),
    ("gzip_disk_ng_cache_entries", "Files in the on-demand cache: copies, and markers of files not worth compressing.", "gauge", Source::One(slot::CACHE_ENTRIES)),
    ("gzip_disk_ng_cache_bytes", "Bytes of the copies in the on-demand cache.", "gauge", Source::One(slot::CACHE_BYTES)),
    ("gzip_disk_ng_cache_evictions_total", "Copies evicted from the on-demand cache, least recently used first.", "counter", Source::One(slot::CACHE_EVICTIONS)),
    ("gzip_disk_ng_counters_start_time_seconds", "When these counters started at zero, in seconds since the epoch.", "gauge", Source::One(slot::SINCE)),
];

/// One value with its labels.
struct Sample {
    labels: Vec<(&'static str, &'static str)>,
    value: Value,
}

#[derive(Clone, Copy)]
enum Value {
    Count(u64),
    /// Microseconds, shown in seconds.
    Micros(u64),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Value::Count(n) => write!(f, "{n}"),
            Value::Micros(us) => write!(f, "{}.{:06}", us / 1_000_000, us % 1_000_000),
        }
    }
}

fn outcome_labels(o: Outcome) -> Vec<(&'static str, &'static str)> {
    let mut l = vec![("outcome", o.name())];
    if let Some(c) = o.coding() {
        l.push(("coding", c));
    }
    l
}

/// A family's samples.
fn samples(s: &Snapshot, source: Source) -> Vec<Sample> {
    let one = |labels, value| vec![Sample { labels, value }];
    match source {
        Source::PerOutcome(f) => Outcome::ALL
            .iter()
            .map(|&o| Sample {
                labels: outcome_labels(o),
                value: Value::Count(s.get(f(o))),
            })
            .collect(),
        Source::DecodeCpu => decode_cpu(s),
        Source::PassedOver => passed_over(s),
        Source::Jobs => jobs(s),
        Source::One(i) => one(Vec::new(), Value::Count(s.get(i))),
        Source::OneMicros(i) => one(Vec::new(), Value::Micros(s.get(i))),
    }
}

fn decode_cpu(s: &Snapshot) -> Vec<Sample> {
    Coding::ALL
        .iter()
        .map(|&c| Sample {
            labels: vec![("coding", c.token())],
            value: Value::Micros(s.get(slot::decode_cpu_us(c))),
        })
        .collect()
}

fn passed_over(s: &Snapshot) -> Vec<Sample> {
    Reason::ALL
        .iter()
        .flat_map(|&r| Coding::ALL.iter().map(move |&c| (r, c)))
        .map(|(r, c)| Sample {
            labels: vec![("reason", r.name()), ("coding", c.token())],
            value: Value::Count(s.get(slot::passed_over(r, c))),
        })
        .collect()
}

fn jobs(s: &Snapshot) -> Vec<Sample> {
    Job::ALL
        .iter()
        .map(|&j| Sample {
            labels: vec![("state", j.name())],
            value: Value::Count(s.get(slot::job(j))),
        })
        .collect()
}

/// The counters in the Prometheus text exposition format (version 0.0.4).
pub fn prometheus(s: &Snapshot) -> String {
    let mut out = String::with_capacity(8192);
    for (name, help, kind, source) in FAMILIES {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for x in samples(s, source) {
            out.push_str(name);
            if !x.labels.is_empty() {
                let l: Vec<String> = x
                    .labels
                    .iter()
                    .map(|(k, v)| format!("{k}=\"{v}\""))
                    .collect();
                let _ = write!(out, "{{{}}}", l.join(","));
            }
            let _ = writeln!(out, " {}", x.value);
        }
    }
    out
}

/// `snake_case` as `CamelCase`, for `?auto` keys.
fn camel(s: &str) -> String {
    s.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// The counters as `Key: value` lines for `server-status?auto`: totals
/// first, then every sample, keyed by family and labels.
pub fn auto(s: &Snapshot) -> String {
    let (n, sent, original) = s.totals();
    let mut out = format!(
        "GzipDiskNgResponses: {n}\nGzipDiskNgSentBytes: {sent}\nGzipDiskNgOriginalBytes: {original}\nGzipDiskNgSavedBytes: {}\n",
        original.saturating_sub(sent)
    );
    for (name, _, _, source) in FAMILIES {
        let base = name
            .trim_start_matches("gzip_disk_ng_")
            .trim_end_matches("_total");
        for x in samples(s, source) {
            let labels: String = x.labels.iter().map(|(_, v)| camel(v)).collect();
            let _ = writeln!(out, "GzipDiskNg{}{labels}: {}", camel(base), x.value);
        }
    }
    out
}

/// A byte count as people read it.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// `part` of `whole` in percent, one decimal.
fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "&ndash;".into()
    } else {
        format!("{:.1} %", part as f64 * 100.0 / whole as f64)
    }
}

/// The rows of the "by coding sent" table: a label and the outcomes it
/// sums.
fn coding_rows() -> Vec<(&'static str, Vec<Outcome>)> {
    let mut rows: Vec<(&'static str, Vec<Outcome>)> = Coding::ALL
        .iter()
        .map(|&c| {
            (
                c.token(),
                vec![Outcome::Precompressed(c), Outcome::Cached(c)],
            )
        })
        .collect();
    for d in crate::coding::DeltaCoding::ALL {
        rows.push((d.token(), vec![Outcome::Delta(d)]));
    }
    let mut identity = vec![Outcome::Original];
    for c in Coding::ALL {
        identity.extend([Outcome::Decoded(c), Outcome::DecodedCopy(c)]);
    }
    rows.push(("identity", identity));
    rows
}

/// mod_status's section: what was saved, at a glance, then the details.
pub fn html(s: &Snapshot, now_secs: u64) -> String {
    let (n, sent, original) = s.totals();
    let mut out = String::with_capacity(8192);
    out.push_str("<hr />\n<h2>mod_gzip_disk_ng</h2>\n");
    let _ = writeln!(
        out,
        "<p>{n} responses sent <b>{}</b> where uncompressed they would have been {}: \
         <b>{} saved ({})</b>, counting for {} (graceful and full restarts keep the \
         counts; a stop clears them).</p>",
        bytes(sent),
        bytes(original),
        bytes(original.saturating_sub(sent)),
        percent(original.saturating_sub(sent), original),
        duration(now_secs.saturating_sub(s.get(slot::SINCE)))
    );
    savings_table(s, &mut out);
    outcomes_table(s, &mut out);
    passed_over_table(s, &mut out);
    if s.on_demand {
        on_demand_table(s, &mut out);
    }
    out
}

fn duration(secs: u64) -> String {
    match secs {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}

fn savings_table(s: &Snapshot, out: &mut String) {
    out.push_str(
        "<h3>Bytes by coding sent</h3>\n<table border=\"1\" cellpadding=\"4\" style=\"border-collapse: collapse\">\n\
         <tr><th>Content-Encoding</th><th>Responses</th><th>Sent</th>\
         <th>Uncompressed</th><th>Saved</th><th>Sent / uncompressed</th></tr>\n",
    );
    for (label, outcomes) in coding_rows() {
        let (n, sent, orig) = outcomes.iter().fold((0, 0, 0), |(n, a, b), &o| {
            (n + s.responses(o), a + s.sent(o), b + s.original(o))
        });
        if n == 0 {
            continue;
        }
        let _ = writeln!(
            out,
            "<tr><td>{label}</td><td align=\"right\">{n}</td><td align=\"right\">{}</td>\
             <td align=\"right\">{}</td><td align=\"right\">{}</td><td align=\"right\">{}</td></tr>",
            bytes(sent),
            bytes(orig),
            bytes(orig.saturating_sub(sent)),
            percent(sent, orig)
        );
    }
    out.push_str("</table>\n");
}

fn outcomes_table(s: &Snapshot, out: &mut String) {
    let columns = ["zstd", "br", "gzip", "dcz", "dcb", "identity"];
    out.push_str("<h3>Responses by outcome</h3>\n<table border=\"1\" cellpadding=\"4\" style=\"border-collapse: collapse\">\n<tr><th>Outcome</th>");
    for c in columns {
        let _ = write!(out, "<th>{c}</th>");
    }
    out.push_str("<th>Total</th></tr>\n");
    let names = [
        "precompressed",
        "delta",
        "cached",
        "decoded",
        "decoded_copy",
        "original",
        "not_acceptable",
        "not_found",
        "error",
        "other",
    ];
    for name in names {
        let of: Vec<Outcome> = Outcome::ALL
            .into_iter()
            .filter(|o| o.name() == name)
            .collect();
        let total: u64 = of.iter().map(|&o| s.responses(o)).sum();
        if total == 0 {
            continue;
        }
        let _ = write!(out, "<tr><td>{}</td>", name.replace('_', " "));
        for col in columns {
            let n: u64 = of
                .iter()
                .filter(|o| o.coding() == Some(col))
                .map(|&o| s.responses(o))
                .sum();
            let _ = write!(
                out,
                "<td align=\"right\">{}</td>",
                if n == 0 { String::new() } else { n.to_string() }
            );
        }
        let _ = writeln!(out, "<td align=\"right\">{total}</td></tr>");
    }
    out.push_str("</table>\n");
}

fn passed_over_table(s: &Snapshot, out: &mut String) {
    out.push_str("<h3>Siblings passed over, and decoding</h3>\n<table border=\"1\" cellpadding=\"4\" style=\"border-collapse: collapse\">\n<tr><th></th>");
    for c in Coding::ALL {
        let _ = write!(out, "<th>{}</th>", c.token());
    }
    out.push_str("</tr>\n");
    let what = [
        (Reason::Stale, "stale (older than the original)"),
        (Reason::Refused, "refused by access rules"),
        (Reason::Window, "window over the decoding limit"),
        (Reason::Undecodable, "undecodable"),
    ];
    for (r, label) in what {
        let _ = write!(out, "<tr><td>{label}</td>");
        for c in Coding::ALL {
            let _ = write!(
                out,
                "<td align=\"right\">{}</td>",
                s.get(slot::passed_over(r, c))
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("<tr><td>CPU spent decoding</td>");
    for c in Coding::ALL {
        let _ = write!(
            out,
            "<td align=\"right\">{} s</td>",
            Value::Micros(s.get(slot::decode_cpu_us(c)))
        );
    }
    out.push_str("</tr>\n</table>\n");
}

fn on_demand_table(s: &Snapshot, out: &mut String) {
    let pid = s.get(slot::COMPRESSOR_PID);
    let _ = writeln!(
        out,
        "<h3>On-demand cache</h3>\n<p>Compressor pid {pid}: started {} times, {} after dying; \
         {} s of CPU. The cache holds {} entries, {}; {} evicted.</p>",
        s.get(slot::COMPRESSOR_STARTS),
        s.get(slot::COMPRESSOR_RESTARTS),
        Value::Micros(s.get(slot::COMPRESSOR_CPU_US)),
        s.get(slot::CACHE_ENTRIES),
        bytes(s.get(slot::CACHE_BYTES)),
        s.get(slot::CACHE_EVICTIONS)
    );
    out.push_str(
        "<table border=\"1\" cellpadding=\"4\" style=\"border-collapse: collapse\">\n<tr>",
    );
    for j in Job::ALL {
        let _ = write!(out, "<th>copies {}</th>", j.name().replace('_', " "));
    }
    out.push_str("</tr>\n<tr>");
    for j in Job::ALL {
        let _ = write!(out, "<td align=\"right\">{}</td>", s.get(slot::job(j)));
    }
    out.push_str("</tr>\n</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Snapshot {
        let mut values = [0u64; slot::COUNT];
        let o = Outcome::Precompressed(Coding::Br);
        values[slot::responses(o)] = 3;
        values[slot::sent_bytes(o)] = 300;
        values[slot::original_bytes(o)] = 1000;
        values[slot::decode_cpu_us(Coding::Gzip)] = 1_500_000;
        values[slot::passed_over(Reason::Stale, Coding::Zstd)] = 2;
        Snapshot {
            values,
            on_demand: true,
        }
    }

    #[test]
    fn prometheus_has_help_type_and_labelled_samples() {
        let text = prometheus(&sample());
        assert!(text.contains("# TYPE gzip_disk_ng_responses_total counter\n"));
        assert!(text
            .contains("gzip_disk_ng_responses_total{outcome=\"precompressed\",coding=\"br\"} 3\n"));
        assert!(text.contains("gzip_disk_ng_responses_total{outcome=\"not_found\"} 0\n"));
        assert!(text.contains("gzip_disk_ng_decode_cpu_seconds_total{coding=\"gzip\"} 1.500000\n"));
        assert!(text.contains(
            "gzip_disk_ng_siblings_passed_over_total{reason=\"stale\",coding=\"zstd\"} 2\n"
        ));
        let helps = text.lines().filter(|l| l.starts_with("# HELP")).count();
        let types = text.lines().filter(|l| l.starts_with("# TYPE")).count();
        assert_eq!(helps, types);
    }

    #[test]
    fn auto_lines_have_totals_and_one_key_each() {
        let text = auto(&sample());
        assert!(text.starts_with("GzipDiskNgResponses: 3\nGzipDiskNgSentBytes: 300\nGzipDiskNgOriginalBytes: 1000\nGzipDiskNgSavedBytes: 700\n"));
        assert!(text.contains("GzipDiskNgResponsesPrecompressedBr: 3\n"));
        assert!(text.contains("GzipDiskNgSiblingsPassedOverStaleZstd: 2\n"));
        let mut keys: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split_once(": "))
            .map(|(k, _)| k)
            .collect();
        let n = keys.len();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), n, "keys are unique");
    }

    #[test]
    fn html_shows_what_was_saved() {
        let text = html(&sample(), 100);
        assert!(text.contains("<b>700 B saved (70.0 %)</b>"), "{text}");
        assert!(text.contains("On-demand cache"));
    }

    #[test]
    fn bytes_read_as_people_read_them() {
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 * 1024 * 1024), "3.0 MiB");
    }
}
