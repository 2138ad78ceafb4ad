//! The module's own status page (`SetHandler gzip-disk-ng-status`): the
//! figures of mod_status's section at the top, then an inline SVG chart
//! of bytes sent against uncompressed, by coding and outcome. One
//! self-contained HTML document: no script, no external asset.

use super::html::{self, bytes, percent};
use super::{Snapshot, Totals};
use crate::outcome::Outcome;
use std::fmt::Write;

/// The page.
pub fn page(s: &Snapshot, now_secs: u64) -> String {
    let mut out = String::with_capacity(16384);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>mod_gzip_disk_ng status</title>\n\
         <style>body{{font-family:sans-serif;margin:1.5em;color:#222}}{}</style>\n\
         </head>\n<body>\n<h1>mod_gzip_disk_ng status</h1>\n{}",
        html::STYLE,
        html::figures(s, now_secs)
    );
    out.push_str("<h2>Bytes sent against uncompressed</h2>\n");
    out.push_str(&chart(s));
    out.push_str("<p>The same counters for programs: <code>?auto</code> on this page.</p>\n</body>\n</html>\n");
    out
}

/// One bar pair of the chart: a row's label and totals.
struct Bar {
    label: String,
    t: Totals,
}

fn bars(s: &Snapshot) -> Vec<Bar> {
    html::byte_rows()
        .into_iter()
        .map(|(label, o): (String, Outcome)| Bar {
            label,
            t: s.sum(&[o]),
        })
        .filter(|b| b.t.sent > 0)
        .collect()
}

/// The figures beside a bar pair: sent of uncompressed, over the bodies
/// whose size is known, and what was sent of unknown size.
fn figures(t: &Totals) -> String {
    if !t.any_known() {
        return format!("{} (uncompressed size unknown)", bytes(t.sent));
    }
    let mut f = format!(
        "{} of {} ({})",
        bytes(t.known_sent()),
        bytes(t.original),
        percent(t.known_sent(), t.original)
    );
    if t.unknown > 0 {
        let _ = write!(f, "; {} more, size unknown", bytes(t.unknown));
    }
    f
}

const LABEL_W: u64 = 210;
const BAR_W: u64 = 320;
const TEXT_W: u64 = 420;
const ROW_H: u64 = 40;
const TOP: u64 = 36;

/// Horizontal bars, one pair per coding and outcome that sent a body:
/// uncompressed (light) over sent (dark), on one scale, with the figures
/// beside them.
pub fn chart(s: &Snapshot) -> String {
    let bars = bars(s);
    if bars.is_empty() {
        return "<p>Nothing sent yet.</p>\n".into();
    }
    let max = bars
        .iter()
        .map(|b| b.t.sent.max(b.t.original))
        .max()
        .unwrap_or(1)
        .max(1);
    let width = LABEL_W + BAR_W + TEXT_W;
    let height = TOP + ROW_H * bars.len() as u64 + 8;
    let scale = |n: u64| (n as f64 * BAR_W as f64 / max as f64).max(1.0);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" role=\"img\" \
         aria-label=\"Bytes sent against uncompressed, by coding and outcome\" \
         style=\"font-family:sans-serif;font-size:13px;max-width:100%;height:auto\">\n\
         <title>Bytes sent against uncompressed, by coding and outcome</title>\n\
         <rect x=\"{LABEL_W}\" y=\"6\" width=\"14\" height=\"10\" fill=\"#9ecae1\"/>\
         <text x=\"{}\" y=\"15\">uncompressed</text>\
         <rect x=\"{}\" y=\"6\" width=\"14\" height=\"10\" fill=\"#08519c\"/>\
         <text x=\"{}\" y=\"15\">sent</text>\n",
        LABEL_W + 18,
        LABEL_W + 130,
        LABEL_W + 148,
    );
    for (i, b) in bars.iter().enumerate() {
        bar_row(&mut out, TOP + ROW_H * i as u64, b, &scale);
    }
    out.push_str("</svg>\n");
    out
}

/// One row of the chart at height `y`: the label, the bars and the figures.
fn bar_row(out: &mut String, y: u64, b: &Bar, scale: &dyn Fn(u64) -> f64) {
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
        LABEL_W - 10,
        y + 21,
        b.label
    );
    // Known sizes only: the uncompressed bar against what those
    // bodies sent; a row of unknown size has the sent bar alone.
    let sent = if b.t.any_known() {
        let _ = writeln!(
            out,
            "<rect x=\"{LABEL_W}\" y=\"{}\" width=\"{:.1}\" height=\"14\" fill=\"#9ecae1\"/>",
            y + 2,
            scale(b.t.original)
        );
        b.t.known_sent()
    } else {
        b.t.sent
    };
    let _ = write!(
        out,
        "<rect x=\"{LABEL_W}\" y=\"{}\" width=\"{:.1}\" height=\"14\" fill=\"#08519c\"/>\n\
         <text x=\"{}\" y=\"{}\">{}</text>\n",
        y + 18,
        scale(sent),
        LABEL_W + BAR_W + 10,
        y + 21,
        figures(&b.t),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::tally::slot;
    use crate::metrics::tally::tests::sample;
    use gdn_core::coding::Coding;
    use gdn_core::representation::Representation;

    #[test]
    fn the_page_is_one_document_with_the_figures_first_and_a_chart() {
        let text = page(&sample(), 100);
        assert!(text.starts_with("<!DOCTYPE html>"));
        let figures = text.find("saved (70.0 %)").expect("figures");
        let chart = text.find("<svg").expect("chart");
        assert!(figures < chart);
        assert!(text.contains("br precompressed</text>"), "{text}");
        assert!(text.contains("300 B of 1000 B (30.0 %)"), "{text}");
        for never in ["<script", "src=", "href=", "url("] {
            assert!(!text.contains(never), "{never}");
        }
    }

    #[test]
    fn a_bar_of_unknown_size_has_no_uncompressed_bar() {
        let mut s = sample();
        let o = Outcome::Sent(Representation::Sibling(Coding::Gzip));
        s.values[slot::responses(o)] = 1;
        s.values[slot::sent_bytes(o)] = 2096;
        s.values[slot::unknown_size_bytes(o)] = 2096;
        let svg = chart(&s);
        assert!(svg.contains("2.0 KiB (uncompressed size unknown)"), "{svg}");
        assert_eq!(svg.matches("fill=\"#9ecae1\"").count(), 2, "legend and br");
    }
}
