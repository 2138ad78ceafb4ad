//! The counters as an admin reads them in HTML: the figures shared by
//! mod_status's section and the module's own status page. Rows that
//! counted nothing are left out; sizes, times and counts read as words.

use super::{slot, Reason, Snapshot, Totals};
use crate::outcome::Outcome;
use gdn_compressor::tally::CopyFate;
use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::representation::Representation;
use std::fmt::Write;

/// The style of the figures' tables (class `gdn`), valid in a `<head>`
/// and, as browsers take it, inside mod_status's page.
pub const STYLE: &str = "table.gdn{border-collapse:collapse;margin-bottom:1em}\
table.gdn th,table.gdn td{border:1px solid #999;padding:4px 8px}\
table.gdn td.n{text-align:right;white-space:nowrap}table.gdn td:first-child{white-space:nowrap}table.gdn th{background:#eee}";

/// A byte count as people read it.
pub fn bytes(n: u64) -> String {
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

/// `part` of `whole` in percent, one decimal; `-` without a whole.
pub fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1} %", part as f64 * 100.0 / whole as f64)
    }
}

/// `n` and its noun, singular for one.
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Microseconds of CPU as people read them.
pub fn cpu(us: u64) -> String {
    match us {
        0 => "none".into(),
        u if u < 1000 => format!("{u} µs"),
        u if u < 1_000_000 => format!("{:.1} ms", u as f64 / 1e3),
        u if u < 120_000_000 => format!("{:.2} s", u as f64 / 1e6),
        u => format!("{} min {} s", u / 60_000_000, u / 1_000_000 % 60),
    }
}

fn duration(secs: u64) -> String {
    match secs {
        s if s < 120 => count(s, "second", "seconds"),
        s if s < 7200 => format!("{} minutes", s / 60),
        s if s < 172_800 => format!("{} hours", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}

/// The rows of bytes by coding sent and outcome, in the order shown: a
/// label and the outcome, for every outcome with a body.
pub fn byte_rows() -> Vec<(String, Outcome)> {
    let mut codings: Vec<&str> = Coding::ALL.iter().map(|c| c.token()).collect();
    codings.extend(DeltaCoding::ALL.iter().map(|d| d.token()));
    codings.push("identity");
    let mut rows = Vec::new();
    for coding in codings {
        for o in Outcome::ALL {
            if o.coding_sent() != Some(coding) {
                continue;
            }
            let what = match o {
                Outcome::Sent(Representation::Decoded(c)) => format!("decoded from {}", c.token()),
                Outcome::Sent(Representation::DecodedCopy(c)) => {
                    format!("decoded copy of {}", c.token())
                }
                o => o.name().replace('_', " "),
            };
            rows.push((format!("{coding} {what}"), o));
        }
    }
    rows
}

/// The figures: what was saved at a glance, then the details.
pub fn figures(s: &Snapshot, now_secs: u64) -> String {
    let t = s.totals();
    let mut out = String::with_capacity(8192);
    let _ = write!(
        out,
        "<p>{} sent <b>{}</b> where uncompressed they would have been {}: \
         <b>{} saved ({})</b>",
        count(t.responses, "response", "responses"),
        bytes(t.known_sent()),
        bytes(t.original),
        bytes(t.saved()),
        percent(t.saved(), t.original),
    );
    if t.unknown > 0 {
        let _ = write!(
            out,
            "; {} more were sent of siblings whose original's size is not known",
            bytes(t.unknown)
        );
    }
    let _ = writeln!(
        out,
        ". Counting for {} (graceful and full restarts keep the counts; a stop \
         clears them).</p>",
        duration(now_secs.saturating_sub(s.get(slot::SINCE)))
    );
    savings_table(s, &mut out);
    outcomes_table(s, &mut out);
    passed_over_table(s, &mut out);
    if s.on_demand {
        on_demand(s, now_secs, &mut out);
    }
    out
}

/// One row's uncompressed, saved and ratio cells, over the bodies whose
/// size is known: `-` where none is.
fn size_cells(t: &Totals) -> [String; 3] {
    if !t.any_known() {
        return ["-".into(), "-".into(), "-".into()];
    }
    [
        bytes(t.original),
        bytes(t.saved()),
        percent(t.known_sent(), t.original),
    ]
}

fn savings_table(s: &Snapshot, out: &mut String) {
    // Sent bytes of unknown size get a column where there are any.
    let unknown = s.totals().unknown > 0;
    out.push_str(
        "<h3>Bytes by coding sent</h3>\n<table class=\"gdn\">\n\
         <tr><th>Content-Encoding and outcome</th><th>Responses</th><th>Sent</th>",
    );
    if unknown {
        out.push_str("<th>Of unknown size</th>");
    }
    out.push_str("<th>Uncompressed</th><th>Saved</th><th>Sent / uncompressed</th></tr>\n");
    for (label, o) in byte_rows() {
        let t = s.sum(&[o]);
        if t.responses == 0 {
            continue;
        }
        let _ = write!(
            out,
            "<tr><td>{label}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
            t.responses,
            bytes(t.sent),
        );
        if unknown {
            let shown = if t.unknown > 0 {
                bytes(t.unknown)
            } else {
                String::new()
            };
            let _ = write!(out, "<td class=\"n\">{shown}</td>");
        }
        let [original, saved, ratio] = size_cells(&t);
        let _ = writeln!(
            out,
            "<td class=\"n\">{original}</td><td class=\"n\">{saved}</td><td class=\"n\">{ratio}</td></tr>"
        );
    }
    out.push_str("</table>\n");
}

fn outcomes_table(s: &Snapshot, out: &mut String) {
    let columns = ["zstd", "br", "gzip", "dcz", "dcb", "identity"];
    out.push_str("<h3>Responses by outcome</h3>\n<table class=\"gdn\">\n<tr><th>Outcome</th>");
    for c in columns {
        let _ = write!(out, "<th>{c}</th>");
    }
    out.push_str("<th>Total</th></tr>\n");
    let mut names: Vec<&str> = Outcome::ALL.iter().map(|o| o.name()).collect();
    names.dedup();
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
            let shown = if n == 0 { String::new() } else { n.to_string() };
            let _ = write!(out, "<td class=\"n\">{shown}</td>");
        }
        let _ = writeln!(out, "<td class=\"n\">{total}</td></tr>");
    }
    out.push_str("</table>\n");
}

/// Siblings passed over and the CPU decoding took: only the rows that
/// counted something, and no table when none did.
fn passed_over_table(s: &Snapshot, out: &mut String) {
    let what = [
        (Reason::Stale, "stale (older than the original)"),
        (Reason::Refused, "refused by access rules"),
        (Reason::Window, "window over the decoding limit"),
        (Reason::Undecodable, "undecodable"),
        (Reason::Broken, "broken (found once per version)"),
    ];
    let mut rows = String::new();
    for (r, label) in what {
        let n = Coding::ALL.map(|c| s.get(slot::passed_over(r, c)));
        if n.iter().all(|&x| x == 0) {
            continue;
        }
        let _ = write!(rows, "<tr><td>{label}</td>");
        for x in n {
            let _ = write!(rows, "<td class=\"n\">{x}</td>");
        }
        rows.push_str("</tr>\n");
    }
    let us = Coding::ALL.map(|c| s.get(slot::decode_cpu_us(c)));
    if us.iter().any(|&x| x > 0) {
        rows.push_str("<tr><td>CPU spent decoding</td>");
        for x in us {
            let _ = write!(rows, "<td class=\"n\">{}</td>", cpu(x));
        }
        rows.push_str("</tr>\n");
    }
    if rows.is_empty() {
        return;
    }
    out.push_str(
        "<h3>Siblings passed over, and decoding</h3>\n<table class=\"gdn\">\n<tr><th></th>",
    );
    for c in Coding::ALL {
        let _ = write!(out, "<th>{}</th>", c.token());
    }
    out.push_str("</tr>\n");
    out.push_str(&rows);
    out.push_str("</table>\n");
}

fn on_demand(s: &Snapshot, now_secs: u64, out: &mut String) {
    let restarts = s.get(slot::COMPRESSOR_RESTARTS);
    let evicted = s.get(slot::CACHE_EVICTIONS);
    let _ = write!(
        out,
        "<h3>On-demand cache</h3>\n<p>Compressor pid {}: started {}",
        s.get(slot::COMPRESSOR_PID),
        count(s.get(slot::COMPRESSOR_STARTS), "time", "times"),
    );
    if restarts > 0 {
        let _ = write!(out, ", {} after dying", count(restarts, "time", "times"));
    }
    let _ = write!(
        out,
        "; CPU used: {}. The cache holds {}, {}",
        cpu(s.get(slot::COMPRESSOR_CPU_US)),
        count(s.get(slot::CACHE_ENTRIES), "entry", "entries"),
        bytes(s.get(slot::CACHE_BYTES)),
    );
    if evicted > 0 {
        let _ = write!(out, "; {} evicted", count(evicted, "copy", "copies"));
    }
    out.push_str(".</p>\n");
    backlog(s, now_secs, out);
    let asked: Vec<CopyFate> = CopyFate::ALL
        .into_iter()
        .filter(|&j| s.get(slot::job(j)) > 0)
        .collect();
    if asked.is_empty() {
        out.push_str("<p>No copies asked for yet.</p>\n");
        return;
    }
    out.push_str("<table class=\"gdn\">\n<tr>");
    for &j in &asked {
        let _ = write!(out, "<th>copies {}</th>", j.name().replace('_', " "));
    }
    out.push_str("</tr>\n<tr>");
    for &j in &asked {
        let _ = write!(out, "<td class=\"n\">{}</td>", s.get(slot::job(j)));
    }
    out.push_str("</tr>\n</table>\n");
}

/// The compressor's backlog: copies wanted, made, dropped, how long the
/// oldest has waited, CPU per copy.
fn backlog(s: &Snapshot, now_secs: u64, out: &mut String) {
    let wanted = s.get(slot::WANTED);
    let oldest = s.get(slot::WANTED_OLDEST);
    let _ = write!(
        out,
        "<p>Backlog: {} wanted",
        count(wanted, "entry", "entries")
    );
    if wanted > 0 && oldest > 0 {
        let _ = write!(
            out,
            ", the oldest asked for {} ago",
            duration(now_secs.saturating_sub(oldest))
        );
    }
    let _ = writeln!(
        out,
        "; {} made, {} dropped; CPU per copy: {}.</p>",
        s.get(slot::job(CopyFate::Done)),
        s.get(slot::job(CopyFate::Dropped)),
        cpu(super::render::cpu_per_copy(s)),
    );
}

/// mod_status's section: a heading, the style of its tables, the figures
/// and where the fuller page is.
pub fn section(s: &Snapshot, now_secs: u64) -> String {
    format!(
        "<hr />\n<h2>mod_gzip_disk_ng</h2>\n<style>{STYLE}</style>\n{}\
         <p>The same figures, first on a page of their own and with a chart: \
         <code>SetHandler gzip-disk-ng-status</code>.</p>\n",
        figures(s, now_secs)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::tally::tests::sample;

    #[test]
    fn figures_show_what_was_saved_without_rows_of_zeros() {
        let text = figures(&sample(), 100);
        assert!(text.contains("<b>700 B saved (70.0 %)</b>"), "{text}");
        assert!(text.contains("started 1 time;"), "{text}");
        assert!(text.contains("1 entry"), "{text}");
        assert!(text.contains("<td class=\"n\">1.50 s</td>"), "{text}");
        assert!(!text.contains("refused by access rules"), "{text}");
        assert!(!text.contains("0.000000"), "{text}");
        assert!(!text.contains("copies dropped"), "{text}");
    }

    #[test]
    fn an_unknown_uncompressed_size_shows_as_a_dash() {
        let mut s = sample();
        let o = Outcome::Sent(Representation::Sibling(Coding::Gzip));
        s.values[slot::responses(o)] = 1;
        s.values[slot::sent_bytes(o)] = 2096;
        s.values[slot::unknown_size_bytes(o)] = 2096;
        let text = figures(&s, 100);
        let row = text
            .lines()
            .find(|l| l.contains("gzip precompressed"))
            .expect("a gzip row");
        assert!(
            row.contains("<td class=\"n\">-</td><td class=\"n\">-</td>"),
            "{row}"
        );
        assert!(!row.contains("100"), "{row}");
        assert!(text.contains("<b>700 B saved (70.0 %)</b>"), "{text}");
        assert!(text.contains("2.0 KiB more were sent"), "{text}");
    }

    #[test]
    fn words_read_as_people_read_them() {
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 * 1024 * 1024), "3.0 MiB");
        assert_eq!(count(1, "time", "times"), "1 time");
        assert_eq!(count(2, "time", "times"), "2 times");
        assert_eq!(cpu(0), "none");
        assert_eq!(cpu(250), "250 µs");
        assert_eq!(cpu(12_300), "12.3 ms");
        assert_eq!(cpu(125_000_000), "2 min 5 s");
        assert_eq!(percent(1, 0), "-");
    }
}
