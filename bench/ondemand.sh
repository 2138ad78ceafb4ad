#!/usr/bin/env bash
# On-demand compression, measured on a real Apache (event MPM, one
# compressor worker unless WORKERS says otherwise):
#
# 1. For core.html, each coding alone: the time from the first request
#    (which queues the file) to the first response served from the cache.
# 2. A crawl of Debian's whole Apache manual (apache2-doc), every page
#    requested once with a browser's Accept-Encoding, then again until every
#    page comes from the cache in each coding: the time that took, the
#    compressor's CPU seconds and peak RSS, and the cache's bytes against
#    what `gzip-disk-ng compress` writes for the same tree.
#
#   bench/ondemand.sh
#   FIRST_ONLY=1 bench/ondemand.sh   part 1 only
source "$(dirname "$0")/../scripts/lib.sh"
ensure_packages apache2-doc
build
MANUAL=/usr/share/doc/apache2-doc/manual/en
WORKERS="${WORKERS:-1}"
WORK="$(mktemp -d /tmp/gzip-disk-ng-ondemand.XXXXXX)"
chmod 755 "$WORK"
trap 'apache_stop "$WORK"; sleep 1; rm -rf "$WORK"' EXIT
D="$WORK/docs"
mkdir -p "$D/first" "$WORK/cache"
for c in zstd br gzip; do cp "$MANUAL/mod/core.html" "$D/first/core-$c.html"; done
cp -r "$MANUAL" "$D/manual"
touch -d '-1 hour' "$D/first"/*
chmod -R a+rX "$WORK"
# Writable by Apache's User only: the module refuses a cache others could
# plant copies in.
chmod 750 "$WORK/cache"
[ "$(id -u)" -eq 0 ] && chown nobody "$WORK/cache"
PORT="${PORT:-18497}"
{
    apache_conf_head "$WORK" "$PORT" event
    echo "LogFormat \"%U %{gzip-disk-ng}n\" note"
    echo "CustomLog $WORK/access.log note"
    ondemand_site_conf "$WORK/cache" "$D" "$WORKERS"
} >"$WORK/httpd.conf"
/usr/sbin/apache2 -d "$WORK" -f "$WORK/httpd.conf" -k start
apache_wait "$PORT"
URL="http://127.0.0.1:$PORT"
compressor() { pgrep -P "$(cat "$WORK/httpd.pid")" -x gdn-compressor | head -1; }
coding_of() { # path accept-encoding -> the Content-Encoding served
    curl -s -o /dev/null -H "Accept-Encoding: $2" -w '%header{content-encoding}' "$URL$1"
}
now() { date +%s.%N; }

echo "date: $(date -u +%F); on-demand compression, $WORKERS compressor worker(s)"
echo
echo "core.html ($(stat -c %s "$MANUAL/mod/core.html") bytes): first request to first cached response"
for c in zstd br gzip; do
    t0=$(now)
    coding_of "/first/core-$c.html" "$c" >/dev/null
    until [ "$(coding_of "/first/core-$c.html" "$c")" = "$c" ]; do sleep 0.01; done
    printf '  %-5s %.2f s\n' "$c" "$(echo "$(now) - $t0" | bc -l)"
done

[ -n "${FIRST_ONLY:-}" ] && exit 0

cache_size() { find "$WORK/cache" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
first_bytes=$(cache_size)
PAGES=()
while IFS= read -r p; do PAGES+=("${p#"$D"}"); done < <(find "$D/manual" -name '*.html' | sort)
AE="gzip, deflate, br, zstd"
t0=$(now)
for p in "${PAGES[@]}"; do curl -s -o /dev/null -H "Accept-Encoding: $AE" "$URL$p"; done
left=("${PAGES[@]}")
rounds=0
while [ ${#left[@]} -gt 0 ]; do
    rounds=$((rounds + 1))
    next=()
    for p in "${left[@]}"; do
        for c in zstd br gzip; do
            # Served in the coding, or judged not worth compressing: the
            # original then comes without asking for a copy again.
            got=$(coding_of "$p" "$c")
            [ "$got" = "$c" ] && continue
            sleep 0.05
            tail -1 "$WORK/access.log" | grep -q 'queued$' || continue
            next+=("$p")
            break
        done
    done
    left=("${next[@]}")
    [ ${#left[@]} -eq 0 ] || sleep 1
    if [ "$rounds" -gt 600 ]; then echo "crawl: ${#left[@]} pages never cached" >&2; exit 1; fi
done
elapsed=$(echo "$(now) - $t0" | bc -l)
pid=$(compressor)
ticks=$(getconf CLK_TCK)
cpu=$(awk -v t="$ticks" '{ print ($14 + $15) / t }' "/proc/$pid/stat")
hwm=$(awk '/VmHWM/ { print $2 }' "/proc/$pid/status")
cache_bytes=$(($(cache_size) - first_bytes))
cp -r "$MANUAL" "$WORK/published"
"$ROOT/target/release/gzip-disk-ng" compress -q "$WORK/published" >/dev/null
pub_bytes=$(find "$WORK/published" -type f \( -name '*.html.gz' -o -name '*.html.br' -o -name '*.html.zst' \) -printf '%s\n' |
    awk '{ s += $1 } END { print s }')
echo
echo "crawl of the manual: ${#PAGES[@]} pages, each in zstd, br and gzip"
printf '  every page cached after %.1f s\n' "$elapsed"
printf '  compressor: %.1f CPU seconds, peak RSS %d kB\n' "$cpu" "$hwm"
printf '  cache %d bytes; gzip-disk-ng compress on the same pages %d bytes (%.4f)\n' \
    "$cache_bytes" "$pub_bytes" "$(echo "$cache_bytes / $pub_bytes" | bc -l)"

# The compressor's memory follows the largest file it compresses (brotli
# quality 11's window and match finder): one large page, the manual's
# pages one after another (about 6 MB), asked for in each coding.
big="$D/first/manual-all.html"
find "$MANUAL" -name '*.html' -print0 | sort -z | xargs -0 cat >"$big"
chmod a+r "$big"
t0=$(now)
for c in zstd br gzip; do
    for i in $(seq 1201); do
        [ "$(coding_of /first/manual-all.html "$c")" = "$c" ] && break
        [ "$i" -le 1200 ] || { echo "manual-all.html: no $c copy after 60 s" >&2; exit 1; }
        sleep 0.05
    done
done
echo
printf 'one %d-byte page: cached in all three codings after %.1f s, compressor peak RSS %d kB\n' \
    "$(stat -c %s "$big")" "$(echo "$(now) - $t0" | bc -l)" "$(awk '/VmHWM/ { print $2 }' "/proc/$(compressor)/status")"
