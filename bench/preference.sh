#!/usr/bin/env bash
# The default preference, before and after: what a browser receives over
# Debian's Apache manual, and what a request costs.
#
#   bench/preference.sh     BEFORE=<git ref> (default be5c16c, the last
#                           commit sending zstd first) is built into
#                           target/before; BEFORE_SO=<path> uses that
#                           build instead
#
# The manual (apache2-doc, symlinks resolved) is published with
# `gzip-disk-ng compress` at its defaults; then every text file of it
# (html, css, js, svg, dtd, ...) is fetched once through a real Apache
# with the module, with a browser's Accept-Encoding ("gzip, deflate, br,
# zstd"), by each build: the body bytes received, and how many responses
# went out in each coding. Then, under callgrind, the instructions of
# Apache -X per whole request (as bench/callgrind.sh --whole counts them:
# (Ir(MANY) - Ir(FEW)) / (MANY - FEW), a new connection each, an access
# log) on PAGES, with the browser's header and with "gzip" alone.
source "$(dirname "$0")/../scripts/lib.sh"
ensure_packages apache2-doc valgrind
build
MANUAL=/usr/share/doc/apache2-doc/manual
BROWSER="gzip, deflate, br, zstd"
FEW="${FEW:-50}"
MANY="${MANY:-250}"
PAGES="${PAGES:-en/mod/core.html}"
TEXT='html|css|js|svg|dtd|ent|sty|properties|md|txt|xml|json'
WORK="$(mktemp -d /tmp/gzip-disk-ng-pref.XXXXXX)"
chmod 755 "$WORK"
trap 'apache_stop "$WORK"; sleep 1; rm -rf "$WORK"' EXIT

# The build before: a ref's source built into a target directory of its own.
if [ -z "${BEFORE_SO:-}" ]; then
    BEFORE="${BEFORE:-be5c16c}"
    mkdir "$WORK/before-src"
    git -C "$ROOT" archive "$BEFORE" | tar -x -C "$WORK/before-src"
    (cd "$WORK/before-src" && CARGO_TARGET_DIR="$ROOT/target/before" cargo build --release --locked --lib)
    BEFORE_SO="$ROOT/target/before/release/libmod_gzip_disk_ng.so"
fi
cp "$BEFORE_SO" "$WORK/before.so"
cp "$ROOT/target/release/libmod_gzip_disk_ng.so" "$WORK/after.so"

D="$WORK/docs"
cp -rL "$MANUAL" "$D"
"$ROOT/target/release/gzip-disk-ng" compress -q "$D" >/dev/null
chmod -R a+rX "$WORK"
mkdir -m 1777 "$WORK/out"
PORT="${PORT:-18495}"

# The configuration with build B (before, after): the whole manual
# through the module, with an access log.
conf() { # build
    MODULE_SO="$WORK/$1.so" apache_conf_head "$WORK" "$PORT" event
    echo "LogFormat \"%h %l %u %t \\\"%r\\\" %>s %O\" common"
    echo "CustomLog $WORK/access.log common"
    printf 'DocumentRoot %s\n<Directory %s>\n    Require all granted\n    SetHandler gzip-disk-ng\n</Directory>\n' "$D" "$D"
}
conf before >"$WORK/httpd-before.conf"
conf after >"$WORK/httpd-after.conf"

# The text files, as URLs for curl's config file.
(cd "$D" && find . -type f | grep -E "\.($TEXT)\$" | sort) >"$WORK/files"
sed "s|^\./|url = \"http://127.0.0.1:$PORT/|; s|\$|\"\noutput = \"/dev/null\"|" "$WORK/files" >"$WORK/urls"

# Fetches every text file once with build B; prints bytes and codings.
crawl() { # build -> "bytes zstd br gzip identity"
    /usr/sbin/apache2 -d "$WORK" -f "$WORK/httpd-$1.conf" -k start
    apache_wait "$PORT"
    curl -s -H "Accept-Encoding: $BROWSER" -K "$WORK/urls" \
        -w '%{http_code} %{size_download} %header{content-encoding}\n' >"$WORK/crawl-$1"
    apache_stop "$WORK"
    sleep 1
    awk '$1 != 200 { bad++ } { bytes += $2; n[$3 == "" ? "identity" : $3]++ }
         END { if (bad) { print "crawl: " bad " responses not 200" > "/dev/stderr"; exit 1 }
               printf "%d %d %d %d %d\n", bytes, n["zstd"], n["br"], n["gzip"], n["identity"] }' \
        "$WORK/crawl-$1"
}

# The siblings' total per suffix, over the files crawled.
siblings_total() { # suffix
    local total=0 f
    while read -r f; do
        [ -f "$D/$f$1" ] && total=$((total + $(stat -c %s "$D/$f$1")))
    done <"$WORK/files"
    echo "$total"
}

read -r bb bz bbr bg bi <<<"$(crawl before)"
read -r ab az abr ag ai <<<"$(crawl after)"
echo "Apache manual (apache2-doc), published with 'gzip-disk-ng compress' at its defaults"
echo "$(wc -l <"$WORK/files") text files fetched once each with Accept-Encoding: $BROWSER"
echo "siblings of those files: .zst $(siblings_total .zst) bytes, .br $(siblings_total .br) bytes, .gz $(siblings_total .gz) bytes"
printf '%-8s %12s %6s %6s %6s %9s\n' build "body bytes" zstd br gzip identity
printf '%-8s %12d %6d %6d %6d %9d\n' before "$bb" "$bz" "$bbr" "$bg" "$bi"
printf '%-8s %12d %6d %6d %6d %9d\n' after "$ab" "$az" "$abr" "$ag" "$ai"
printf 'after/before: %.4f (%.1f %% fewer bytes)\n' "$(echo "$ab/$bb" | bc -l)" \
    "$(echo "100 - 100*$ab/$bb" | bc -l)"

source "$(dirname "$0")/callgrind_lib.sh"

# The coding the new default sends for FILE: its smallest sibling, ties
# by decoding speed (zstd, br, gzip).
smallest() { # file -> coding
    local z b g
    z=$(stat -c %s "$1.zst") b=$(stat -c %s "$1.br") g=$(stat -c %s "$1.gz")
    if [ "$z" -le "$b" ] && [ "$z" -le "$g" ]; then echo zstd
    elif [ "$b" -le "$g" ]; then echo br
    else echo gzip; fi
}

echo
echo "callgrind, instructions of Apache -X per whole request: (Ir($MANY) - Ir($FEW)) / $((MANY - FEW)), a new connection each"
for p in $PAGES; do
    echo
    echo "$p ($(stat -c %s "$D/$p") bytes; .zst $(stat -c %s "$D/$p.zst"), .br $(stat -c %s "$D/$p.br"), .gz $(stat -c %s "$D/$p.gz"))"
    printf '%-34s %12s %12s %8s\n' case before after ratio
    for ae in "$BROWSER" gzip; do
        if [ "$ae" = gzip ]; then want=(gzip gzip); else want=(zstd "$(smallest "$D/$p")"); fi
        before=$(CONF="$WORK/httpd-before.conf" whole "/$p" "$ae" "${want[0]}") || exit 1
        after=$(CONF="$WORK/httpd-after.conf" whole "/$p" "$ae" "${want[1]}") || exit 1
        printf '%-34s %12d %12d %8.4f  (%s -> %s)\n' "\"$ae\"" "$before" "$after" \
            "$(echo "$after/$before" | bc -l)" "${want[0]}" "${want[1]}"
    done
done
