#!/usr/bin/env bash
# On-demand compression's cost per whole request under callgrind, in one
# run (see bench/callgrind.sh --whole for the method): a cached gzip copy
# against the same bytes from a published .gz sibling; a miss (a cache the
# compressor cannot write, so every request misses and queues) against
# core serving the original to the same request; a sibling's decoded copy against core
# serving the original, and against decoding the sibling each time.
#
#   bench/ondemand_callgrind.sh
source "$(dirname "$0")/../scripts/lib.sh"
ensure_packages apache2-doc valgrind
build
MANUAL=/usr/share/doc/apache2-doc/manual/en/mod
FEW="${FEW:-50}"
MANY="${MANY:-250}"
PAGES="${PAGES:-$MANUAL/mod_deflate.html $MANUAL/core.html}"
WORK="$(mktemp -d /tmp/gzip-disk-ng-odcg.XXXXXX)"
chmod 755 "$WORK"
trap 'apache_stop "$WORK"; sleep 1; rm -rf "$WORK"' EXIT
D="$WORK/docs"
for p in $PAGES; do
    bench_case "$D" mod "$p" "" .gz
    bench_case "$D" core "$p" ""
    bench_case "$D" modcache "$p" ""
    bench_case "$D" modmiss "$p" ""
    for c in modcopy modonlygz; do bench_case "$D" "$c" "$p" .gz; done
done
mkdir -m 750 "$WORK/cache" "$WORK/blocked"
# A cache the compressor cannot write: its fan-out directories are files.
for i in $(seq 0 255); do printf 'x' >"$WORK/blocked/$(printf '%02x' "$i")"; done
# Writable by Apache's User only: the module refuses a cache others could
# plant copies in.
[ "$(id -u)" -eq 0 ] && chown -R nobody "$WORK/cache" "$WORK/blocked"
chmod -R a+rX "$WORK"
mkdir -m 1777 "$WORK/out"
PORT="${PORT:-18491}"
conf() { # cache root, log format -> an Apache configuration
    apache_conf_head "$WORK" "$PORT" event
    echo "LogFormat \"%U %{gzip-disk-ng}n\" note"
    # Measured with the combined log, as bench/callgrind.sh --whole is.
    echo "LogFormat \"%h %l %u %t \\\"%r\\\" %>s %O \\\"%{Referer}i\\\" \\\"%{User-Agent}i\\\"\" combined"
    echo "CustomLog $WORK/access.log $2"
    echo "GzipDiskNgCacheRoot $1"
    printf 'DocumentRoot %s\n<Directory %s>\n    Require all granted\n</Directory>\n' "$D" "$D"
    printf '<Directory %s>\n    SetHandler default-handler\n</Directory>\n' "$D/core"
    for c in mod modonlygz; do conf_handler "$D/$c"; done
    for c in modcache modmiss modcopy; do conf_handler "$D/$c" "GzipDiskNgOnDemand On"; done
}
conf "$WORK/cache" note >"$WORK/httpd-warm.conf"
conf "$WORK/cache" combined >"$WORK/httpd.conf"
conf "$WORK/blocked" combined >"$WORK/httpd-miss.conf"
source "$(dirname "$0")/callgrind_lib.sh"

# The copies made once, outside callgrind.
/usr/sbin/apache2 -d "$WORK" -f "$WORK/httpd-warm.conf" -k start
apache_wait "$PORT"
for p in $PAGES; do
    n="$(basename "$p")"
    for i in $(seq 600); do
        curl -s -o /dev/null -H "Accept-Encoding: gzip" "http://127.0.0.1:$PORT/modcache/$n"
        curl -s -o /dev/null "http://127.0.0.1:$PORT/modcopy/$n"
        grep -q "^/modcache/$n gzip cached" "$WORK/access.log" &&
            grep -q "^/modcopy/$n gzip decompressed cached" "$WORK/access.log" && break
        sleep 0.1
    done
done
apache_stop "$WORK"
sleep 2

echo "callgrind, instructions of Apache -X per whole request: (Ir($MANY) - Ir($FEW)) / $((MANY - FEW)), a new connection each"
for p in $PAGES; do
    n="$(basename "$p")"
    sib=$(whole "/mod/$n" gzip gzip)
    hit=$(whole "/modcache/$n" gzip gzip)
    core=$(whole "/core/$n" "" "")
    # Core asked as the miss is, with the same Accept-Encoding (which
    # Apache reads either way).
    coregz=$(whole "/core/$n" gzip "")
    miss=$(CONF="$WORK/httpd-miss.conf" whole "/modmiss/$n" gzip "")
    copy=$(whole "/modcopy/$n" "" "")
    dec=$(whole "/modonlygz/$n" "" "")
    echo
    echo "$n ($(stat -c %s "$p") bytes)"
    printf '%-44s %12s %8s\n' case instr/req ratio
    printf '%-44s %12d %8s\n' "module precompressed gzip (.gz sibling)" "$sib" 1.00
    printf '%-44s %12d %8.3f  (this/sibling)\n' "module on-demand cached gzip" "$hit" "$(echo "$hit/$sib" | bc -l)"
    printf '%-44s %12d %8s\n' "core handler, the original, gzip asked" "$coregz" 1.00
    printf '%-44s %12d %8.3f  (this/core)\n' "module on-demand miss (queued)" "$miss" "$(echo "$miss/$coregz" | bc -l)"
    printf '%-44s %12d %8s\n' "core handler, the original" "$core" 1.00
    printf '%-44s %12d %8.3f  (this/core)\n' "module decoded copy of the .gz" "$copy" "$(echo "$copy/$core" | bc -l)"
    printf '%-44s %12d %8.3f  (this/core)\n' "module decompress from .gz (no copy)" "$dec" "$(echo "$dec/$core" | bc -l)"
done
