//! The counters as programs read them: mod_status's `?auto` lines, and
//! the Prometheus text exposition format.

use super::{slot, Reason, Snapshot};
use crate::outcome::Outcome;
use gdn_compressor::tally::CopyFate;
use gdn_core::coding::Coding;
use std::fmt::Write;

/// Where a family's samples come from.
#[derive(Clone, Copy)]
enum Source {
    PerOutcome(fn(Outcome) -> usize),
    DecodeCpu,
    PassedOver,
    Jobs,
    DeltaSaved,
    One(usize),
    OneMicros(usize),
    /// The compressor's CPU over the copies it made (or found not worth
    /// keeping).
    CpuPerCopy,
}

/// A family of Prometheus metrics: name, help, type, samples.
type Family = (&'static str, &'static str, &'static str, Source);

const FAMILIES: [Family; 19] = [
    ("gzip_disk_ng_responses_total", "Responses the gzip-disk-ng handler answered, by outcome and coding.", "counter", Source::PerOutcome(slot::responses)),
    ("gzip_disk_ng_sent_bytes_total", "Body bytes of those responses.", "counter", Source::PerOutcome(slot::sent_bytes)),
    ("gzip_disk_ng_original_bytes_total", "Body bytes the same responses would have had uncompressed, where known; less the sent_bytes of those, what compression saved.", "counter", Source::PerOutcome(slot::original_bytes)),
    ("gzip_disk_ng_unknown_size_sent_bytes_total", "Body bytes sent of responses whose uncompressed size is not known (a sibling without its original), left out of original_bytes.", "counter", Source::PerOutcome(slot::unknown_size_bytes)),
    ("gzip_disk_ng_decode_cpu_seconds_total", "CPU time spent decoding siblings for clients that accept none of their codings.", "counter", Source::DecodeCpu),
    ("gzip_disk_ng_siblings_passed_over_total", "Siblings not used for a response, by reason: stale, refused by access rules, window over the decoding limit, undecodable; broken siblings are counted once per version and process, when found.", "counter", Source::PassedOver),
    ("gzip_disk_ng_delta_saved_vs_br_bytes_total", "Bytes dictionary deltas (published and on demand) saved against the br representation of the same version, by coding, where its size was known.", "counter", Source::DeltaSaved),
    ("gzip_disk_ng_ondemand_copies_total", "On-demand copies asked for, by what became of them.", "counter", Source::Jobs),
    ("gzip_disk_ng_compressor_cpu_seconds_total", "CPU time of the on-demand compressor processes.", "counter", Source::OneMicros(slot::COMPRESSOR_CPU_US)),
    ("gzip_disk_ng_compressor_starts_total", "On-demand compressor processes started.", "counter", Source::One(slot::COMPRESSOR_STARTS)),
    ("gzip_disk_ng_compressor_restarts_total", "On-demand compressors started again after one died.", "counter", Source::One(slot::COMPRESSOR_RESTARTS)),
    ("gzip_disk_ng_compressor_pid", "Process id of the last on-demand compressor started.", "gauge", Source::One(slot::COMPRESSOR_PID)),
    ("gzip_disk_ng_cache_entries", "Files in the on-demand cache: copies, deltas, kept versions, and stand-ins for files not worth compressing.", "gauge", Source::One(slot::CACHE_ENTRIES)),
    ("gzip_disk_ng_cache_bytes", "Bytes of the copies, deltas and kept versions in the on-demand cache.", "gauge", Source::One(slot::CACHE_BYTES)),
    ("gzip_disk_ng_cache_evictions_total", "Copies, deltas and kept versions evicted from the on-demand cache, least recently used first.", "counter", Source::One(slot::CACHE_EVICTIONS)),
    ("gzip_disk_ng_ondemand_wanted", "On-demand copies asked for and not made yet: entries of the compressor's wanted set (a file version's codings, or a decoded sibling).", "gauge", Source::One(slot::WANTED)),
    ("gzip_disk_ng_ondemand_wanted_oldest_time_seconds", "When the oldest entry of the wanted set was first asked for, in seconds since the epoch; 0 when none is wanted.", "gauge", Source::One(slot::WANTED_OLDEST)),
    ("gzip_disk_ng_ondemand_cpu_seconds_per_copy", "CPU time of the on-demand compressor over the copies it made or found not worth keeping.", "gauge", Source::CpuPerCopy),
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
        Source::DeltaSaved => gdn_core::coding::DeltaCoding::ALL
            .iter()
            .map(|&d| Sample {
                labels: vec![("coding", d.token())],
                value: Value::Count(s.get(slot::delta_saved_vs_br(d))),
            })
            .collect(),
        Source::One(i) => one(Vec::new(), Value::Count(s.get(i))),
        Source::OneMicros(i) => one(Vec::new(), Value::Micros(s.get(i))),
        Source::CpuPerCopy => one(Vec::new(), Value::Micros(cpu_per_copy(s))),
    }
}

/// Microseconds of the compressor's CPU per copy made or found not
/// worth keeping (0 before the first).
pub fn cpu_per_copy(s: &Snapshot) -> u64 {
    let copies = s.get(slot::job(CopyFate::Done)) + s.get(slot::job(CopyFate::NotWorth));
    s.get(slot::COMPRESSOR_CPU_US) / copies.max(1)
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
    CopyFate::ALL
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
    let t = s.totals();
    let mut out = format!(
        "GzipDiskNgResponses: {}\nGzipDiskNgSentBytes: {}\nGzipDiskNgOriginalBytes: {}\nGzipDiskNgUnknownSizeSentBytes: {}\nGzipDiskNgSavedBytes: {}\n",
        t.responses, t.sent, t.original, t.unknown, t.saved()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::tally::tests::sample;

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
        assert!(text.starts_with("GzipDiskNgResponses: 3\nGzipDiskNgSentBytes: 300\nGzipDiskNgOriginalBytes: 1000\nGzipDiskNgUnknownSizeSentBytes: 0\nGzipDiskNgSavedBytes: 700\n"));
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
}
