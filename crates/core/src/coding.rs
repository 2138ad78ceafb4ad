//! The content codings the module knows, with their sibling suffixes.

use std::ffi::CStr;

/// A content coding a sibling can carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Coding {
    Zstd,
    Br,
    Gzip,
}

impl Coding {
    /// Every coding, in the default server preference.
    pub const ALL: [Coding; 3] = [Coding::Zstd, Coding::Br, Coding::Gzip];

    /// The Content-Encoding token.
    pub fn token(self) -> &'static str {
        match self {
            Coding::Zstd => "zstd",
            Coding::Br => "br",
            Coding::Gzip => "gzip",
        }
    }

    /// Sibling file suffixes, in lookup order.
    pub fn suffixes(self) -> &'static [&'static str] {
        match self {
            Coding::Zstd => &[".zst", ".zstd"],
            Coding::Br => &[".br"],
            Coding::Gzip => &[".gz"],
        }
    }

    /// The token as a C string, for Apache's tables.
    pub fn c_token(self) -> &'static CStr {
        match self {
            Coding::Zstd => c"zstd",
            Coding::Br => c"br",
            Coding::Gzip => c"gzip",
        }
    }

    /// The environment variable that removes this coding (as mod_deflate's
    /// `no-gzip` and mod_brotli's `no-brotli` do).
    pub fn no_env(self) -> &'static CStr {
        match self {
            Coding::Zstd => c"no-zstd",
            Coding::Br => c"no-brotli",
            Coding::Gzip => c"no-gzip",
        }
    }

    /// Position in `ALL`, for fixed-size tables.
    pub fn index(self) -> usize {
        match self {
            Coding::Zstd => 0,
            Coding::Br => 1,
            Coding::Gzip => 2,
        }
    }

    /// Parses a token as it appears in configuration or Accept-Encoding.
    pub fn from_token(t: &str) -> Option<Coding> {
        if t.eq_ignore_ascii_case("zstd") {
            Some(Coding::Zstd)
        } else if t.eq_ignore_ascii_case("br") {
            Some(Coding::Br)
        } else if t.eq_ignore_ascii_case("gzip") || t.eq_ignore_ascii_case("x-gzip") {
            Some(Coding::Gzip)
        } else {
            None
        }
    }
}

/// A dictionary-compressed coding (RFC 9842): the response is a delta
/// against a dictionary the client already holds (see `dictionary`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeltaCoding {
    /// Dictionary-compressed zstd.
    Dcz,
    /// Dictionary-compressed brotli.
    Dcb,
}

impl DeltaCoding {
    /// Both, in server preference order.
    pub const ALL: [DeltaCoding; 2] = [DeltaCoding::Dcz, DeltaCoding::Dcb];

    /// The Content-Encoding token.
    pub fn token(self) -> &'static str {
        match self {
            DeltaCoding::Dcz => "dcz",
            DeltaCoding::Dcb => "dcb",
        }
    }

    /// The token as a C string, for Apache's tables.
    pub fn c_token(self) -> &'static CStr {
        match self {
            DeltaCoding::Dcz => c"dcz",
            DeltaCoding::Dcb => c"dcb",
        }
    }

    /// Position in `ALL`, for fixed-size tables.
    pub fn index(self) -> usize {
        match self {
            DeltaCoding::Dcz => 0,
            DeltaCoding::Dcb => 1,
        }
    }

    /// The coding whose coder makes it: a server configured without
    /// that coding (or a request that forbids it) makes no such delta.
    pub fn base(self) -> Coding {
        match self {
            DeltaCoding::Dcz => Coding::Zstd,
            DeltaCoding::Dcb => Coding::Br,
        }
    }
}
