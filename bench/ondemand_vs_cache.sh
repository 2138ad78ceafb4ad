#!/usr/bin/env bash
# On-demand compression against what a site without a publish step runs
# today: mod_cache_disk (`CacheEnable disk`) in front of
# `AddOutputFilterByType BROTLI_COMPRESS;DEFLATE`, on the same server, the
# same pages and the same client (wrk, 8 connections, ROUNDS interleaved
# rounds of DURATION seconds; the median), with a browser's, a br client's
# (no zstd) and a gzip-only Accept-Encoding, and the browser again where
# the module prefers br (`GzipDiskNgEncodings br zstd gzip`: smallest
# bytes first; the default puts zstd first, which decodes fastest). Both
# are warmed first (the module's copies made, the cache filled). Also the
# bytes each sends per response.
#
#   bench/ondemand_vs_cache.sh
source "$(dirname "$0")/../scripts/lib.sh"
ensure_packages apache2-doc wrk
build
MANUAL=/usr/share/doc/apache2-doc/manual/en
PAGES="${PAGES:-$MANUAL/mod/core.html $MANUAL/urlmapping.html}"
DURATION="${DURATION:-3}"
ROUNDS="${ROUNDS:-5}"
WORK="$(mktemp -d /tmp/gzip-disk-ng-vscache.XXXXXX)"
chmod 755 "$WORK"
trap 'apache_stop "$WORK"; sleep 1; rm -rf "$WORK"' EXIT
D="$WORK/docs"
mkdir -p "$D/ondemand" "$D/ondemand-br" "$D/stock"
for p in $PAGES; do for d in ondemand ondemand-br stock; do cp "$p" "$D/$d/"; done; done
# A day old: mod_cache's heuristic keeps its copies fresh 2.4 hours.
touch -d '-1 day' "$D"/*/*
mkdir -m 777 "$WORK/cache" "$WORK/diskcache"
chmod -R a+rX "$D"
PORT="${PORT:-18493}"
{
    apache_conf_head "$WORK" "$PORT" event filter deflate brotli cache cache_disk
    cat <<CONF
StartServers 2
ServerLimit 2
ThreadsPerChild 32
MaxRequestWorkers 64
KeepAlive On
MaxKeepAliveRequests 0
EnableSendfile On
GzipDiskNgCacheRoot $WORK/cache
CacheRoot $WORK/diskcache
CacheEnable disk /stock/
CacheIgnoreNoLastMod On
DocumentRoot $D
# As Debian's apache2.conf: no .htaccess looked for. mod_cache_disk's
# quick handler answers before the directory walk that looks for them.
<Directory />
    AllowOverride None
</Directory>
<Directory $D>
    Require all granted
</Directory>
<Directory $D/ondemand>
    SetHandler gzip-disk-ng
    GzipDiskNgOnDemand On
</Directory>
<Directory $D/ondemand-br>
    SetHandler gzip-disk-ng
    GzipDiskNgOnDemand On
    GzipDiskNgEncodings br zstd gzip
</Directory>
<Directory $D/stock>
    AddOutputFilterByType BROTLI_COMPRESS;DEFLATE text/html
</Directory>
CONF
} >"$WORK/httpd.conf"
# PIN=1: Apache on CPU 0 and wrk (one thread) on CPU 1, so each request's
# cost to the server, not the client sharing its CPUs, sets the rate, as
# where clients are other machines.
SERVER_CPU=() CLIENT=(wrk -t2)
if [ "${PIN:-0}" = 1 ]; then SERVER_CPU=(taskset -c 0) CLIENT=(taskset -c 1 wrk -t1); fi
"${SERVER_CPU[@]}" /usr/sbin/apache2 -d "$WORK" -f "$WORK/httpd.conf" -k start
apache_wait "$PORT"
URL="http://127.0.0.1:$PORT"
BROWSER="gzip, deflate, br, zstd"

fetch() { # path accept-encoding -> "coding bytes"
    curl -s -o /dev/null -H "Accept-Encoding: $2" -w '%header{content-encoding} %{size_download}' "$URL$1"
}
for p in $PAGES; do
    n="$(basename "$p")"
    for ae in "$BROWSER" "gzip, deflate, br" gzip; do
        for d in ondemand ondemand-br; do
            for _ in $(seq 400); do
                [ "$(fetch "/$d/$n" "$ae" | cut -d' ' -f1)" != "" ] && break
                sleep 0.05
            done
        done
        for _ in 1 2 3; do fetch "/stock/$n" "$ae" >/dev/null; done
    done
done

rate() { # path accept-encoding -> requests per second
    "${CLIENT[@]}" -c8 -d"${DURATION}s" -H "Accept-Encoding: $2" "$URL$1" |
        awk '/^Requests\/sec/ { print $2 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "date: $(date -u +%F); ${CLIENT[*]} -c8, median of $ROUNDS interleaved rounds of ${DURATION} s${SERVER_CPU[*]:+, Apache under ${SERVER_CPU[*]}}"
printf '%-18s %-10s %12s %12s %7s %10s %10s %7s\n' page client "on-demand/s" "stock/s" ratio \
    "on-demand B" "stock B" "fewer"
for p in $PAGES; do
    n="$(basename "$p")"
    for client in browser br-only gzip browser-br; do
        dir=ondemand
        case "$client" in
        browser) ae="$BROWSER" ;;
        br-only) ae="gzip, deflate, br" ;;
        gzip) ae=gzip ;;
        browser-br) ae="$BROWSER" dir=ondemand-br ;;
        esac
        od=()
        st=()
        for _ in $(seq "$ROUNDS"); do
            od+=("$(rate "/$dir/$n" "$ae")")
            st+=("$(rate "/stock/$n" "$ae")")
        done
        a=$(printf '%s\n' "${od[@]}" | median)
        b=$(printf '%s\n' "${st[@]}" | median)
        read -r ca ba <<<"$(fetch "/$dir/$n" "$ae")"
        read -r cb bb <<<"$(fetch "/stock/$n" "$ae")"
        # The stock figures count only if mod_cache answered them.
        age=$(curl -s -o /dev/null -H "Accept-Encoding: $ae" -w '%header{age}' "$URL/stock/$n")
        [ -n "$age" ] || { echo "stock /stock/$n was not served from mod_cache" >&2; exit 1; }
        printf '%-18s %-10s %12.0f %12.0f %7.2f %7s %-3s %7s %-3s %6.1f%%\n' "$n" "$client" "$a" "$b" \
            "$(echo "$a / $b" | bc -l)" "$ba" "$ca" "$bb" "$cb" "$(echo "100 * (1 - $ba / $bb)" | bc -l)"
    done
done

# CALLGRIND=1: the instructions of steady requests (keep-alive) of each,
# Apache -X under callgrind (see bench/callgrind_lib.sh).
[ "${CALLGRIND:-0}" = 1 ] || exit 0
apache_stop "$WORK"
sleep 1
mkdir -m 1777 -p "$WORK/out"
source "$(dirname "$0")/callgrind_lib.sh"
N="${N:-200}"
echo
echo "callgrind, instructions per steady request (mean of $N, keep-alive)"
for p in $PAGES; do
    n="$(basename "$p")"
    for client in br-only gzip; do
        ae=gzip
        [ "$client" = br-only ] && ae="gzip, deflate, br"
        a=$(measure "/ondemand/$n" "$ae") || exit 1
        b=$(measure "/stock/$n" "$ae") || exit 1
        printf '%-18s %-10s on-demand %8d  stock %8d  ratio %.2f\n' "$n" "$client" "$a" "$b" \
            "$(echo "$a / $b" | bc -l)"
    done
done
