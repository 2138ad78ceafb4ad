//! Ranges of a coded representation. A client resuming a download it
//! kept decoded (`curl -C - --compressed`, `wget2 -c`) asks for a range
//! of the coded bytes at the decoded length: honouring it would splice
//! two representations silently. So a range of a coded representation is
//! honoured only where `If-Range` names that representation's own
//! entity tag (RFC 9110, 13.1.5); otherwise the whole representation goes
//! out with a 200, which every client assembles or refuses loudly.

/// What to do with a request's `Range` for a coded representation whose
/// strong entity tag is `etag`, `len` bytes long.
#[derive(Debug, PartialEq, Eq)]
pub enum CodedRange {
    /// No `Range`, or one `If-Range` allows: Apache's byterange filter
    /// answers it (206).
    Honour,
    /// Send the whole representation (200): drop the `Range`.
    Whole,
    /// `If-Range` allows it but no range is satisfiable: a 416 that
    /// says the length (`Content-Range: bytes */len`).
    Unsatisfiable,
}

pub fn coded_range(
    range: Option<&[u8]>,
    if_range: Option<&[u8]>,
    etag: &[u8],
    len: u64,
) -> CodedRange {
    let Some(range) = range else {
        return CodedRange::Honour;
    };
    let named = if_range.is_some_and(|v| v.trim_ascii() == etag && !etag.starts_with(b"W/"));
    if !named {
        return CodedRange::Whole;
    }
    if satisfiable(range, len) {
        CodedRange::Honour
    } else {
        CodedRange::Unsatisfiable
    }
}

/// Whether any range of a `bytes=` set can be served from `len` bytes:
/// one that starts inside them, or a non-empty suffix of a non-empty
/// body. Anything that is no byte range set is ignored by Apache (a
/// 200), so it counts as satisfiable here.
fn satisfiable(range: &[u8], len: u64) -> bool {
    let Some(set) = range.trim_ascii().strip_prefix(b"bytes=") else {
        return true;
    };
    set.split(|&b| b == b',').any(|spec| {
        let spec = spec.trim_ascii();
        let Some(dash) = spec.iter().position(|&b| b == b'-') else {
            return true;
        };
        let (first, last) = (&spec[..dash], &spec[dash + 1..]);
        match (number(first), number(last)) {
            (Some(start), _) => start < len,
            (None, Some(suffix)) if first.is_empty() => suffix > 0 && len > 0,
            _ => true,
        }
    })
}

fn number(b: &[u8]) -> Option<u64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAG: &[u8] = b"\"1f-5e3-gzip\"";

    #[test]
    fn a_range_without_if_range_gets_the_whole_representation() {
        assert_eq!(coded_range(None, None, TAG, 100), CodedRange::Honour);
        assert_eq!(
            coded_range(Some(b"bytes=50-"), None, TAG, 100),
            CodedRange::Whole
        );
        let date = b"Wed, 21 Oct 2026 07:28:00 GMT";
        assert_eq!(
            coded_range(Some(b"bytes=50-"), Some(date), TAG, 100),
            CodedRange::Whole
        );
        let other = b"\"1f-5e3-br\"";
        assert_eq!(
            coded_range(Some(b"bytes=50-"), Some(other), TAG, 100),
            CodedRange::Whole
        );
    }

    #[test]
    fn if_range_naming_the_representation_honours_it_or_says_the_length() {
        let ok = |r: &[u8]| coded_range(Some(r), Some(TAG), TAG, 100);
        assert_eq!(ok(b"bytes=50-"), CodedRange::Honour);
        assert_eq!(ok(b"bytes=-10"), CodedRange::Honour);
        assert_eq!(ok(b"bytes=200-300, 10-20"), CodedRange::Honour);
        assert_eq!(ok(b"bytes=100-"), CodedRange::Unsatisfiable);
        assert_eq!(ok(b"bytes=150-200, 300-"), CodedRange::Unsatisfiable);
        assert_eq!(ok(b"bytes=-0"), CodedRange::Unsatisfiable);
        assert_eq!(ok(b"items=1-2"), CodedRange::Honour);
        let weak = b"W/\"1f-5e3-gzip\"";
        assert_eq!(
            coded_range(Some(b"bytes=1-"), Some(weak), weak, 100),
            CodedRange::Whole
        );
    }
}
