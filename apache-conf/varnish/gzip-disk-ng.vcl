# Varnish in front of mod_gzip_disk_ng (VCL 4.1; tested with Varnish 7.1,
# Debian 12's package).
#
# Out of the box Varnish asks the backend for gzip only and gunzips for
# clients that do not accept it, so zstd and br never reach browsers and
# RFC 9842 dictionary deltas (dcz, dcb) are never asked for. This file
# makes Varnish a faithful cache of what the module sends:
#
#  - Accept-Encoding is reduced to the codings the module chooses among:
#    those at the highest q, in one order (`zstd, br, gzip`; q=0 excludes;
#    `*` stands for codings not named; no header, or nothing acceptable:
#    identity). The module sends the smallest of them, so the cache holds
#    one object per set of codings instead of one per browser version's
#    header string;
#  - dcz and dcb are kept, and the object is keyed by Available-Dictionary,
#    only when the client names them and announces a dictionary;
#  - Varnish's own gzip handling is turned off for these responses: the
#    bodies, Content-Encoding, ETag, Vary and Use-As-Dictionary pass as the
#    module sent them.
#
# Use it as it is (edit the backend below), or copy the subroutines into
# your own VCL: Varnish runs same-named subroutines in the order they
# appear, so `call gdn_normalize;` must come before any `return (hash)`.
# Start varnishd with `-p http_gzip_support=off` as well (see
# docs/caches.md): it is not required with this file, but it keeps Varnish
# from ever gunzipping or re-keying a gzip object behind your back.

vcl 4.1;

import std;

# The Apache serving the module. Edit host and port.
backend default {
    .host = "127.0.0.1";
    .port = "8080";
}

sub vcl_recv {
    call gdn_normalize;
}

# The module compares q values (RFC 9110 §12.5.3), never header strings;
# so does this. The header is brought to a canonical list of
# ",name;q=value," members first (lower case, no whitespace, parameters
# other than q dropped), then the q of each name is read from it.
sub gdn_normalize {
    # Several Accept-Encoding fields count as one list, as in Apache.
    std.collect(req.http.Accept-Encoding);
    set req.http.gdn-s = "," + std.tolower(req.http.Accept-Encoding) + ",";
    # Whitespace around separators is insignificant ("gzip ; q = 0.5").
    set req.http.gdn-s = regsuball(req.http.gdn-s, "[ \t]*([,;=])[ \t]*", "\1");
    # A member with a parameter that is not name=value is ignored.
    set req.http.gdn-s = regsuball(req.http.gdn-s,
        ",[^,]*;[^,;=]+(?=[,;])[^,]*(?=,)", "");
    # Parameters other than q mean nothing here; of several q, the last.
    set req.http.gdn-s = regsuball(req.http.gdn-s, ";(?!q=)[^;,]*", "");
    set req.http.gdn-s = regsuball(req.http.gdn-s, ";q=[^;,]*(?=;q=)", "");
    # No q is q=1.
    set req.http.gdn-s = regsuball(req.http.gdn-s, ",([^,;]+)(?=,)", ",\1;q=1");
    # A malformed q (q=2, q=0.1234, q=abc) makes the member ignored.
    set req.http.gdn-s = regsuball(req.http.gdn-s,
        ",[^,;]*;q=(?!(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?),)[^,]*(?=,)", "");
    set req.http.gdn-s = regsuball(req.http.gdn-s, "(;q=[01])\.(?=,)", "\1");
    # x-gzip is gzip.
    set req.http.gdn-s = regsuball(req.http.gdn-s, ",x-gzip;", ",gzip;");
    call gdn_q_values;
    call gdn_choose;
    call gdn_deltas;
    call gdn_assemble;
    unset req.http.gdn-s;
}

# The q of each name as a number 0..1 in gdn-q-<name>, unset when the
# header does not name it. Codings not named take the q of `*`, and so
# does identity; dcz and dcb never do (RFC 9842 codings must be named).
sub gdn_q_values {
    unset req.http.gdn-q-star;
    set req.http.gdn-n = "*";
    call gdn_q;
    if (req.http.gdn-q) { set req.http.gdn-q-star = req.http.gdn-q; }
    set req.http.gdn-n = "zstd";
    call gdn_q;
    if (req.http.gdn-q) { set req.http.gdn-q-zstd = req.http.gdn-q; }
    else { set req.http.gdn-q-zstd = req.http.gdn-q-star; }
    set req.http.gdn-n = "br";
    call gdn_q;
    if (req.http.gdn-q) { set req.http.gdn-q-br = req.http.gdn-q; }
    else { set req.http.gdn-q-br = req.http.gdn-q-star; }
    set req.http.gdn-n = "gzip";
    call gdn_q;
    if (req.http.gdn-q) { set req.http.gdn-q-gzip = req.http.gdn-q; }
    else { set req.http.gdn-q-gzip = req.http.gdn-q-star; }
    set req.http.gdn-n = "identity";
    call gdn_q;
    if (req.http.gdn-q) { set req.http.gdn-q-identity = req.http.gdn-q; }
    else { set req.http.gdn-q-identity = req.http.gdn-q-star; }
    # Unset (or empty) when not named: gdn_deltas drops them.
    set req.http.gdn-n = "dcz";
    call gdn_q;
    set req.http.gdn-q-dcz = req.http.gdn-q;
    set req.http.gdn-n = "dcb";
    call gdn_q;
    set req.http.gdn-q-dcb = req.http.gdn-q;
    unset req.http.gdn-n;
    unset req.http.gdn-q;
}

# The q that the canonical list gdn-s gives the name in gdn-n (in gdn-q;
# unset when not named). The name is put before the list so that one
# regular expression serves every name (\1). A name given twice takes
# the higher q: its first and last occurrences are compared.
sub gdn_q {
    unset req.http.gdn-q;
    if (req.http.gdn-n + "|" + req.http.gdn-s ~ "^([^|]*)\|.*,\1;q=") {
        set req.http.gdn-q = std.real(regsub(req.http.gdn-n + "|" + req.http.gdn-s,
            "^([^|]*)\|.*?,\1;q=([^,]*),.*$", "\2"), 0);
        if (std.real(regsub(req.http.gdn-n + "|" + req.http.gdn-s,
            "^([^|]*)\|.*,\1;q=([^,]*),.*$", "\2"), 0) > std.real(req.http.gdn-q, 0)) {
            set req.http.gdn-q = std.real(regsub(req.http.gdn-n + "|" + req.http.gdn-s,
                "^([^|]*)\|.*,\1;q=([^,]*),.*$", "\2"), 0);
        }
    }
}

# The codings the module chooses among: those at the highest q, listed in
# one order (it sends the smallest, or with GzipDiskNgEncodings set the
# first of its order, of those that exist).
sub gdn_choose {
    unset req.http.gdn-best;
    set req.http.gdn-best-q = "0";
    if (std.real(req.http.gdn-q-zstd, 0) > std.real(req.http.gdn-best-q, 0)) {
        set req.http.gdn-best-q = req.http.gdn-q-zstd;
    }
    if (std.real(req.http.gdn-q-br, 0) > std.real(req.http.gdn-best-q, 0)) {
        set req.http.gdn-best-q = req.http.gdn-q-br;
    }
    if (std.real(req.http.gdn-q-gzip, 0) > std.real(req.http.gdn-best-q, 0)) {
        set req.http.gdn-best-q = req.http.gdn-q-gzip;
    }
    if (std.real(req.http.gdn-best-q, 0) > 0) {
        set req.http.gdn-best = "";
        if (std.real(req.http.gdn-q-zstd, 0) == std.real(req.http.gdn-best-q, 0)) {
            set req.http.gdn-best = req.http.gdn-best + ", zstd";
        }
        if (std.real(req.http.gdn-q-br, 0) == std.real(req.http.gdn-best-q, 0)) {
            set req.http.gdn-best = req.http.gdn-best + ", br";
        }
        if (std.real(req.http.gdn-q-gzip, 0) == std.real(req.http.gdn-best-q, 0)) {
            set req.http.gdn-best = req.http.gdn-best + ", gzip";
        }
        set req.http.gdn-best = regsub(req.http.gdn-best, "^, ", "");
    }
    # A client giving identity (or `*`) a higher q than the coding gets
    # the original from the module: identity here too.
    if (std.real(req.http.gdn-best-q, 0) < std.real(req.http.gdn-q-identity, 0)) {
        unset req.http.gdn-best;
    }
}

# Deltas are worth asking for only with a dictionary announced. The
# module tries dcz and dcb by q (dcz first at equal q) before any coding,
# and skips those that identity outranks.
sub gdn_deltas {
    if (!req.http.Available-Dictionary) {
        unset req.http.gdn-q-dcz;
        unset req.http.gdn-q-dcb;
    }
    if (std.real(req.http.gdn-q-dcz, 0) <= 0
        || std.real(req.http.gdn-q-dcz, 0) < std.real(req.http.gdn-q-identity, 0)) {
        unset req.http.gdn-q-dcz;
    }
    if (std.real(req.http.gdn-q-dcb, 0) <= 0
        || std.real(req.http.gdn-q-dcb, 0) < std.real(req.http.gdn-q-identity, 0)) {
        unset req.http.gdn-q-dcb;
    }
}

# The normalized header: the deltas kept, then the chosen coding, q=1
# for all but dcz when dcb was preferred to it. Nothing left: no header
# (identity).
sub gdn_assemble {
    set req.http.gdn-ae = "";
    if (req.http.gdn-q-dcz) {
        if (std.real(req.http.gdn-q-dcb, 0) > std.real(req.http.gdn-q-dcz, 0)) {
            set req.http.gdn-ae = ", dcz;q=0.9";
        } else {
            set req.http.gdn-ae = ", dcz";
        }
    }
    if (req.http.gdn-q-dcb) {
        set req.http.gdn-ae = req.http.gdn-ae + ", dcb";
    }
    if (req.http.gdn-best) {
        set req.http.gdn-ae = req.http.gdn-ae + ", " + req.http.gdn-best;
    }
    if (req.http.gdn-ae == "") {
        unset req.http.Accept-Encoding;
    } else {
        set req.http.Accept-Encoding = regsub(req.http.gdn-ae, "^, ", "");
    }
    # Without a delta coding the dictionary is no part of the answer.
    if (req.http.Accept-Encoding !~ "dc[bz]") {
        unset req.http.Available-Dictionary;
    }
    # Kept for vcl_backend_fetch, which Varnish reaches with
    # Accept-Encoding forced to gzip when http_gzip_support is on.
    set req.http.gdn-ae = "[" + req.http.Accept-Encoding + "]";
    unset req.http.gdn-q-star;
    unset req.http.gdn-q-zstd;
    unset req.http.gdn-q-br;
    unset req.http.gdn-q-gzip;
    unset req.http.gdn-q-identity;
    unset req.http.gdn-q-dcz;
    unset req.http.gdn-q-dcb;
    unset req.http.gdn-best;
    unset req.http.gdn-best-q;
}

# One object per normalized Accept-Encoding (and per dictionary when a
# delta coding is accepted). The module's Vary says the same; hashing it
# too keeps each variant list short.
sub vcl_hash {
    hash_data(req.http.gdn-ae);
    if (req.http.Accept-Encoding ~ "dc[bz]" && req.http.Available-Dictionary) {
        hash_data(req.http.Available-Dictionary);
    }
}

sub vcl_backend_fetch {
    # The backend gets the normalized header, not Varnish's "gzip".
    if (bereq.http.gdn-ae == "[]") {
        unset bereq.http.Accept-Encoding;
    } else {
        set bereq.http.Accept-Encoding = regsub(bereq.http.gdn-ae, "^\[(.*)\]$", "\1");
    }
    unset bereq.http.gdn-ae;
}

sub vcl_backend_response {
    # Store what the module sent: never gzip or gunzip it here (that
    # would change the body, Content-Encoding and ETag of a representation
    # other clients are keyed to).
    set beresp.do_gzip = false;
    set beresp.do_gunzip = false;
}
