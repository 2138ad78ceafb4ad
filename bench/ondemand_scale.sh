#!/usr/bin/env bash
# On-demand compression of a large site from one pass of traffic, on a
# real Apache (event MPM, one compressor worker unless WORKERS says):
# N text pages (HTML, CSS, JS of 2 to 60 KB, about 17 KB on average), each
# requested once with a browser's Accept-Encoding; then the counters are
# polled until 95 % of the pages have their copy, and a second pass counts
# the pages served compressed. Prints the time from the first pass to 95 %
# compressed, the compressor's CPU per page, the cache's disk use (allocated
# blocks) against GzipDiskNgCacheMaxSize, and the compressor's RSS per
# cache entry.
#
#   bench/ondemand_scale.sh                 N=2000
#   N=100000 bench/ondemand_scale.sh        the large site (about 1.7 GB)
#   N=20000 MAX=64M bench/ondemand_scale.sh a limit the site exceeds
#
# Then, unless CALLGRIND=0, a hit's cost at that size: instructions of
# Apache -X under callgrind per whole request for one page's cached br
# copy, on the cache the run made (bench/callgrind_lib.sh's `whole`).
source "$(dirname "$0")/../scripts/lib.sh"
build
N="${N:-2000}"
MAX="${MAX:-1G}"
WORKERS="${WORKERS:-1}"
WORK="$(mktemp -d /tmp/gzip-disk-ng-scale.XXXXXX)"
chmod 755 "$WORK"
trap 'apache_stop "$WORK"; sleep 1; rm -rf "$WORK"' EXIT
D="$WORK/docs"
mkdir -p "$D" "$WORK/cache"
# The module as built now: a later build does not change what is measured.
cp "$MODULE_SO" "$WORK/mod_gzip_disk_ng.so"
MODULE_SO="$WORK/mod_gzip_disk_ng.so"
python3 - "$D" "$N" <<'EOF'
import os, random, sys
d, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(47)
words = ["".join(rng.choice("etaoinshrdlucmfwypvbgkqjxz") for _ in range(rng.randint(2, 9)))
         for _ in range(3000)]
for i in range(n):
    ext = ("html", "css", "js")[i % 3]
    size = min(60_000, max(2_000, int(rng.expovariate(1 / 15_000)) + 2_000))
    parts, total = [], 0
    while total < size:
        line = " ".join(rng.choice(words) for _ in range(12))
        line = {"html": f"<p class=\"c{i % 50}\">{line}</p>\n",
                "css": f".c{rng.randint(0, 999)} {{ margin: 0; content: \"{line}\" }}\n",
                "js": f"function f{rng.randint(0, 999)}() {{ return \"{line}\"; }}\n"}[ext]
        parts.append(line)
        total += len(line)
    sub = os.path.join(d, f"d{i % 100:02}")
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, f"p{i:06}.{ext}"), "w") as f:
        f.write("".join(parts)[:size])
EOF
find "$D" -type f -exec touch -d '-1 hour' {} +
chmod -R a+rX "$WORK"
chmod 750 "$WORK/cache"
[ "$(id -u)" -eq 0 ] && chown nobody "$WORK/cache"
PORT="${PORT:-18498}"
{
    apache_conf_head "$WORK" "$PORT" event
    echo "GzipDiskNgCacheMaxSize $MAX"
    printf '<Location /metrics>\n    SetHandler gzip-disk-ng-metrics\n</Location>\n'
    ondemand_site_conf "$WORK/cache" "$D" "$WORKERS"
} >"$WORK/httpd.conf"
/usr/sbin/apache2 -d "$WORK" -f "$WORK/httpd.conf" -k start
apache_wait "$PORT"
URL="http://127.0.0.1:$PORT"
compressor() { pgrep -P "$(cat "$WORK/httpd.pid")" -x gdn-compressor | head -1; }
metric() { curl -s "$URL/metrics" | awk -v m="$1" '$1 == m { print $2; exit }'; }
now() { date +%s.%N; }
# One pass over every page with a browser's Accept-Encoding, on keep-alive
# connections; prints how many came compressed.
pass() {
    python3 - "$D" "$PORT" <<'EOF'
import http.client, os, sys
d, port = sys.argv[1], int(sys.argv[2])
paths = sorted("/" + os.path.relpath(os.path.join(r, f), d) for r, _, fs in os.walk(d) for f in fs)
conn, coded = None, 0
for p in paths:
    for _ in range(2):
        try:
            conn = conn or http.client.HTTPConnection("127.0.0.1", port)
            conn.request("GET", p, headers={"Accept-Encoding": "gzip, deflate, br, zstd"})
            r = conn.getresponse()
            r.read()
            coded += r.getheader("Content-Encoding") is not None
            break
        except (http.client.HTTPException, OSError):
            conn = None
print(coded)
EOF
}

rss0=$(awk '/VmRSS/ { print $2 }' "/proc/$(compressor)/status")
bytes=$(du -sb "$D" | cut -f1)
echo "date: $(date -u +%F); $N pages, $bytes bytes; GzipDiskNgCacheMaxSize $MAX; $WORKERS worker(s)"
t0=$(now)
pass >/dev/null
t1=$(now)
printf 'first pass: %.1f s\n' "$(echo "$t1 - $t0" | bc -l)"
want=$(( (N * 95 + 99) / 100 ))
until [ "$(metric 'gzip_disk_ng_ondemand_copies_total{state="done"}')" -ge "$want" ]; do
    sleep 1
    if [ "$(echo "$(now) - $t1 > 7200" | bc)" = 1 ]; then echo "not 95 % after 2 h" >&2; exit 1; fi
done
t95=$(now)
printf '95 %% of the pages have their copy %.1f s after the first pass ended (%.1f s after it began)\n' \
    "$(echo "$t95 - $t1" | bc -l)" "$(echo "$t95 - $t0" | bc -l)"
until [ "$(metric gzip_disk_ng_ondemand_wanted)" = 0 ]; do sleep 1; done
printf 'backlog cleared %.1f s after the first pass ended\n' "$(echo "$(now) - $t1" | bc -l)"
# The first copies' CPU, before the second pass has them made again at
# the best levels.
cpu=$(metric gzip_disk_ng_compressor_cpu_seconds_total)
made=$(metric 'gzip_disk_ng_ondemand_copies_total{state="done"}')
printf 'compressor CPU for the first copies: %.1f s, %.2f ms per page; %d copies made, %d dropped\n' "$cpu" \
    "$(echo "1000 * $cpu / $N" | bc -l)" "$made" "$(metric 'gzip_disk_ng_ondemand_copies_total{state="dropped"}')"
rss1=$(awk '/VmRSS/ { print $2 }' "/proc/$(compressor)/status")
coded=$(pass)
printf 'second pass: %d of %d pages served compressed (%.1f %%)\n' "$coded" "$N" "$(echo "100 * $coded / $N" | bc -l)"
until [ "$(metric gzip_disk_ng_ondemand_wanted)" = 0 ] && [ "$(metric gzip_disk_ng_ondemand_cpu_seconds_per_copy)" != "" ]; do sleep 1; done
cpu2=$(metric gzip_disk_ng_compressor_cpu_seconds_total)
printf 'compressor CPU so far (copies served in the second pass being made again at the best levels): %.1f s\n' "$cpu2"
# A copy being made again may vanish under find: no error.
alloc=$({ find "$WORK/cache" -type f -printf '%b\n' 2>/dev/null || true; } | awk '{ s += $1 * 512 } END { print s + 0 }')
echo "cache: $(metric gzip_disk_ng_cache_entries) entries, $(metric gzip_disk_ng_cache_bytes) bytes counted," \
    "$alloc bytes allocated on disk, limit $(numfmt --from=iec "$MAX")"
pid=$(compressor)
entries=$(metric gzip_disk_ng_cache_entries)
rss=$(awk '/VmRSS/ { print $2 }' "/proc/$pid/status")
hwm=$(awk '/VmHWM/ { print $2 }' "/proc/$pid/status")
printf 'compressor RSS: %d kB at start, %d kB after the first copies, %d kB now (peak %d kB): %.0f bytes per entry\n' \
    "$rss0" "$rss1" "$rss" "$hwm" "$(echo "1024 * ($rss1 - $rss0) / ($entries + 1)" | bc -l)"
[ "${CALLGRIND:-1}" = 0 ] && exit 0
ensure_packages valgrind
apache_stop "$WORK"
sleep 2
source "$(dirname "$0")/callgrind_lib.sh"
FEW=20
MANY=120
mkdir -m 1777 "$WORK/out"
page="/d00/p000000.html"
echo "a hit at $N pages ($entries cache entries): $(whole "$page" "gzip, deflate, br, zstd" br)" \
    "instructions of Apache -X per whole request (callgrind: Ir($MANY) - Ir($FEW)) / $((MANY - FEW)), $page in br"
