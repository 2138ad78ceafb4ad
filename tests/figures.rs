//! The README states no figure a script does not print: each one (a
//! ratio, a percentage, seconds, a decimal in a table) stands before a
//! "measured on DATE, `COMMAND`" that names the script and the day, and
//! docs/performance.md, in a section naming that command and that day,
//! holds the same figure. A figure with no such mark, or one the
//! performance page does not hold, fails.

use std::path::Path;

/// The figures of `text`: decimals and integers followed by ×, %, " s"
/// or a range's dash, and decimals alone in a table cell.
fn figures(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_digit()
            && (i == 0
                || !(b[i - 1].is_ascii_alphanumeric() || matches!(b[i - 1], b'.' | b'-' | b'_')));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < b.len()
            && (b[j].is_ascii_digit()
                || (b[j] == b'.' && j + 1 < b.len() && b[j + 1].is_ascii_digit()))
        {
            j += 1;
        }
        let num = &text[i..j];
        let rest = &text[j..];
        let unit = ["×", "%", " %", " s ", " s)", " s,", "–"]
            .iter()
            .any(|u| rest.starts_with(u));
        let cell = num.contains('.')
            && text[..i].trim_end_matches(' ').ends_with('|')
            && rest.trim_start_matches(' ').starts_with('|');
        if unit || cell {
            out.push(num.to_owned());
        }
        i = j;
    }
    out
}

/// The README cut at each "measured on DATE, `COMMAND`": (the text before
/// the mark since the last mark or heading, date, command); the text
/// after the last mark of a section comes with neither.
fn marked(readme: &str) -> Vec<(String, Option<(String, String)>)> {
    let mut out = Vec::new();
    for section in readme.split("\n#") {
        let flat = section.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut rest = flat.as_str();
        loop {
            let lower = rest.to_ascii_lowercase();
            let found = lower.match_indices("measured on ").find_map(|(at, m)| {
                let after = &rest[at + m.len()..];
                let date = after.get(..10).filter(|d| is_date(d))?;
                let cmd = after[10..].strip_prefix(", `")?;
                let end = cmd.find('`')?;
                Some((
                    at,
                    date.to_owned(),
                    cmd[..end].to_owned(),
                    at + m.len() + 13 + end + 1,
                ))
            });
            match found {
                Some((at, date, cmd, end)) => {
                    out.push((rest[..at].to_owned(), Some((date, cmd))));
                    rest = &rest[end..];
                }
                None => {
                    out.push((rest.to_owned(), None));
                    break;
                }
            }
        }
    }
    out
}

fn is_date(d: &str) -> bool {
    d.len() == 10
        && d.bytes().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                c == b'-'
            } else {
                c.is_ascii_digit()
            }
        })
}

/// Whether `figure` stands in `text` as a number of its own.
fn holds(text: &str, figure: &str) -> bool {
    text.match_indices(figure).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + figure.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_digit() || c == '.')
            && !after.is_some_and(|c| c.is_ascii_digit() || (c == '.' && figure.contains('.')))
    })
}

#[test]
fn readme_figures_are_marked_and_in_the_performance_page() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let perf = std::fs::read_to_string(root.join("docs/performance.md")).expect("performance.md");
    let sections: Vec<&str> = perf.split("\n## ").collect();
    let mut checked = 0;
    for (text, mark) in marked(&readme) {
        let found = figures(&text);
        let Some((date, cmd)) = mark else {
            assert!(
                found.is_empty(),
                "README figures {found:?} with no \"measured on DATE, `COMMAND`\" after them: {text}"
            );
            continue;
        };
        let section = sections
            .iter()
            .find(|s| s.contains(&format!("`{cmd}")) && s.contains(&date))
            .unwrap_or_else(|| {
                panic!("no section of docs/performance.md names `{cmd}` and {date}")
            });
        for f in &found {
            assert!(
                holds(section, f),
                "README's {f} (measured on {date}, `{cmd}`) is not in docs/performance.md's section on it"
            );
            checked += 1;
        }
    }
    // The marks cover the README's figures: the req/s table, the
    // instructions per request, the on-demand times and sizes.
    assert!(checked >= 20, "only {checked} figures checked");
}

#[test]
fn figures_are_found_and_unmarked_ones_caught() {
    let f =
        figures("costs 1.096× and 14.5–15.0 % in 0.14 s (zstd) | 1.12 | 2.4 | Apache 2.4, 314 KB");
    assert_eq!(f, ["1.096", "14.5", "15.0", "0.14", "1.12", "2.4"]);
    let m = marked("## A\n\n1.5× faster (measured on\n2026-11-24, `bench/x.sh --y`); then 2×\n");
    assert_eq!(m.len(), 2);
    assert_eq!(
        m[0].1,
        Some(("2026-11-24".to_owned(), "bench/x.sh --y".to_owned()))
    );
    assert_eq!(figures(&m[0].0), ["1.5"]);
    assert_eq!((figures(&m[1].0), &m[1].1), (vec!["2".to_owned()], &None));
    assert!(holds("gave 1.096× core", "1.096") && !holds("gave 11.096×", "1.096"));
}
