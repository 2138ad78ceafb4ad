#!/usr/bin/env bash
# Deterministic cost under callgrind (Apache in -X mode), in two modes.
#
#   bench/callgrind.sh           instructions inside ap_process_async_request
#                                per steady request on PAGE (default core.html)
#   bench/callgrind.sh --whole   instructions of the whole process per request
#                                on each of PAGES
#
# The default mode compares the module's precompressed path with core's
# handler serving the same .gz bytes, and the decompress path with
# mod_deflate's INFLATE: N steady requests each, the first request after
# start-up not counted; it leaves out the connection, reading and parsing the
# request, and the logging.
#
# --whole counts everything: Apache serves FEW (50) then, in a second run,
# MANY (250) requests, each on a new connection (curl sends
# "Connection: close"), with an access log; (Ir(MANY) - Ir(FEW)) / (MANY -
# FEW) is one whole request, start-up and shutdown cancelling out. Cases:
# core serving the .gz in an Apache without the module (the same
# configuration less the module's LoadModule and directives, as an
# outside harness compares) and with it loaded, the module precompressed (gzip), the module
# decompressing from a .gz and from a .zst sibling, and INFLATE.
#
# Both modes load mod_filter and mod_deflate with Debian's deflate.conf
# (AddOutputFilterByType DEFLATE for text/html and the like), as every
# Debian install has them; bench/budget.sh measures Debian's whole
# configuration.
source "$(dirname "$0")/../scripts/lib.sh"
ensure_packages apache2-doc valgrind
build
MANUAL=/usr/share/doc/apache2-doc/manual/en/mod
WHOLE=""
[ "${1:-}" = "--whole" ] && WHOLE=1
N="${N:-200}"
FEW="${FEW:-50}"
MANY="${MANY:-250}"
PAGE="${PAGE:-$MANUAL/core.html}"
PAGES="${PAGES:-$MANUAL/mod_deflate.html $MANUAL/core.html}"
WORK="$(mktemp -d /tmp/gzip-disk-ng-cg.XXXXXX)"
chmod 755 "$WORK"
trap 'apache_stop "$WORK"; sleep 1; rm -rf "$WORK"' EXIT
D="$WORK/docs"
for p in $([ -n "$WHOLE" ] && echo "$PAGES" || echo "$PAGE"); do
    bench_case "$D" mod "$p" "" .gz
    for c in modjit modfiles modcheck; do bench_case "$D" "$c" "$p" "" .gz; done
    for c in modonlygz core inflate; do bench_case "$D" "$c" "$p" .gz; done
    bench_case "$D" modonlyzst "$p" .zst
    bench_delta "$D" moddelta "$p"
done
chmod -R a+rX "$WORK"
# Apache drops privileges even in -X mode: callgrind writes as that user.
mkdir -m 1777 "$WORK/out"
PORT="${PORT:-18490}"
{
    apache_conf_head "$WORK" "$PORT" event filter deflate
    echo "Include /etc/apache2/mods-available/deflate.conf"
    echo "LogFormat \"%h %l %u %t \\\"%r\\\" %>s %O \\\"%{Referer}i\\\" \\\"%{User-Agent}i\\\"\" combined"
    [ -n "$WHOLE" ] && echo "CustomLog $WORK/access.log combined"
    bench_conf_cases "$D"
} >"$WORK/httpd.conf"

source "$(dirname "$0")/callgrind_lib.sh"

if [ -n "$WHOLE" ]; then
    conf_without_module "$WORK" "$WORK/httpd.conf" "$WORK/core.conf" || exit 1
    echo "callgrind, instructions of Apache -X per whole request: (Ir($MANY) - Ir($FEW)) / $((MANY - FEW)), a new connection each"
    for p in $PAGES; do
        n="$(basename "$p")"
        # Core sends the .gz as a file of its own type, without Content-Encoding.
        core=$(CONF="$WORK/core.conf" whole "/core/$n.gz" gzip "")
        loaded=$(whole "/core/$n.gz" gzip "")
        mod=$(whole "/mod/$n" gzip gzip)
        browser=$(whole "/mod/$n" "gzip, deflate, br, zstd" gzip)
        infl=$(whole "/inflate/$n.gz" "" "")
        dgz=$(whole "/modonlygz/$n" "" "")
        dzst=$(whole "/modonlyzst/$n" "" "")
        delta=$(EXTRA_HEADER="Available-Dictionary: $(cat "$D/moddelta/$n.announce")" \
            whole "/moddelta/$n" "gzip, deflate, br, zstd, dcz" dcz)
        echo
        echo "$n ($(stat -c %s "$p") bytes, .gz $(stat -c %s "$D/core/$n.gz") bytes)"
        printf '%-40s %12s %8s\n' case instr/req ratio
        printf '%-40s %12d %8s\n' "core handler, same .gz bytes" "$core" 1.00
        printf '%-40s %12d %8.3f  (this/core)\n' "the same, the module loaded" "$loaded" "$(echo "$loaded/$core" | bc -l)"
        printf '%-40s %12d %8.3f  (this/core)\n' "module precompressed gzip" "$mod" "$(echo "$mod/$core" | bc -l)"
        printf '%-40s %12d %8.3f  (this/core)\n' "the same, a browser's Accept-Encoding" "$browser" "$(echo "$browser/$core" | bc -l)"
        printf '%-40s %12d %8.3f  (this/precompressed)\n' "module dcz delta ($(stat -c %s "$D"/moddelta/"$n".*.dcz) bytes)" "$delta" "$(echo "$delta/$mod" | bc -l)"
        printf '%-40s %12s %8s\n' "mod_deflate INFLATE" "$infl" 1.00
        printf '%-40s %12d %8.3f  (inflate/this)\n' "module decompress from .gz" "$dgz" "$(echo "$infl/$dgz" | bc -l)"
        printf '%-40s %12d %8.3f  (inflate/this)\n' "module decompress from .zst" "$dzst" "$(echo "$infl/$dzst" | bc -l)"
    done
    exit 0
fi

n="$(basename "$PAGE")"
core=$(measure "/core/$n.gz" "gzip")
mod=$(measure "/mod/$n" "gzip")
jit=$(measure "/modjit/$n" "gzip")
files=$(measure "/modfiles/$n" "gzip")
check=$(measure "/modcheck/$n" "gzip")
infl=$(measure "/inflate/$n.gz" "")
dec=$(measure "/modonlygz/$n" "")
echo "callgrind, instructions per request inside ap_process_async_request, $N requests, $n ($(stat -c %s "$PAGE") bytes)"
printf '%-40s %12s %8s\n' case instr/req ratio
printf '%-40s %12d %8s\n' "core handler, same .gz bytes" "$core" 1.00
printf '%-40s %12d %8.3f  (core/this: speed vs core)\n' "module precompressed gzip" "$mod" "$(echo "$core/$mod" | bc -l)"
printf '%-40s %12d %8.3f  (plain/this)\n' "module gzip, <FilesMatch> for neither" "$files" "$(echo "$mod/$files" | bc -l)"
printf '%-40s %12d %8.3f  (plain/this)\n' "module gzip, <FilesMatch> for .gz" "$check" "$(echo "$mod/$check" | bc -l)"
printf '%-40s %12d %8.3f  (off/on)\n' "module gzip, GzipDiskNgJitter 32" "$jit" "$(echo "$mod/$jit" | bc -l)"
printf '%-40s %12d %8s\n' "mod_deflate INFLATE" "$infl" 1.00
printf '%-40s %12d %8.3f  (inflate/this)\n' "module decompress from .gz" "$dec" "$(echo "$infl/$dec" | bc -l)"
