//! A directive's arguments split as httpd splits them (`ap_getword_conf`):
//! at blanks, a word in single or double quotes taken whole with a
//! backslash-escaped quote inside it.

/// The words of `args`, in order.
pub fn words(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = args.trim_start();
    while !rest.is_empty() {
        let (word, after) = word(rest);
        out.push(word);
        rest = after.trim_start();
    }
    out
}

/// The first word of `s` (which starts with no blank) and what follows.
fn word(s: &str) -> (String, &str) {
    let quote = s.chars().next().filter(|c| *c == '"' || *c == '\'');
    let Some(q) = quote else {
        let end = s.find(char::is_whitespace).unwrap_or(s.len());
        return (s[..end].to_owned(), &s[end..]);
    };
    let body = &s[1..];
    let mut out = String::new();
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\\' && chars.peek().is_some_and(|(_, n)| *n == q) {
            out.push(q);
            chars.next();
        } else if c == q {
            return (out, &body[i + 1..]);
        } else {
            out.push(c);
        }
    }
    (out, "")
}

/// The first word of `args`, or "".
pub fn first(args: &str) -> String {
    let rest = args.trim_start();
    if rest.is_empty() {
        return String::new();
    }
    word(rest).0
}

/// Whether `word` is one of `list`, ignoring ASCII case (as httpd
/// compares directive and module names).
pub fn listed(list: &[&str], word: &str) -> bool {
    list.iter().any(|l| l.eq_ignore_ascii_case(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_httpds() {
        assert_eq!(words("  a  b\tc "), ["a", "b", "c"]);
        assert_eq!(words(r#""a b" 'c d' e"#), ["a b", "c d", "e"]);
        assert_eq!(words(r#""say \"hi\"" x"#), [r#"say "hi""#, "x"]);
        assert_eq!(words(r#""open"#), ["open"]);
        assert!(words("   ").is_empty());
        assert_eq!(first(""), "");
        assert_eq!(first(" None x"), "None");
        assert!(listed(&["AddType"], "addtype"));
        assert!(!listed(&["AddType"], "AddTypes"));
    }
}
