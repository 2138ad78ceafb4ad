//! Per-directory configuration: the directives' parsing and merge rules.
//!
//! Every field is optional so that an inner scope overrides only what it
//! sets; `resolved` applies the defaults.

use crate::coding::Coding;

/// Default name of the marker header.
pub const DEFAULT_STATUS_HEADER: &str = "Mod-Gzip-Disk-Ng";

/// `GzipDiskNgJitter`: padding appended to precompressed responses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Jitter {
    /// Largest padding, bytes (1..=max are added).
    pub max: u32,
    /// Bytes hashed to derive the length; negative: random per response.
    pub buffer: i64,
    /// SHA-256 instead of CRC32-C.
    pub paranoid: bool,
}

/// The marker header setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StatusHeader {
    Off,
    Named(String),
}

/// One scope's settings, as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirConfig {
    /// Allowed codings in preference order.
    pub encodings: Option<Vec<Coding>>,
    pub decompress: Option<bool>,
    pub status_header: Option<StatusHeader>,
    /// `Some(None)` is an explicit `Off`.
    pub jitter: Option<Option<Jitter>>,
}

impl DirConfig {
    /// Inner scope `child` overrides `self` field by field.
    pub fn merge(&self, child: &DirConfig) -> DirConfig {
        DirConfig {
            encodings: child.encodings.clone().or_else(|| self.encodings.clone()),
            decompress: child.decompress.or(self.decompress),
            status_header: child
                .status_header
                .clone()
                .or_else(|| self.status_header.clone()),
            jitter: child.jitter.or(self.jitter),
        }
    }

    /// Allowed codings in preference order.
    pub fn encodings(&self) -> &[Coding] {
        self.encodings.as_deref().unwrap_or(&Coding::ALL)
    }

    /// Whether decompression on the fly is on.
    pub fn decompress(&self) -> bool {
        self.decompress.unwrap_or(true)
    }

    /// The marker header name, if any.
    pub fn status_header(&self) -> Option<&str> {
        match &self.status_header {
            None => Some(DEFAULT_STATUS_HEADER),
            Some(StatusHeader::Off) => None,
            Some(StatusHeader::Named(n)) => Some(n),
        }
    }

    /// The jitter setting, if on.
    pub fn jitter(&self) -> Option<Jitter> {
        self.jitter.flatten()
    }
}

/// `GzipDiskNgEncodings zstd br gzip`
pub fn parse_encodings(args: &[&str]) -> Result<Vec<Coding>, String> {
    if args.is_empty() {
        return Err("GzipDiskNgEncodings needs one or more of: zstd br gzip".into());
    }
    let mut out = Vec::new();
    for a in args {
        let c = Coding::from_token(a).ok_or_else(|| {
            format!("GzipDiskNgEncodings: unknown coding '{a}' (allowed: zstd br gzip)")
        })?;
        if out.contains(&c) {
            return Err(format!("GzipDiskNgEncodings: '{a}' listed twice"));
        }
        out.push(c);
    }
    Ok(out)
}

/// `GzipDiskNgStatusHeader On|Off|<header-name>`
pub fn parse_status_header(arg: &str) -> Result<StatusHeader, String> {
    if arg.eq_ignore_ascii_case("on") {
        Ok(StatusHeader::Named(DEFAULT_STATUS_HEADER.into()))
    } else if arg.eq_ignore_ascii_case("off") {
        Ok(StatusHeader::Off)
    } else if !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    {
        Ok(StatusHeader::Named(arg.into()))
    } else {
        Err(format!(
            "GzipDiskNgStatusHeader: '{arg}' is not On, Off or a header field name"
        ))
    }
}

/// `GzipDiskNgJitter Off | <max-bytes> [<buffer-bytes>] [paranoid]`
pub fn parse_jitter(args: &[&str]) -> Result<Option<Jitter>, String> {
    const USAGE: &str =
        "GzipDiskNgJitter takes Off, or <max-bytes 1..65536> [<buffer-bytes>] [paranoid]";
    match args {
        [off] if off.eq_ignore_ascii_case("off") => return Ok(None),
        [] => return Err(USAGE.into()),
        _ => {}
    }
    let mut rest = args;
    let mut paranoid = false;
    if let [head @ .., last] = rest {
        if last.eq_ignore_ascii_case("paranoid") {
            paranoid = true;
            rest = head;
        }
    }
    let (max, buffer) = match rest {
        [m] => (*m, None),
        [m, b] => (*m, Some(*b)),
        _ => return Err(USAGE.into()),
    };
    let max: u32 = max
        .parse()
        .ok()
        .filter(|m| (1..=65536).contains(m))
        .ok_or_else(|| format!("{USAGE}; got max '{max}'"))?;
    let buffer: i64 = match buffer {
        None => 0,
        Some(b) => b
            .parse()
            .map_err(|_| format!("{USAGE}; got buffer '{b}'"))?,
    };
    Ok(Some(Jitter {
        max,
        buffer: if buffer == 0 { 64 * 1024 } else { buffer },
        paranoid,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let c = DirConfig::default();
        assert_eq!(c.encodings(), &Coding::ALL);
        assert!(c.decompress());
        assert_eq!(c.status_header(), Some(DEFAULT_STATUS_HEADER));
        assert_eq!(c.jitter(), None);
    }

    #[test]
    fn merge_is_field_by_field() {
        let outer = DirConfig {
            encodings: Some(vec![Coding::Gzip]),
            decompress: Some(false),
            ..Default::default()
        };
        let inner = DirConfig {
            decompress: Some(true),
            status_header: Some(StatusHeader::Off),
            ..Default::default()
        };
        let m = outer.merge(&inner);
        assert_eq!(m.encodings(), &[Coding::Gzip]);
        assert!(m.decompress());
        assert_eq!(m.status_header(), None);
        let back = inner.merge(&DirConfig::default());
        assert_eq!(back, inner);
    }

    #[test]
    fn encodings_parse() {
        assert_eq!(
            parse_encodings(&["gzip", "BR"]).unwrap(),
            vec![Coding::Gzip, Coding::Br]
        );
        assert!(parse_encodings(&["deflate"])
            .unwrap_err()
            .contains("deflate"));
        assert!(parse_encodings(&["gzip", "gzip"]).is_err());
        assert!(parse_encodings(&[]).is_err());
    }

    #[test]
    fn status_header_parse() {
        assert_eq!(parse_status_header("off").unwrap(), StatusHeader::Off);
        assert_eq!(
            parse_status_header("X-Precompressed").unwrap(),
            StatusHeader::Named("X-Precompressed".into())
        );
        assert!(parse_status_header("bad header").is_err());
    }

    #[test]
    fn jitter_parse() {
        assert_eq!(parse_jitter(&["Off"]).unwrap(), None);
        assert_eq!(
            parse_jitter(&["32"]).unwrap(),
            Some(Jitter {
                max: 32,
                buffer: 65536,
                paranoid: false
            })
        );
        assert_eq!(
            parse_jitter(&["32", "-1", "paranoid"]).unwrap(),
            Some(Jitter {
                max: 32,
                buffer: -1,
                paranoid: true
            })
        );
        assert_eq!(
            parse_jitter(&["8", "paranoid"]).unwrap(),
            Some(Jitter {
                max: 8,
                buffer: 65536,
                paranoid: true
            })
        );
        for bad in [
            &["0"][..],
            &["x"],
            &["1", "2", "3"],
            &[],
            &["70000"],
            &["5", "z"],
        ] {
            assert!(parse_jitter(bad).is_err(), "{bad:?}");
        }
    }
}
