#!/usr/bin/env bash
# The module on an httpd 2.4 built from its release source, in the layout
# of /usr/local/apache2 (the official httpd image's: bin/, conf/httpd.conf,
# modules/, htdocs/), as an admin of such a server installs it with no
# Debian package: the pristine tarball Debian's apache2 source package
# carries (the newest of bookworm's and trixie's that the mirror has, its
# sha256 checked against their Sources), built against Debian's APR and
# APR-util into a prefix of this run; then
#   - `APXS=PREFIX/bin/apxs cargo build` (in target/httpd-VERSION) builds
#     the module against that httpd's headers (build.rs names that apxs);
#   - `APXS=PREFIX/bin/apxs scripts/install` puts it into PREFIX/modules,
#     its LoadModule into conf/extra/httpd-gzip_disk_ng.conf, included by
#     conf/httpd.conf, passes `httpd -t` and names `apachectl restart`;
#   - that httpd, started by its apachectl on a free loopback port, answers
#     docs/debian.md's curl checks (br for a browser, the gzip sibling
#     decoding to the original, a .gz alone decoded for a client that
#     accepts none), with no Debian package of the module installed;
#   - tests/apache_integration.rs runs against that server binary and its
#     modules (GDN_HTTPD, GDN_HTTPD_MODULES) with the module built for it.
# The installed httpd is cached as a tarball (test_cache in scripts/lib.sh)
# per version; each run unpacks a fresh prefix and removes it.
#   tests/upstream-httpd.sh [--no-build]
source "$(dirname "$0")/../scripts/lib.sh"
ensure_packages
CACHE="$(test_cache)"
W="$(mktemp -d /var/tmp/gzip-disk-ng-upstream.XXXXXX)"
chmod 755 "$W"
trap 'rm -rf "$W"' EXIT
say() { echo "upstream httpd test: $*"; }
fail() {
    echo "upstream httpd test: FAILED: $*" >&2
    [ -f "$W/out" ] && tail -40 "$W/out" | sed 's/^/  | /' >&2
    exit 1
}
# The newest httpd 2.4 release whose pristine tarball Debian's apache2
# source package carries (bookworm's or trixie's Sources, sha256 checked
# against them), looked up again after a week.
MIRROR=http://deb.debian.org/debian
newest_orig() { ls "$CACHE"/apache2_2.4.*.orig.tar.gz 2>/dev/null | sort -V | tail -1; }
fetch_orig() {
    local suite sum size name
    for suite in bookworm trixie; do
        curl -sfS "$MIRROR/dists/$suite/main/source/Sources.xz" | xz -dc |
            awk '/^Package: / { p = ($2 == "apache2") } p && /^Checksums-Sha256:/ { c = 1; next }
                 p && c && /^ / { if ($3 ~ /^apache2_2\.4\.[0-9]+\.orig\.tar\.gz$/) print; next } { c = 0 }'
    done | sort -u -k3,3V -r >"$W/origs"
    while read -r sum size name; do
        curl -sf -o "$W/$name" "$MIRROR/pool/main/a/apache2/$name" || continue
        [ "$(sha256sum "$W/$name" | cut -d' ' -f1)" = "$sum" ] || fail "$name: its sha256 is not the one Sources names"
        mv "$W/$name" "$CACHE/$name"
        return 0
    done <"$W/origs"
    cp "$W/origs" "$W/out"
    fail "no apache2 orig tarball could be downloaded from $MIRROR"
}
# A prefix of this run, the same path each run (httpd's paths are built
# in), made fresh from the cache.
exec 9>"$CACHE/httpd.lock"
flock 9
if [ -z "$(newest_orig)" ] || [ -n "$(find "$(newest_orig)" -mtime +6)" ]; then
    fetch_orig
    touch "$(newest_orig)"
fi
ORIG="$(basename "$(newest_orig)")"
V="${ORIG#apache2_}" V="${V%.orig.tar.gz}"
PREFIX="/var/tmp/gzip-disk-ng-httpd-$V-$(id -u)"
TARBALL="$CACHE/httpd-$V-$(echo "$PREFIX" | md5sum | cut -c1-8).tar"
CONFIGURE=(--prefix="$PREFIX" --with-apr=/usr/bin/apr-1-config --with-apr-util=/usr/bin/apu-1-config
    --enable-mpms-shared=all --enable-mods-shared=most --enable-http2 --enable-ssl --enable-brotli)

stop_httpd() {
    local pid
    pid="$(cat "$PREFIX/logs/httpd.pid" 2>/dev/null || true)"
    if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    fi
}
cleanup() {
    stop_httpd
    rm -rf "$PREFIX" "$W"
}
trap cleanup EXIT
[ ! -e "$PREFIX" ] || rm -rf "$PREFIX"

# httpd from its release source, once per version and prefix.
if [ ! -f "$TARBALL" ]; then
    say "building httpd $V from $ORIG (cached in $CACHE)"
    tar -C "$W" -xzf "$CACHE/$ORIG"
    (cd "$W/httpd-$V" && ./configure "${CONFIGURE[@]}" && make -j"$(nproc)" && make install) >"$W/out" 2>&1 ||
        fail "building httpd $V"
    for m in mpm_event http2 ssl brotli deflate; do
        [ -f "$PREFIX/modules/mod_$m.so" ] || { : >"$W/out"; fail "httpd $V built without mod_$m"; }
    done
    tar -C "$PREFIX" -cf "$TARBALL.new" . && mv "$TARBALL.new" "$TARBALL"
    rm -rf "$PREFIX" "$W/httpd-$V"
fi
mkdir -p "$PREFIX"
tar -C "$PREFIX" -xf "$TARBALL" || fail "unpacking $TARBALL"
APXS="$PREFIX/bin/apxs"
[ "$("$APXS" -q LIBEXECDIR)" = "$PREFIX/modules" ] || fail "apxs -q LIBEXECDIR: $("$APXS" -q LIBEXECDIR)"

# The module built against that httpd's headers: build.rs must have used
# the apxs named (it re-runs on it).
[ "${1:-}" = --no-build ] || build
TARGET="$ROOT/target/httpd-$V"
(cd "$ROOT" && APXS="$APXS" CARGO_TARGET_DIR="$TARGET" cargo build --release --locked -p mod_gzip_disk_ng) >"$W/out" 2>&1 ||
    fail "APXS=$APXS cargo build"
grep -qsxF "cargo:rerun-if-changed=$APXS" "$TARGET"/release/build/gdn-httpd-*/output ||
    { : >"$W/out"; fail "build.rs did not use $APXS"; }
SO="$TARGET/release/libmod_gzip_disk_ng.so"

# scripts/install into that httpd; the tool into a folder of this run.
PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
sed -i "s/^Listen .*/Listen 127.0.0.1:$PORT/; s/^#ServerName .*/ServerName localhost/" "$PREFIX/conf/httpd.conf"
APXS="$APXS" GZIP_DISK_NG_MODULE="$SO" PREFIX="$W/local" "$ROOT/scripts/install" --no-build >"$W/out" 2>&1 ||
    fail "APXS=$APXS scripts/install"
grep -q "installed $PREFIX/modules/mod_gzip_disk_ng.so; loaded at the next restart: $PREFIX/bin/apachectl restart" "$W/out" ||
    fail "scripts/install did not name the module and the restart"
grep -q "Syntax OK" "$W/out" || fail "scripts/install's httpd -t"
grep -qxF "Include $PREFIX/conf/extra/httpd-gzip_disk_ng.conf" "$PREFIX/conf/httpd.conf" || fail "no Include in httpd.conf"
grep -qxF "LoadModule gzip_disk_ng_module $PREFIX/modules/mod_gzip_disk_ng.so" "$PREFIX/conf/extra/httpd-gzip_disk_ng.conf" ||
    fail "no LoadModule in conf/extra/httpd-gzip_disk_ng.conf"
[ -x "$W/local/bin/gzip-disk-ng" ] || fail "the tool is not in PREFIX/bin"
# Installing again changes nothing in httpd.conf.
APXS="$APXS" GZIP_DISK_NG_MODULE="$SO" PREFIX="$W/local" "$ROOT/scripts/install" --no-build >"$W/out" 2>&1 ||
    fail "scripts/install a second time"
[ "$(grep -c 'httpd-gzip_disk_ng.conf' "$PREFIX/conf/httpd.conf")" = 1 ] || fail "a second install added another Include"

# The curl checks, with the server's own htdocs handed to the module.
TRY="$PREFIX/htdocs/gzip-disk-ng-try"
mkdir "$TRY"
cp /usr/share/common-licenses/GPL-3 "$TRY/gpl.txt"
"$W/local/bin/gzip-disk-ng" compress "$TRY" >"$W/out" 2>&1 || fail "gzip-disk-ng compress"
cp "$TRY/gpl.txt.gz" "$TRY/only.txt.gz"
chmod -R a+rX "$TRY"
printf '<Directory "%s">\n    SetHandler gzip-disk-ng\n</Directory>\n' "$TRY" >>"$PREFIX/conf/extra/httpd-gzip_disk_ng.conf"
"$PREFIX/bin/apachectl" start >"$W/out" 2>&1 || fail "apachectl start"
apache_wait "$PORT" 20 || { cp "$PREFIX/logs/error_log" "$W/out"; fail "httpd did not answer"; }
URL="http://localhost:$PORT/gzip-disk-ng-try"
curl -sI -H 'Accept-Encoding: gzip, deflate, br, zstd' "$URL/gpl.txt" >"$W/out" 2>&1 || fail "curl -sI"
grep -qiE '^Content-Encoding: (br|zstd)' "$W/out" && grep -qi '^Vary: Accept-Encoding' "$W/out" &&
    grep -qi '^Mod-Gzip-Disk-Ng: :-)' "$W/out" || fail "a browser's request"
curl -sI -H 'Accept-Encoding: gzip' "$URL/gpl.txt" >"$W/out" 2>&1 || fail "curl -sI for gzip"
grep -qi '^Content-Encoding: gzip' "$W/out" && grep -qi '^Mod-Gzip-Disk-Ng: :-)' "$W/out" || fail "a gzip client's request"
curl -s -H 'Accept-Encoding: gzip' "$URL/gpl.txt" | gunzip | cmp - /usr/share/common-licenses/GPL-3 >"$W/out" 2>&1 ||
    fail "the gzip sibling does not decode to the original"
curl -s -D "$W/h" -o "$W/b" "$URL/only.txt" && cp "$W/h" "$W/out" || fail "curl for a .gz alone"
grep -qi '^HTTP/1.1 200' "$W/out" && grep -qi '^Mod-Gzip-Disk-Ng: :-(' "$W/out" && ! grep -qi '^Content-Encoding' "$W/out" &&
    cmp -s "$W/b" /usr/share/common-licenses/GPL-3 || fail "a .gz alone, decoded for a client accepting none"
grep -q "Apache/$V " <(curl -sI "$URL/gpl.txt") || { curl -sI "$URL/gpl.txt" >"$W/out"; fail "the server is not httpd $V"; }
"$PREFIX/bin/apachectl" stop >/dev/null 2>&1 || true
stop_httpd

# The integration tests against that server and the module built for it.
say "tests/apache_integration.rs against $PREFIX/bin/httpd"
(cd "$ROOT" && GDN_HTTPD="$PREFIX/bin/httpd" GDN_HTTPD_MODULES="$PREFIX/modules" GZIP_DISK_NG_MODULE="$SO" \
    cargo test --release --locked --test apache_integration -- --test-threads="${TEST_THREADS:-2}") >"$W/out" 2>&1 ||
    fail "tests/apache_integration.rs against httpd $V"
grep -E '^test result: ok\. [1-9]' "$W/out" >"$W/result" || fail "no integration test ran"
say "passed (httpd $V from $ORIG in $PREFIX: APXS cargo build, scripts/install, the curl checks, apache_integration: $(cut -d';' -f1 "$W/result"))"
