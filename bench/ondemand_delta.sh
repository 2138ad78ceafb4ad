#!/usr/bin/env bash
# Deltas on demand (RFC 9842 dcz/dcb made by the on-demand compressor, no
# publish step), measured on a real Apache (event MPM, one compressor
# worker, 127.0.0.1 on a free port) in one run:
#
# 1. Same path: three consecutive releases of two npm packages (vue
#    3.5.11-13 dist/vue.global.prod.js, lodash 4.17.19-21 lodash.min.js,
#    fetched with `npm pack`) served at a fixed path under
#    `GzipDiskNgOnDemand On` + `GzipDiskNgUseAsDictionary self`: release 1
#    asked as a browser without dictionaries asks (zstd, br, gzip), then
#    until `br cached`; rewritten in place with release 2, then
#    asked with `Available-Dictionary` = release 1's SHA-256 until the dcz
#    (then the dcb) delta is served; the same for release 3 against
#    releases 2 and 1 (GzipDiskNgDeltaVersions 3 keeps both). Bytes of the
#    delta against the br copy of the same release.
# 2. Site dictionary: Debian's Apache manual (apache2-doc) under
#    `GzipDiskNgSiteDictionary /dictionary.dat`, crawled twice until the
#    dictionary is trained (and retrained, until it stays the same), then
#    every page asked in br and in dcz and dcb against the dictionary:
#    quartiles of delta/br over the pages, and the totals; also each
#    training the compressor logged, and the headers of the dictionary.
#    Then the publish tool's train and compress --dictionary at 32 to 512
#    KiB over the same pages: the median dcz/br each size gives.
# 3. From a change to the first delta served: vue 3.5.12's
#    dist/vue.runtime.global.js (about 390 KB), cached, rewritten in place
#    with 3.5.13's; the seconds from the rewrite to the first 200 in dcz,
#    polling every 20 ms with the old version's hash (the first request
#    after the rewrite is the one that queues it).
# 4. Instructions per whole request under callgrind (Apache -X, a new
#    connection each, combined access log, as bench/callgrind.sh --whole):
#    a cached delta (`dcz cached`) against the same dcz bytes published
#    beside the file (`dcz precompressed`, in a scope without on-demand),
#    same request headers.
#
# Every delta served is also checked with `gzip-disk-ng verify`: it names
# its dictionary and decodes against it to the version it stands for.
#
#   bench/ondemand_delta.sh [--no-build]
#
# About 2-3 minutes on 2 CPUs; every wait is bounded, a part whose
# deltas never come says so (MISBEHAVED: the request, the last response's
# note and headers) and the script ends with status 1.
# Needs network access to the npm registry on the first run (tarballs are
# kept in ${XDG_CACHE_HOME:-~/.cache}/gzip-disk-ng-bench, as
# bench/dictionary.sh keeps them). Environment: PORT (default: a free
# one), FEW/MANY (callgrind request counts, 50/250).
source "$(dirname "$0")/../scripts/lib.sh"
# npm from Debian, unless an npm is already there (nodesource's nodejs
# ships its own, which Debian's npm package conflicts with).
if command -v npm >/dev/null 2>&1; then ensure_packages apache2-doc valgrind; else ensure_packages apache2-doc valgrind npm; fi
if [ "${1:-}" = "--no-build" ]; then
    [ -f "$MODULE_SO" ] || { echo "$MODULE_SO missing: run without --no-build" >&2; exit 1; }
else
    build
fi
TOOL="$ROOT/target/release/gzip-disk-ng"
MANUAL=/usr/share/doc/apache2-doc/manual/en
FEW="${FEW:-50}"
MANY="${MANY:-250}"
NPM_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/gzip-disk-ng-bench"
WORK="$(mktemp -d /tmp/gzip-disk-ng-odd.XXXXXX)"
chmod 755 "$WORK"
cleanup() {
    # Also Apache -X under callgrind: valgrind runs as Apache's pid.
    apache_stop "$WORK"
    sleep 1
    rm -rf "$WORK"
}
trap cleanup EXIT
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
PORT="${PORT:-$(free_port)}"
URL="http://127.0.0.1:$PORT"
D="$WORK/docs"
SRC="$WORK/src"
LOG="$WORK/access.log"
# Served deltas land here beside the content they stand for, for verify.
CHECK="$WORK/check"
export GZIP_DISK_NG_STATE="$WORK/state"
mkdir -p "$D"/{same,manual,first,cgc,cgp} "$SRC" "$CHECK/dicts" "$NPM_CACHE"
mkdir -m 750 "$WORK/cache"
# Apache drops privileges even in -X mode: callgrind writes as that user.
mkdir -m 1777 "$WORK/out"

# The file PATH-IN-PACKAGE of PACKAGE@VERSION, from a tarball fetched once.
npm_file() { # package version path-in-package -> path of the extracted file
    local t="$NPM_CACHE/$1-$2.tgz" d="$SRC/$1-$2"
    [ -f "$t" ] || (cd "$NPM_CACHE" && timeout 300 npm pack --silent "$1@$2" >/dev/null)
    [ -d "$d" ] || { mkdir -p "$d" && tar -xzf "$t" -C "$d"; }
    echo "$d/package/$3"
}
VUE=(3.5.11 3.5.12 3.5.13)
LODASH=(4.17.19 4.17.20 4.17.21)
for v in "${VUE[@]}"; do npm_file vue "$v" dist/vue.global.prod.js >/dev/null; done
for v in "${LODASH[@]}"; do npm_file lodash "$v" lodash.min.js >/dev/null; done
cp -r "$MANUAL/." "$D/manual/"
PAGES=()
while IFS= read -r p; do PAGES+=("${p#"$D"}"); done < <(find "$D/manual" -name '*.html' | sort)
# Apache's User writes the cache; the module refuses a root others could write.
[ "$(id -u)" -eq 0 ] && chown nobody "$WORK/cache"
chmod -R a+rX "$D"

conf() { # log format [with-site-dictionary] -> an Apache configuration
    apache_conf_head "$WORK" "$PORT" event
    echo "LogFormat \"%U %{gzip-disk-ng}n\" note"
    echo "LogFormat \"%h %l %u %t \\\"%r\\\" %>s %O \\\"%{Referer}i\\\" \\\"%{User-Agent}i\\\"\" combined"
    echo "CustomLog $LOG $1"
    echo "GzipDiskNgCacheRoot $WORK/cache"
    echo "GzipDiskNgCompressorWorkers 1"
    if [ -n "${2:-}" ]; then
        echo "GzipDiskNgSiteDictionary /dictionary.dat"
        # The compressor's notice on each training of the site dictionary.
        echo "LogLevel warn gzip_disk_ng:notice"
    fi
    printf 'DocumentRoot %s\n<Directory %s>\n    Require all granted\n</Directory>\n' "$D" "$D"
    for c in same first cgc; do
        conf_handler "$D/$c" "GzipDiskNgOnDemand On" "GzipDiskNgUseAsDictionary self" "GzipDiskNgDeltaVersions 3"
    done
    conf_handler "$D/manual" "GzipDiskNgOnDemand On"
    # The published delta's scope, as a site with a publish step has it.
    conf_handler "$D/cgp" "GzipDiskNgUseAsDictionary self"
}
conf note site >"$WORK/httpd-warm.conf"
# Measured with the combined log, as bench/callgrind.sh --whole is.
conf combined >"$WORK/httpd.conf"
/usr/sbin/apache2 -t -d "$WORK" -f "$WORK/httpd-warm.conf" 2>&1 | grep -v '^Syntax OK$' >&2 || true
/usr/sbin/apache2 -d "$WORK" -f "$WORK/httpd-warm.conf" -k start
apache_wait "$PORT"

now() { date +%s.%N; }
b64() { echo ":$(openssl dgst -sha256 -binary "$1" | base64 -w0):"; }
hex() { sha256sum "$1" | cut -d' ' -f1; }
ratio() { echo "scale=3; $1 / $2" | bc | sed 's/^\./0./'; }
compressor() { pgrep -P "$(cat "$WORK/httpd.pid")" -x gdn-compressor | head -1; }
FAILED=0

# One request, alone on the server: sets CODE, BYTES (body), CE
# (Content-Encoding) and NOTE (the module's log note, "-" for none);
# the body is in $WORK/body, the headers in $WORK/headers.
req() { # path accept-encoding [available-dictionary]
    local n0 out i
    n0=$(wc -l <"$LOG")
    out=$(curl -s --max-time 30 -o "$WORK/body" -D "$WORK/headers" -H "Accept-Encoding: $2" \
        ${3:+-H "Available-Dictionary: $3"} -w '%{http_code} %{size_download} %header{content-encoding}' "$URL$1") || true
    read -r CODE BYTES CE <<<"$out" || true
    CE="${CE:-}"
    for i in $(seq 200); do
        [ "$(wc -l <"$LOG")" -gt "$n0" ] && break
        sleep 0.01
    done
    NOTE=$(sed -n "$((n0 + 1))p" "$LOG" | cut -d' ' -f2-)
}

# Asks until a 200 comes with the log note WANT (a trailing " queued"
# allowed), for up to SECONDS; on failure says what came last.
poll() { # seconds want path accept-encoding [available-dictionary]
    local secs="$1" want="$2" end
    end=$(($(date +%s) + secs))
    shift 2
    while :; do
        req "$@"
        if [ "$CODE" = 200 ] && { [ "$NOTE" = "$want" ] || [ "$NOTE" = "$want queued" ]; }; then
            return 0
        fi
        if [ "$(date +%s)" -ge "$end" ]; then
            echo "MISBEHAVED: GET $1 (Accept-Encoding: $2${3:+; Available-Dictionary: $3}): no 200 with note '$want' within $secs s;" \
                "last: $CODE, $BYTES bytes, note '$NOTE', headers: $(tr -d '\r' <"$WORK/headers" | tr '\n' '|')" >&2
            FAILED=1
            return 1
        fi
        sleep 0.05
    done
}

# Waits until the compressor has used no CPU for 2 s (at most 300 s).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$(compressor || true)/stat" 2>/dev/null || echo gone; }
wait_idle() {
    local last=-1 t same=0 i
    for i in $(seq 600); do
        t=$(cpu_ticks)
        if [ "$t" = "$last" ]; then same=$((same + 1)); else same=0; fi
        [ "$same" -ge 4 ] && return 0
        last=$t
        sleep 0.5
    done
    echo "compressor still busy after 300 s" >&2
}

# Keeps the body just served as a delta of CONTENT against DICT for verify.
keep_delta() { # case-dir content dict coding
    local dir="$CHECK/$1" name
    name=$(basename "$2")
    mkdir -p "$dir"
    [ -f "$dir/$name" ] || cp "$2" "$dir/$name"
    [ -f "$CHECK/dicts/$(hex "$3")" ] || cp "$3" "$CHECK/dicts/$(hex "$3")"
    cp "$WORK/body" "$dir/$name.$(hex "$3").$4"
}

# Checks every delta kept so far under CHECK/PREFIX*, prints one line.
verify_deltas() { # prefix label
    local n args=() d out
    n=$(find "$CHECK" -path "$CHECK/$1*" -type f \( -name '*.dcz' -o -name '*.dcb' \) | wc -l)
    for d in "$CHECK"/dicts/*; do args+=(--dictionary "$d"); done
    if out=$("$TOOL" verify --quiet "${args[@]}" "$CHECK/$1"* 2>&1); then
        echo "$2: $n of $n served deltas decode to their version (gzip-disk-ng verify)"
    else
        echo "$2: gzip-disk-ng verify failed on the $n served deltas:"
        echo "$out" | head -20
        FAILED=1
    fi
}

echo "date: $(date -u +%F); deltas on demand, one compressor worker, $(nproc) CPUs"

# 1. Same path.
SAME_ROWS=()
same_path() { # package path-in-package version1 version2 version3
    local pkg="$1" inpkg="$2" name f path i j c r br dcz dcb
    shift 2
    local vers=("$@") src=()
    for v in "${vers[@]}"; do src+=("$(npm_file "$pkg" "$v" "$inpkg")"); done
    name=$(basename "$inpkg")
    f="$D/same/$pkg/$name"
    path="/same/$pkg/$name"
    mkdir -p "$D/same/$pkg"
    cp "${src[0]}" "$f"
    chmod -R a+rX "$D/same/$pkg"
    # As a browser without dictionaries asks: zstd, br and gzip copies queued.
    req "$path" "zstd, br, gzip"
    poll 60 "br cached" "$path" br || return 0
    for i in 1 2; do
        # In place: same inode, new size, mtime and ctime.
        cat "${src[$i]}" >"$f"
        for ((j = i - 1; j >= 0; j--)); do
            dcz=- dcb=-
            for c in dcz dcb; do
                if poll 60 "$c cached" "$path" "gzip, deflate, br, zstd, $c" "$(b64 "${src[$j]}")" && [ "$CE" = "$c" ]; then
                    keep_delta "same-$pkg-${vers[$i]}" "${src[$i]}" "${src[$j]}" "$c"
                    eval "$c=\$BYTES"
                fi
            done
            br=-
            poll 60 "br cached" "$path" br && br=$BYTES
            r="| $pkg ${vers[$j]} → ${vers[$i]}, \`$inpkg\` | $(stat -c %s "${src[$i]}") | $br"
            for c in "$dcz" "$dcb"; do
                if [ "$c" != - ] && [ "$br" != - ]; then r+=" | $c ($(ratio "$c" "$br")×)"; else r+=" | $c"; fi
            done
            SAME_ROWS+=("$r |")
        done
    done
}
same_path vue dist/vue.global.prod.js "${VUE[@]}"
same_path lodash lodash.min.js "${LODASH[@]}"
echo
echo "1. Same path, rewritten in place (GzipDiskNgUseAsDictionary self, GzipDiskNgDeltaVersions 3): bytes of the new release"
echo
echo '| update | original | br cached | dcz cached (/ br) | dcb cached (/ br) |'
echo '|---|---|---|---|---|'
printf '%s\n' "${SAME_ROWS[@]}"
verify_deltas same- "same path"

# 2. Site dictionary.
dict_status() {
    curl -s --max-time 30 -o "$WORK/dictionary.dat" -D "$WORK/dict.headers" -w '%{http_code}' "$URL/dictionary.dat" || true
}
header() { grep -i "^$1:" "${2:-$WORK/headers}" | tr -d '\r' | cut -d' ' -f2- || true; }
declare -A BR DCZ DCB
site() {
    local t0 p i round left next first_dict first_size old trainings uad link c t end
    t0=$(now)
    for round in 1 2; do
        for p in "${PAGES[@]}"; do
            curl -s --max-time 30 -o /dev/null -H "Accept-Encoding: zstd, br, gzip" "$URL$p" || true
        done
    done
    for i in $(seq 601); do
        [ "$(dict_status)" = 200 ] && break
        if [ "$i" -gt 600 ]; then
            echo "MISBEHAVED: GET /dictionary.dat not 200 300 s after the crawl: $(head -1 "$WORK/dict.headers")" >&2
            FAILED=1
            return 0
        fi
        sleep 0.5
    done
    first_dict=$(printf '%.1f' "$(echo "$(now) - $t0" | bc -l)")
    first_size=$(stat -c %s "$WORK/dictionary.dat")
    # Every page cached in br (the pages counted for retraining), then the
    # dictionary left as the last retraining made it.
    left=("${PAGES[@]}")
    end=$(($(date +%s) + 300))
    while [ ${#left[@]} -gt 0 ] && [ "$(date +%s)" -lt "$end" ]; do
        next=()
        for p in "${left[@]}"; do
            req "$p" br
            { [ "$CE" = br ] && [[ "$NOTE" == "br cached"* ]]; } || next+=("$p")
        done
        left=("${next[@]}")
        [ ${#left[@]} -eq 0 ] || sleep 1
    done
    if [ ${#left[@]} -gt 0 ]; then
        echo "MISBEHAVED: ${#left[@]} pages never br cached, e.g. GET ${left[0]} (Accept-Encoding: br): note '$NOTE'" >&2
        FAILED=1
    fi
    wait_idle
    for i in $(seq 120); do
        old=$(hex "$WORK/dictionary.dat")
        sleep 2
        dict_status >/dev/null
        [ "$(hex "$WORK/dictionary.dat")" = "$old" ] && break
    done
    DICT="$WORK/dictionary.dat"
    DICT_B64=$(b64 "$DICT")
    # "site dictionary HEX trained: N bytes from M pages (B bytes), ..."
    trainings=$(grep -o 'site dictionary [0-9a-f]* trained: [0-9]* bytes from [0-9]* pages' "$WORK/error.log" |
        awk -v cur="$(hex "$DICT")" '{ printf "%s%s bytes from %s pages%s", sep, $5, $8, ($3 == cur ? " (measured)" : ""); sep = ", " }' || true)
    uad=$(header use-as-dictionary "$WORK/dict.headers")
    # Each page in dcz, then dcb, against the dictionary, in rounds until
    # none is missing or a round finds nothing new with the compressor idle.
    for c in dcz dcb; do
        left=("${PAGES[@]}")
        end=$(($(date +%s) + 600))
        while [ "$(date +%s)" -lt "$end" ]; do
            next=()
            for p in "${left[@]}"; do
                req "$p" "gzip, deflate, br, zstd, $c" "$DICT_B64"
                if [ "$CODE" = 200 ] && [ "$CE" = "$c" ]; then
                    if [[ "$NOTE" != "$c cached"* ]]; then
                        echo "MISBEHAVED: GET $p (Accept-Encoding: gzip, deflate, br, zstd, $c; Available-Dictionary: $DICT_B64): $c with note '$NOTE'" >&2
                        FAILED=1
                    fi
                    eval "${c^^}[\$p]=\$BYTES"
                    keep_delta "site$(dirname "${p#/manual}")" "$D$p" "$DICT" "$c"
                else
                    next+=("$p")
                fi
            done
            [ ${#next[@]} -gt 0 ] || { left=(); break; }
            if [ ${#next[@]} -eq ${#left[@]} ]; then
                t=$(cpu_ticks)
                sleep 2
                [ "$(cpu_ticks)" != "$t" ] || break
            fi
            left=("${next[@]}")
            sleep 0.5
        done
        if [ ${#left[@]} -gt 0 ]; then
            echo "site dictionary: ${#left[@]} pages got no $c, e.g. GET ${left[0]} (Accept-Encoding: gzip, deflate, br, zstd, $c; Available-Dictionary: $DICT_B64): last $CODE, Content-Encoding '$CE', note '$NOTE'" >&2
        fi
    done
    for p in "${PAGES[@]}"; do
        req "$p" br
        [ "$CE" != br ] || BR[$p]=$BYTES
    done
    req "${PAGES[0]}" "gzip, deflate, br, zstd"
    link=$(header link)
    for p in "${PAGES[@]}"; do
        echo "$p ${BR[$p]:--} ${DCZ[$p]:--} ${DCB[$p]:--}"
    done >"$WORK/site.txt"
    echo "2. Site dictionary over Debian's Apache manual, ${#PAGES[@]} pages (GzipDiskNgSiteDictionary /dictionary.dat)"
    echo
    echo "/dictionary.dat: first 200 after ${first_dict} s of crawling ($first_size bytes); measured once every page was cached and the compressor idle: $(stat -c %s "$DICT") bytes, sha256 $(hex "$DICT" | cut -c1-12)…"
    echo "trainings (compressor's notices): ${trainings:-none logged}"
    echo "/dictionary.dat Use-As-Dictionary: ${uad:-none}; Cache-Control: $(header cache-control "$WORK/dict.headers"); Content-Type: $(header content-type "$WORK/dict.headers")"
    echo "pages carry Link: ${link:-none}"
    local coded c
    for c in br zstd gzip; do
        coded+="${coded:+, }$c $(curl -s --max-time 30 -H "Accept-Encoding: $c" -o /dev/null -w '%{size_download}' "$URL/dictionary.dat") bytes"
    done
    echo "/dictionary.dat as sent to a client accepting one coding: $coded"
    python3 - "$WORK/site.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def num(x): return None if x == "-" else int(x)
pages = [(p, num(b), num(z), num(c)) for p, b, z, c in rows]
def q(xs):
    if len(xs) < 2: return xs * 3 if xs else [float("nan")] * 3
    return statistics.quantiles(xs, n=4, method="inclusive")
for name, i in (("dcz", 2), ("dcb", 3)):
    have = [r for r in pages if r[1] and r[i] is not None]
    ratios = [r[i] / r[1] for r in have]
    q1, med, q3 = q(ratios)
    br = sum(r[1] for r in have)
    d = sum(r[i] for r in have)
    mean = statistics.fmean(ratios) if ratios else float("nan")
    print(f"{name}/br over {len(have)} of {len(pages)} pages: median {med:.3f}, quartiles {q1:.3f} and {q3:.3f}, mean {mean:.3f}; "
          f"total {d} bytes against {br} br ({d / br if br else float('nan'):.3f}×)")
br_all = [r for r in pages if r[1]]
served = sum(min(x for x in (r[1], r[2], r[3]) if x is not None) for r in br_all)
total_br = sum(r[1] for r in br_all)
print(f"smallest of br, dcz, dcb per page, {len(br_all)} pages: {served} bytes against {total_br} br ({served / total_br if total_br else float('nan'):.3f}×)")
PY
    verify_deltas site "site dictionary"
}
echo
site

# 2b. What the dictionary's size does: the publish tool's own train and
# compress --dictionary over the same pages, one size after another.
dictionary_sizes() {
    local size dir
    echo
    echo "2b. Dictionary size (gzip-disk-ng train --size, then compress --dictionary --no-dcb, over the same 244 pages): median dcz/br"
    echo
    echo '| size | dictionary br bytes | median dcz / br |'
    echo '|---|---|---|'
    for size in 32K 64K 128K 192K 288K 384K 512K; do
        dir="$WORK/sizes/$size"
        mkdir -p "$dir" && cp -r "$MANUAL/." "$dir/"
        GZIP_DISK_NG_STATE="$WORK/sizes/state" "$TOOL" train "$dir" --out "$WORK/sizes/$size.dat" --size "$size" >/dev/null
        GZIP_DISK_NG_STATE="$WORK/sizes/state" "$TOOL" compress -q --no-dcb --dictionary "$WORK/sizes/$size.dat" "$dir" >/dev/null
        python3 - "$dir" "$size" "$(brotli -c -q 11 "$WORK/sizes/$size.dat" | wc -c)" <<'PY'
import glob, os, statistics, sys
ratios = []
for br in glob.glob(sys.argv[1] + "/**/*.html.br", recursive=True):
    d = glob.glob(br[:-3] + ".*.dcz")
    b = os.path.getsize(br)
    ratios.append(min(os.path.getsize(d[0]), b) / b if d else 1.0)
print(f"| {sys.argv[2]} | {sys.argv[3]} | {statistics.median(ratios):.3f} |")
PY
        rm -rf "$dir"
    done
}
dictionary_sizes

# 3. From a change to the first delta served.
first_delta() {
    local r1 r2 old ae t0 n=0 got="" end t_dcz c
    r1=$(npm_file vue 3.5.12 dist/vue.runtime.global.js)
    r2=$(npm_file vue 3.5.13 dist/vue.runtime.global.js)
    cp "$r1" "$D/first/app.js"
    chmod a+r "$D/first/app.js"
    req /first/app.js "zstd, br, gzip"
    for c in zstd br gzip; do poll 60 "$c cached" /first/app.js "$c" || return 0; done
    wait_idle
    old=$(b64 "$r1")
    ae="gzip, deflate, br, zstd, dcz"
    cat "$r2" >"$D/first/app.js"
    t0=$(now)
    end=$(($(date +%s) + 60))
    while [ "$(date +%s)" -lt "$end" ]; do
        n=$((n + 1))
        got=$(curl -s --max-time 10 -o /dev/null -H "Accept-Encoding: $ae" -H "Available-Dictionary: $old" \
            -w '%{http_code} %header{content-encoding}' "$URL/first/app.js" || true)
        [ "$got" = "200 dcz" ] && break
        sleep 0.02
    done
    t_dcz=$(echo "$(now) - $t0" | bc -l)
    echo "3. From a change to the first delta: vue 3.5.12 → 3.5.13 dist/vue.runtime.global.js ($(stat -c %s "$r2") bytes), rewritten in place"
    echo
    if [ "$got" != "200 dcz" ]; then
        echo "MISBEHAVED: no dcz within 60 s of the rewrite ($n requests with Accept-Encoding: $ae; Available-Dictionary: $old; last: $got)"
        FAILED=1
        return 0
    fi
    printf 'first 200 in dcz %.2f s after the rewrite (%d requests, one every 20 ms)\n' "$t_dcz" "$n"
    if poll 60 "br cached" /first/app.js br; then
        printf 'br copy of the new version first served %.2f s after the rewrite\n' "$(echo "$(now) - $t0" | bc -l)"
    fi
}
echo
first_delta

# 4. Per request under callgrind: a cached delta against the same bytes
# published beside the file.
v1=$(npm_file vue 3.5.12 dist/vue.global.prod.js)
v2=$(npm_file vue 3.5.13 dist/vue.global.prod.js)
AD=$(b64 "$v1")
AE="gzip, deflate, br, zstd, dcz"
PUB="$D/cgp/vue.global.prod.js.$(hex "$v1").dcz"
callgrind_prepare() {
    local c
    cp "$v1" "$D/cgc/vue.global.prod.js"
    chmod a+r "$D/cgc/vue.global.prod.js"
    req /cgc/vue.global.prod.js "zstd, br, gzip"
    poll 60 "br cached" /cgc/vue.global.prod.js br || return 1
    cat "$v2" >"$D/cgc/vue.global.prod.js"
    poll 60 "dcz cached" /cgc/vue.global.prod.js "gzip, deflate, br, zstd, dcz" "$AD" || return 1
    # Every copy of the new version made, so nothing is queued while counting.
    for c in zstd br gzip; do poll 60 "$c cached" /cgc/vue.global.prod.js "$c" || return 1; done
    req /cgc/vue.global.prod.js "$AE" "$AD"
    CACHED_NOTE="$NOTE, Content-Encoding $CE, $BYTES bytes"
    [ "$CE" = dcz ] || return 1
    cp "$v2" "$D/cgp/vue.global.prod.js"
    cp "$WORK/body" "$PUB"
    touch -r "$D/cgp/vue.global.prod.js" "$PUB"
    chmod a+r "$D"/cgp/*
    req /cgp/vue.global.prod.js "$AE" "$AD"
    PUB_NOTE="$NOTE, Content-Encoding $CE, $BYTES bytes"
    wait_idle
}
callgrind_prepare || { echo "MISBEHAVED: no cached dcz to count: ${CACHED_NOTE:-}" >&2; exit 1; }
apache_stop "$WORK"
for i in $(seq 100); do [ -f "$WORK/httpd.pid" ] || break; sleep 0.1; done
sleep 1
echo
echo "4. Instructions of Apache -X per whole request under callgrind: (Ir($MANY) - Ir($FEW)) / $((MANY - FEW)), a new connection each"
echo
source "$(dirname "$0")/callgrind_lib.sh"
cached=$(EXTRA_HEADER="Available-Dictionary: $AD" whole /cgc/vue.global.prod.js "$AE" dcz)
published=$(EXTRA_HEADER="Available-Dictionary: $AD" whole /cgp/vue.global.prod.js "$AE" dcz)
echo "vue 3.5.12 → 3.5.13 dist/vue.global.prod.js as dcz ($(stat -c %s "$PUB") bytes), Accept-Encoding: $AE"
echo "notes: published '$PUB_NOTE'; cached '$CACHED_NOTE'"
printf '%-44s %12s %8s\n' case instr/req ratio
printf '%-44s %12d %8s\n' "published dcz beside the file" "$published" 1.00
printf '%-44s %12d %8.3f  (this/published)\n' "cached dcz (on demand)" "$cached" "$(echo "$cached/$published" | bc -l)"
exit "$FAILED"
