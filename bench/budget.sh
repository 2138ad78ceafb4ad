#!/usr/bin/env bash
# The request path's budget, checked by scripts/test: instructions per
# steady request under callgrind (deterministic, unlike timings), on
# Debian's own configuration (its enabled modules, mod_deflate and
# mod_filter among them, and the combined access log), each path against
# core's handler in the same run, and heap calls per request. Core is
# measured in an Apache without the module (the same configuration less
# the module's LoadModule and directives), so a cost the module adds to
# every request (its fixups, its filters) counts against the module and
# never lowers a ratio by raising the baseline; core's absolute count is
# checked too, and core's request with the module loaded is a row of its
# own (core-loaded: what the module costs requests it does not serve).
#
#   bench/budget.sh            measure, print, and fail when a ratio is over
#                              the budget in bench/budget.txt or a path
#                              calls the heap more often than it allows
#   bench/budget.sh --no-build as above, using the module already built
#
# Paths (mod_deflate.html, 32 KB, N steady requests each on one
# connection, the first not counted; the cheapest request's instructions
# inside ap_process_async_request):
#   core-loaded core sending the .gz, module loaded     against core sending the .gz without it
#   gzip      precompressed, Accept-Encoding: gzip      against core sending the .gz
#   browser   precompressed, gzip, deflate, br, zstd    against core sending the .gz
#   decoded   decoded from the .gz for an identity client against core sending the original
#   cached    an on-demand cached gzip copy             against core sending the .gz
#   filtered  the original core sends, through GZIP_DISK_NG, taken over by
#             the on-demand cached zstd copy, for a client taking
#             zstd                                        against core sending the .gz
#   delta     a published dcz delta                     against core sending the .gz
#   coded     the original core sends, coded in zstd by GZIP_DISK_NG as it
#             passes (no on-demand copy): what a dynamic response costs
#             besides its handler               against core sending the .gz
# A change that costs more raises bench/budget.txt in a commit of its own
# that says why (bench/budget-guard.sh, run by scripts/test, fails on a
# commit that raises a limit and changes code).
source "$(dirname "$0")/../scripts/lib.sh"
ensure_packages apache2-doc valgrind
[ "${1:-}" = "--no-build" ] || build
MANUAL=/usr/share/doc/apache2-doc/manual/en/mod
PAGE="${PAGE:-$MANUAL/mod_deflate.html}"
N="${N:-20}"
BUDGET="$ROOT/bench/budget.txt"
WORK="$(mktemp -d /tmp/gzip-disk-ng-budget.XXXXXX)"
chmod 755 "$WORK"
# BUDGET_KEEP=1 keeps the dumps (WORK/out, listed in WORK/out/index) for
# bench/steps.sh.
trap 'apache_stop "$WORK"; sleep 1; [ -n "${BUDGET_KEEP:-}" ] || rm -rf "$WORK"' EXIT
[ -z "${BUDGET_KEEP:-}" ] || echo "budget: dumps kept in $WORK/out" >&2
D="$WORK/docs"
n="$(basename "$PAGE")"
bench_case "$D" core "$PAGE" "" .gz
bench_case "$D" mod "$PAGE" "" .gz .br .zst
bench_case "$D" modonlygz "$PAGE" .gz
bench_case "$D" modcache "$PAGE" ""
bench_case "$D" filtcache "$PAGE" ""
bench_case "$D" filtcoded "$PAGE" ""
bench_delta "$D" moddelta "$PAGE"
mkdir -m 750 "$WORK/cache"
[ "$(id -u)" -eq 0 ] && chown nobody "$WORK/cache"
chmod -R a+rX "$WORK/docs"
mkdir -m 1777 "$WORK/out"
PORT="${PORT:-$((18500 + RANDOM % 500))}"
debian_site_conf "$WORK" "$PORT" "$D" "GzipDiskNgCacheRoot $WORK/cache
<Directory $D/modcache>
    GzipDiskNgOnDemand On
</Directory>
<Directory $D/filtcache>
    GzipDiskNgOnDemand On
    SetOutputFilter GZIP_DISK_NG
</Directory>
<Directory $D/filtcoded>
    SetOutputFilter GZIP_DISK_NG
</Directory>" >"$WORK/httpd.conf"
# The same configuration without the module.
conf_without_module "$WORK" "$WORK/httpd.conf" "$WORK/core.conf" || exit 1
source "$(dirname "$0")/callgrind_lib.sh"

# The on-demand copies (the handler's and the filter's) made once,
# outside callgrind.
/usr/sbin/apache2 -d "$WORK" -f "$WORK/httpd.conf" -k start
apache_wait "$PORT"
copies() { find "$WORK/cache" -type f -size +0 \( -name '*.gz' -o -name '*.zst' \) 2>/dev/null | wc -l; }
for _ in $(seq 300); do
    curl -s -o /dev/null -H "Accept-Encoding: gzip" "http://127.0.0.1:$PORT/modcache/$n"
    curl -s -o /dev/null -H "Accept-Encoding: zstd" "http://127.0.0.1:$PORT/filtcache/$n"
    [ "$(copies)" -ge 2 ] && break
    sleep 0.1
done
apache_stop "$WORK"
sleep 2
[ "$(copies)" -ge 2 ] || { echo "budget: no cached copies made" >&2; exit 1; }

# Instructions and heap calls per steady request for PATH with
# Accept-Encoding AE (and the EXTRA_HEADER), checking every response is a
# 200 with Content-Encoding WANT ("-": any coding; "": none).
steady() { # path ae want -> "instructions heap-calls"
    local path="$1" ae="$2" want="$3" out="$WORK/out/cg.$RANDOM" got f counts="" heap n=0
    callgrind_apache "$out" --toggle-collect='ap_process_async_request' \
        --dump-before='ap_process_async_request'
    apache_wait "$PORT" 300
    local urls=()
    for _ in $(seq $((N + 1))); do urls+=("http://127.0.0.1:$PORT$path" -o /dev/null); done
    # At most 5 requests a second: when the next request is already in
    # the socket as Apache ends one (curl answering faster than Apache
    # under callgrind logs), ap_check_pipeline reads it and the request
    # costs about 500 instructions more, by the client's timing, not the
    # module's; paced, no request finds the next one waiting.
    got=$(curl -s --rate 5/s -H "Accept-Encoding: $ae" ${EXTRA_HEADER:+-H "$EXTRA_HEADER"} \
        -w '%{http_code} %header{content-encoding}\n' "${urls[@]}" | sort | uniq -c)
    callgrind_stop
    echo "$path|$ae|$out" >>"$WORK/out/index"
    local counted=()
    for f in "$out" "$out".*; do
        case "$f" in "$out".1 | "$out".2 | "$out".3) continue ;; esac
        # The final dump (the last request and the exit) is counted for
        # the heap calls, not for the instructions.
        [ "$f" = "$out" ] || counts+="$(awk '/^(summary|totals):/ { print $2; exit }' "$f") "
        counted+=("$f")
        n=$((n + 1))
    done
    [ "$n" -eq "$N" ] || { echo "budget: $n dumps for $N requests" >&2; exit 1; }
    local codes
    codes=$(echo "$got" | awk '{print $2}' | sort -u)
    if [ "$codes" != 200 ] || { [ "$want" = - ] && echo "$got" | awk '$3 == ""' | grep -q .; } ||
        { [ "$want" != - ] && [ "$(echo "$got" | awk '{print $3}' | sort -u)" != "$want" ]; }; then
        echo "budget: $path with '$ae': expected 200 '$want', got: $got" >&2
        exit 1
    fi
    heap=$(python3 "$ROOT/bench/malloc_calls.py" "${counted[@]}")
    # The cheapest request: the same request costs about 500 instructions
    # more when the second has changed since the last (Apache formats the
    # Date and the access log's time stamp again), and how many do depends
    # on how fast the machine runs callgrind: the mean and the median moved
    # by 1.5 % of core's request between runs, the least does not.
    echo "$(echo $counts | tr ' ' '\n' | sort -n | head -1) $((heap / N))"
}

started=$(date +%s)
read -r core _ < <(CONF="$WORK/core.conf" steady "/core/$n.gz" gzip "")
read -r core_plain _ < <(CONF="$WORK/core.conf" steady "/core/$n" "" "")
read -r loaded loaded_heap < <(steady "/core/$n.gz" gzip "")
read -r gzip gzip_heap < <(steady "/mod/$n" gzip gzip)
read -r browser browser_heap < <(steady "/mod/$n" "gzip, deflate, br, zstd" -)
read -r decoded decoded_heap < <(steady "/modonlygz/$n" "" "")
read -r cached cached_heap < <(steady "/modcache/$n" gzip gzip)
read -r filtered filtered_heap < <(steady "/filtcache/$n" zstd zstd)
read -r coded coded_heap < <(steady "/filtcoded/$n" zstd zstd)
read -r delta delta_heap < <(EXTRA_HEADER="Available-Dictionary: $(cat "$D/moddelta/$n.announce")" \
    steady "/moddelta/$n" "gzip, deflate, br, zstd, dcz" dcz)

echo "callgrind, Debian's configuration, $n, instructions per steady request inside ap_process_async_request ($N requests)"
printf '%-10s %12s %8s %8s %10s %8s\n' path instr/req ratio budget heap/req allowed
status=0
row() { # name instructions baseline heap
    local name="$1" ins="$2" base="$3" heap="$4" max allowed ratio
    read -r max allowed < <(awk -v n="$name" '$1 == n { print $2, $3 }' "$BUDGET") || true
    ratio=$(awk -v a="$ins" -v b="$base" 'BEGIN { printf "%.3f", a / b }')
    printf '%-10s %12d %8s %8s %10s %8s\n' "$name" "$ins" "$ratio" "$max" "$heap" "$allowed"
    if [ -z "$max" ] || awk -v r="$ratio" -v m="$max" 'BEGIN { exit !(r > m) }'; then
        echo "budget: $name costs ${ratio}x core, over its budget (${max:-none}) in bench/budget.txt" >&2
        status=1
    fi
    if [ -z "$allowed" ] || [ "$heap" -gt "$allowed" ]; then
        echo "budget: $name calls the heap $heap times per request, over ${allowed:-none}" >&2
        status=1
    fi
}
# Core's own count against the one recorded: a dearer configuration or
# Apache moves every ratio's baseline.
absolute() { # name instructions
    local name="$1" ins="$2" rec tol
    read -r rec tol < <(awk -v n="$1" '$1 == n { print $2, $3 }' "$BUDGET") || true
    printf '%-10s %12d %8s %8s\n' "$name" "$ins" 1.000 "${rec:-none}"
    if [ -z "$rec" ] || awk -v a="$ins" -v r="$rec" -v t="${tol%\%}" \
        'BEGIN { d = (a - r) / r * 100; exit !(d > t || d < -t) }'; then
        echo "budget: $name without the module costs $ins instructions, not ${rec:-none} (±${tol:-?}) as bench/budget.txt records" >&2
        status=1
    fi
}
absolute core "$core"
absolute core-plain "$core_plain"
row core-loaded "$loaded" "$core" "$loaded_heap"
row gzip "$gzip" "$core" "$gzip_heap"
row browser "$browser" "$core" "$browser_heap"
row decoded "$decoded" "$core_plain" "$decoded_heap"
row cached "$cached" "$core" "$cached_heap"
row filtered "$filtered" "$core" "$filtered_heap"
row delta "$delta" "$core" "$delta_heap"
row coded "$coded" "$core" "$coded_heap"
echo "budget check: $(($(date +%s) - started)) s of callgrind"
exit "$status"
