#!/usr/bin/env bash
# What the shared counters and the log notes cost a request: instructions
# of Apache -X per whole request under callgrind, the module as built
# normally against the same source built with the bench-knobs feature and
# run with GZIP_DISK_NG_NO_COUNTERS set (counters::counting() false), in one
# run on the same pages.
#
#   bench/counters_cost.sh
#
# The budget: with counters at most 1 % more instructions per whole request
# (RATIO_MAX, default 1.01) on the precompressed and decompress paths. Each
# case counts as bench/callgrind.sh --whole does: Apache serves FEW (50)
# then MANY (1050) requests, each on a new connection, with an access log;
# (Ir(MANY) - Ir(FEW)) / (MANY - FEW) is one whole request. The two builds
# run one after the other for each case. MANY is larger than --whole's 250:
# what the event MPM's thread hand-offs cost varies from run to run, and
# over 200 requests that put the precompressed difference (1 % of its
# about 52,000 instructions is some 520) anywhere from -80 to +360 per
# request; over 1,000 it came out at +590 to +850 in four cases, against
# some 620 that callgrind_annotate finds in the counting code itself.
# Cases on each of PAGES: the module precompressed (gzip), decompressing
# from a .gz and from a .zst sibling.
# Exits 1 when a case is over the budget.
source "$(dirname "$0")/../scripts/lib.sh"
ensure_packages apache2-doc valgrind
build
# The same source with its bench knobs, in a target directory of its own so
# that neither build undoes the other.
(cd "$ROOT" && CARGO_TARGET_DIR="$ROOT/target/bench-knobs" \
    cargo build --release --locked -p mod_gzip_disk_ng --lib --features bench-knobs)
MANUAL=/usr/share/doc/apache2-doc/manual/en/mod
FEW="${FEW:-50}"
MANY="${MANY:-1050}"
PAGES="${PAGES:-$MANUAL/mod_deflate.html $MANUAL/core.html}"
RATIO_MAX="${RATIO_MAX:-1.01}"
WORK="$(mktemp -d /tmp/gzip-disk-ng-counters.XXXXXX)"
chmod 755 "$WORK"
trap 'apache_stop "$WORK"; sleep 1; rm -rf "$WORK"' EXIT
cp "$ROOT/target/release/libmod_gzip_disk_ng.so" "$WORK/with-counters.so"
cp "$ROOT/target/bench-knobs/release/libmod_gzip_disk_ng.so" "$WORK/without-counters.so"
D="$WORK/docs"
for p in $PAGES; do
    bench_case "$D" mod "$p" "" .gz
    bench_case "$D" modonlygz "$p" .gz
    bench_case "$D" modonlyzst "$p" .zst
done
chmod -R a+rX "$WORK"
# Apache drops privileges even in -X mode: callgrind writes as that user.
mkdir -m 1777 "$WORK/out"
PORT="${PORT:-18491}"
for b in with without; do
    {
        MODULE_SO="$WORK/$b-counters.so" apache_conf_head "$WORK" "$PORT" event
        echo "LogFormat \"%h %l %u %t \\\"%r\\\" %>s %O \\\"%{Referer}i\\\" \\\"%{User-Agent}i\\\"\" combined"
        echo "CustomLog $WORK/access.log combined"
        bench_conf_cases "$D"
    } >"$WORK/httpd-$b.conf"
done

source "$(dirname "$0")/callgrind_lib.sh"

over=0
# One case, both builds: prints its row of the table.
#   compare LABEL PATH ACCEPT-ENCODING WANT
compare() {
    local label="$1" with without ratio verdict=within
    shift
    with=$(CONF="$WORK/httpd-with.conf" whole "$@") || exit 1
    without=$(GZIP_DISK_NG_NO_COUNTERS=1 CONF="$WORK/httpd-without.conf" whole "$@") || exit 1
    ratio=$(echo "$with/$without" | bc -l)
    if [ "$(echo "$ratio > $RATIO_MAX" | bc -l)" -eq 1 ]; then
        verdict=OVER
        over=1
    fi
    printf '%-30s %12d %12d %8.4f  %s\n' "$label" "$with" "$without" "$ratio" "$verdict"
}

echo "callgrind, instructions of Apache -X per whole request: (Ir($MANY) - Ir($FEW)) / $((MANY - FEW)), a new connection each"
echo "ratio = with counters / without; budget $RATIO_MAX"
for p in $PAGES; do
    n="$(basename "$p")"
    echo
    echo "$n ($(stat -c %s "$p") bytes, .gz $(stat -c %s "$D/mod/$n.gz") bytes)"
    printf '%-30s %12s %12s %8s\n' case "with" without ratio
    compare "precompressed gzip" "/mod/$n" gzip gzip
    compare "decompress from .gz" "/modonlygz/$n" "" ""
    compare "decompress from .zst" "/modonlyzst/$n" "" ""
done
echo
[ "$over" -eq 0 ] && echo "all cases within $RATIO_MAX" || echo "over budget ($RATIO_MAX): see OVER above"
exit "$over"
