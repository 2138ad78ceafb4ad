//! Whether a response a handler makes (PHP, CGI, a proxy) is coded on
//! its way out, and in what: the output filter's decision, as facts in
//! and a verdict out. It steps aside where mod_deflate does (a coded
//! body, 204 and 304, `no-transform`, the `no-gzip` family) and where
//! coding would be waste (types that do not compress, small bodies).

use crate::coding::Coding;
use crate::negotiate::Accepted;
use crate::types;

/// Smallest body coded by default: below this a coding's framing and the
/// client's decoding cost more than the bytes saved (gzhttp's choice).
pub const DEFAULT_MIN_SIZE: u64 = 256;

/// What the response is, as the filter first sees it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Response<'a> {
    pub status: u16,
    /// `Content-Encoding` as the handler or a filter before set it.
    pub content_encoding: Option<&'a [u8]>,
    /// The response's `Cache-Control`.
    pub cache_control: Option<&'a [u8]>,
    /// The request's `Cache-Control`: a client may ask for no transform.
    pub request_cache_control: Option<&'a [u8]>,
    pub content_type: Option<&'a [u8]>,
    /// `Content-Length`, where the handler declared one.
    pub content_length: Option<u64>,
    /// `no-gzip` (no coding at all, as mod_deflate reads it).
    pub no_gzip: bool,
    /// `gzip-only-text/html`: only `text/html` is coded.
    pub only_html: bool,
}

/// Why a response goes out as the handler made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aside {
    /// 204, 304, 1xx: no body to code.
    NoBody,
    /// Already in a content coding (a backend's gzip passes as it is).
    Coded,
    /// `Cache-Control: no-transform`, in the response or the request.
    NoTransform,
    /// `no-gzip`, or `gzip-only-text/html` on another type.
    Environment,
    /// A type that does not compress, or none.
    Type,
    /// Declared shorter than the minimum.
    Small,
}

impl Aside {
    /// The word the log note and the debug line use.
    pub fn word(self) -> &'static str {
        match self {
            Aside::NoBody => "no body",
            Aside::Coded => "already coded",
            Aside::NoTransform => "no-transform",
            Aside::Environment => "environment",
            Aside::Type => "type",
            Aside::Small => "small",
        }
    }

    /// Whether other clients could get this response coded, so that it
    /// varies on `Accept-Encoding` all the same.
    pub fn varies(self) -> bool {
        matches!(self, Aside::Small)
    }
}

/// Whether the response may be coded at all, whoever asks.
pub fn eligible(r: &Response<'_>, min_size: u64) -> Result<(), Aside> {
    if r.status == 204 || r.status == 304 || r.status < 200 {
        return Err(Aside::NoBody);
    }
    if r.content_encoding.is_some_and(|e| !only_identity(e)) {
        return Err(Aside::Coded);
    }
    if [r.cache_control, r.request_cache_control]
        .into_iter()
        .flatten()
        .any(|cc| has_token(cc, b"no-transform"))
    {
        return Err(Aside::NoTransform);
    }
    let essence = r.content_type.map(types::essence);
    if r.no_gzip || (r.only_html && !essence.is_some_and(|t| t.eq_ignore_ascii_case(b"text/html")))
    {
        return Err(Aside::Environment);
    }
    if !essence.is_some_and(types::is_compressible_type) {
        return Err(Aside::Type);
    }
    if r.content_length.is_some_and(|n| n < min_size) {
        return Err(Aside::Small);
    }
    Ok(())
}

/// The coding a client gets: the best it accepts of `order` (its q, then
/// the server's order), where it does not prefer identity to it; `None`
/// for identity.
pub fn choose(accepted: &Accepted, order: &[Coding]) -> Option<Coding> {
    let (c, q) = accepted.ranked(order).iter_q().next()?;
    (q >= accepted.identity_preference() || accepted.identity_q() == 0).then_some(c)
}

/// Whether a `Content-Encoding` value names no coding but identity.
fn only_identity(v: &[u8]) -> bool {
    v.split(|&b| b == b',')
        .map(trim)
        .all(|t| t.is_empty() || t.eq_ignore_ascii_case(b"identity"))
}

/// Whether a comma-separated header holds `token` (case-insensitive,
/// directives' arguments ignored).
pub fn has_token(v: &[u8], token: &[u8]) -> bool {
    v.split(|&b| b == b',').any(|m| {
        let name = m.split(|&b| b == b'=').next().unwrap_or(m);
        trim(name).eq_ignore_ascii_case(token)
    })
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// The opaque part of an entity tag, between its quotes (`v1` of
/// `"v1"` or `W/"v1"`): what a coded body's tag suffixes, as
/// [`coded_etag`] does, for a caller that writes the pieces where they go
/// rather than into a new buffer. `None` for what is no entity tag.
pub fn etag_inner(etag: &[u8]) -> Option<&[u8]> {
    let opaque = etag.strip_prefix(b"W/").unwrap_or(etag);
    let inner = opaque.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    (!inner.contains(&b'"')).then_some(inner)
}

/// The ETag of a coded response: the handler's own, weak (bytes coded on
/// the fly differ with the level), with the coding appended inside the
/// quotes as mod_deflate's `AddSuffix` does, so each coding validates
/// alone. `None` for a value that is not an entity tag.
pub fn coded_etag(etag: &[u8], token: &str) -> Option<Vec<u8>> {
    let inner = etag_inner(etag)?;
    let mut out = Vec::with_capacity(inner.len() + token.len() + 6);
    out.extend_from_slice(b"W/\"");
    out.extend_from_slice(inner);
    out.push(b'-');
    out.extend_from_slice(token.as_bytes());
    out.push(b'"');
    Some(out)
}

/// Which precondition a list of entity tags comes from: they differ in
/// how a tag the filter made may stand for the handler's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precondition {
    /// `If-None-Match`, compared weakly (RFC 9110 13.1.2).
    IfNoneMatch,
    /// `If-Match`, compared strongly.
    IfMatch,
}

/// A conditional header's list with each tag the filter made for `token`
/// (weak, `W/"v1-br"`, as [`coded_etag`] makes it) given back as the
/// handler's own (`"v1"`), so the handler's comparison, or a backend's,
/// matches what the client stored. `None` where no tag changed, or the
/// list is `*` or not a list of entity tags (left as it came).
///
/// In `If-None-Match` the tag becomes strong: a weak comparison treats
/// `"v1"` and `W/"v1"` alike, and a backend comparing the header whole
/// with its strong tag (most applications do) then matches too. In
/// `If-Match` it stays weak: a body coded on the fly is never the
/// handler's bytes, so a strong comparison must still fail.
pub fn handler_tags(list: &[u8], token: &str, which: Precondition) -> Option<Vec<u8>> {
    let tags = entity_tags(list)?;
    let mut changed = false;
    let mut out = Vec::with_capacity(list.len());
    for (weak, inner) in tags {
        let own = weak.then(|| strip_coding(inner, token)).flatten();
        if !out.is_empty() {
            out.extend_from_slice(b", ");
        }
        let keep_weak = match own {
            Some(_) => which == Precondition::IfMatch,
            None => weak,
        };
        if keep_weak {
            out.extend_from_slice(b"W/");
        }
        out.push(b'"');
        out.extend_from_slice(own.unwrap_or(inner));
        out.push(b'"');
        changed |= own.is_some();
    }
    changed.then_some(out)
}

/// `inner` without its `-token` suffix, where it has one and something
/// before it.
fn strip_coding<'a>(inner: &'a [u8], token: &str) -> Option<&'a [u8]> {
    let head = inner.strip_suffix(token.as_bytes())?.strip_suffix(b"-")?;
    (!head.is_empty()).then_some(head)
}

/// The entity tags of a list, each as (weak, the bytes inside its
/// quotes); `None` for `*` or anything that is not such a list. A comma
/// may sit inside the quotes, so the list is read tag by tag, not split.
fn entity_tags(mut s: &[u8]) -> Option<Vec<(bool, &[u8])>> {
    let mut tags = Vec::new();
    loop {
        while let [b' ' | b'\t' | b',', rest @ ..] = s {
            s = rest;
        }
        if s.is_empty() {
            return (!tags.is_empty()).then_some(tags);
        }
        let weak = s.starts_with(b"W/");
        if weak {
            s = &s[2..];
        }
        let rest = s.strip_prefix(b"\"")?;
        let end = rest.iter().position(|&b| b == b'"')?;
        tags.push((weak, &rest[..end]));
        s = &rest[end + 1..];
        if !matches!(s, [] | [b' ' | b'\t' | b',', ..]) {
            return None;
        }
    }
}

/// Whether a 304 gets the coded response's validators (its ETag suffixed
/// for the client's coding now, `Vary`), so the response the client
/// stored is refreshed rather than left to expire. Where a 200 would
/// step aside for its coding, `no-transform` or the environment, so does
/// its 304. Its type counts where it has one that compresses, or where
/// the request named the coding's tag (`named`): a 304 often carries no
/// type at all, and a client holding a tag the filter made holds a body
/// it coded.
pub fn refreshes(r: &Response<'_>, named: bool) -> Result<(), Aside> {
    let as_ok = Response {
        status: 200,
        content_length: None,
        ..*r
    };
    match eligible(&as_ok, 0) {
        Err(Aside::Type) if named => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORDER: [Coding; 3] = [Coding::Zstd, Coding::Br, Coding::Gzip];

    fn html() -> Response<'static> {
        Response {
            status: 200,
            content_type: Some(b"text/html; charset=UTF-8"),
            ..Response::default()
        }
    }

    #[test]
    fn a_page_is_coded() {
        assert_eq!(eligible(&html(), DEFAULT_MIN_SIZE), Ok(()));
    }

    #[test]
    fn steps_aside_as_mod_deflate_does() {
        let cases: [(Response<'static>, Aside); 9] = [
            (
                Response {
                    status: 304,
                    ..html()
                },
                Aside::NoBody,
            ),
            (
                Response {
                    status: 204,
                    ..html()
                },
                Aside::NoBody,
            ),
            (
                Response {
                    content_encoding: Some(b"gzip"),
                    ..html()
                },
                Aside::Coded,
            ),
            (
                Response {
                    content_encoding: Some(b"identity, br"),
                    ..html()
                },
                Aside::Coded,
            ),
            (
                Response {
                    cache_control: Some(b"private, No-Transform"),
                    ..html()
                },
                Aside::NoTransform,
            ),
            (
                Response {
                    request_cache_control: Some(b"no-transform"),
                    ..html()
                },
                Aside::NoTransform,
            ),
            (
                Response {
                    no_gzip: true,
                    ..html()
                },
                Aside::Environment,
            ),
            (
                Response {
                    content_type: Some(b"image/png"),
                    ..html()
                },
                Aside::Type,
            ),
            (
                Response {
                    content_length: Some(100),
                    ..html()
                },
                Aside::Small,
            ),
        ];
        for (r, why) in cases {
            assert_eq!(eligible(&r, DEFAULT_MIN_SIZE), Err(why), "{r:?}");
        }
    }

    #[test]
    fn what_else_is_coded() {
        let ok = [
            Response {
                content_encoding: Some(b"identity"),
                ..html()
            },
            Response {
                cache_control: Some(b"no-cache, max-age=0"),
                ..html()
            },
            Response {
                content_type: Some(b"application/json"),
                ..html()
            },
            Response {
                content_type: Some(b"text/event-stream"),
                ..html()
            },
            Response {
                only_html: true,
                ..html()
            },
            Response {
                content_length: Some(256),
                ..html()
            },
            Response {
                status: 404,
                ..html()
            },
        ];
        for r in ok {
            assert_eq!(eligible(&r, DEFAULT_MIN_SIZE), Ok(()), "{r:?}");
        }
        let css = Response {
            only_html: true,
            content_type: Some(b"text/css"),
            ..html()
        };
        assert_eq!(eligible(&css, DEFAULT_MIN_SIZE), Err(Aside::Environment));
        assert_eq!(
            eligible(
                &Response {
                    content_type: None,
                    ..html()
                },
                0
            ),
            Err(Aside::Type)
        );
        assert_eq!(
            eligible(
                &Response {
                    content_type: Some(b"application/x-httpd-php"),
                    ..html()
                },
                0
            ),
            Err(Aside::Type)
        );
    }

    #[test]
    fn the_client_and_the_server_order_choose() {
        let pick = |h: &str| choose(&Accepted::parse(Some(h)), &ORDER);
        assert_eq!(pick("gzip, deflate, br, zstd"), Some(Coding::Zstd));
        assert_eq!(pick("gzip, br;q=0.9"), Some(Coding::Gzip));
        assert_eq!(pick("*"), Some(Coding::Zstd));
        assert_eq!(pick("identity"), None);
        assert_eq!(pick("gzip;q=0.5, identity"), None);
        assert_eq!(pick("gzip;q=0.5, identity;q=0"), Some(Coding::Gzip));
        assert_eq!(pick("zstd;q=0, br;q=0, gzip;q=0"), None);
        assert_eq!(choose(&Accepted::parse(None), &ORDER), None);
        assert_eq!(
            choose(&Accepted::parse(Some("zstd, br")), &[Coding::Br]),
            Some(Coding::Br)
        );
    }

    #[test]
    fn the_etag_names_the_coding_and_is_weak() {
        assert_eq!(
            coded_etag(b"\"abc\"", "zstd").as_deref(),
            Some(&b"W/\"abc-zstd\""[..])
        );
        assert_eq!(
            coded_etag(b"W/\"abc\"", "br").as_deref(),
            Some(&b"W/\"abc-br\""[..])
        );
        assert_eq!(coded_etag(b"abc", "gzip"), None);
        assert_eq!(coded_etag(b"\"a\"b\"", "gzip"), None);
    }

    #[test]
    fn tokens_are_found_whole() {
        assert!(has_token(b"public, no-transform", b"no-transform"));
        assert!(!has_token(b"no-transformx", b"no-transform"));
        assert!(has_token(b" NO-TRANSFORM ", b"no-transform"));
    }

    #[test]
    fn the_filters_tags_are_given_back_as_the_handlers() {
        let nm = |l: &str, t| handler_tags(l.as_bytes(), t, Precondition::IfNoneMatch);
        let own = |l: &str, t| nm(l, t).map(|v| String::from_utf8(v).expect("ascii"));
        assert_eq!(own("W/\"v1-br\"", "br").as_deref(), Some("\"v1\""));
        assert_eq!(
            own("\"a\", W/\"v1-br\" ,W/\"x,y-br\"", "br").as_deref(),
            Some("\"a\", \"v1\", \"x,y\"")
        );
        assert_eq!(
            own("W/\"v1-gzip\", W/\"v1-br\"", "br").as_deref(),
            Some("W/\"v1-gzip\", \"v1\""),
            "another coding's tag stays as it is"
        );
        assert_eq!(own("W/\"v1-dcz\"", "dcz").as_deref(), Some("\"v1\""));
        for untouched in [
            "W/\"v1-gzip\"",
            "\"v1-br\"",
            "W/\"-br\"",
            "W/\"v1br\"",
            "*",
            "",
            "W/\"v1-br",
            "W/\"v1-br\"x",
            "v1-br",
        ] {
            assert_eq!(nm(untouched, "br"), None, "{untouched}");
        }
        let im = handler_tags(b"W/\"v1-zstd\", \"s\"", "zstd", Precondition::IfMatch);
        assert_eq!(im.as_deref(), Some(&b"W/\"v1\", \"s\""[..]), "stays weak");
    }

    #[test]
    fn the_handlers_tag_round_trips() {
        for (tag, want) in [("\"v1\"", "\"v1\""), ("W/\"v1\"", "\"v1\"")] {
            let coded = coded_etag(tag.as_bytes(), "br").expect("a tag");
            let back = handler_tags(&coded, "br", Precondition::IfNoneMatch);
            assert_eq!(back.as_deref(), Some(want.as_bytes()), "{tag}");
        }
    }

    #[test]
    fn a_304_is_refreshed_where_its_200_would_be_coded() {
        let nm = Response {
            status: 304,
            ..html()
        };
        assert_eq!(refreshes(&nm, false), Ok(()));
        let bare = Response {
            content_type: None,
            ..nm
        };
        assert_eq!(refreshes(&bare, false), Err(Aside::Type));
        assert_eq!(refreshes(&bare, true), Ok(()), "the client named the tag");
        let cases = [
            Response {
                content_encoding: Some(b"gzip"),
                ..nm
            },
            Response {
                cache_control: Some(b"no-transform"),
                ..nm
            },
            Response {
                no_gzip: true,
                ..nm
            },
        ];
        for r in cases {
            assert!(refreshes(&r, true).is_err(), "{r:?}");
        }
        let short = Response {
            content_length: Some(3),
            ..nm
        };
        assert_eq!(refreshes(&short, false), Ok(()), "a 304's length is none");
    }
}
