#!/usr/bin/env bash
# Benchmarks the module against Apache's own handlers in one run, on the same
# pages and client (wrk, loopback): core serving the same .gz bytes,
# mod_deflate compressing on the fly, and mod_deflate's INFLATE filter.
# Prints req/s and ratios. DURATION (s), CONNS and PAGES may be overridden.
source "$(dirname "$0")/../scripts/lib.sh"
ensure_packages apache2-doc wrk
build
DURATION="${DURATION:-5}"
CONNS="${CONNS:-8}"
MANUAL=/usr/share/doc/apache2-doc/manual/en
PAGES="${PAGES:-$MANUAL/mod/core.html $MANUAL/mod/mod_deflate.html}"
WORK="$(mktemp -d /tmp/gzip-disk-ng-bench.XXXXXX)"
chmod 755 "$WORK"
trap '[ -f "$WORK/httpd.pid" ] && kill "$(cat "$WORK/httpd.pid")" 2>/dev/null; sleep 1; rm -rf "$WORK"' EXIT
D="$WORK/docs"
mkdir -p "$D"/{mod,modjit,modonly,modonlygz,core,deflate,inflate}
for p in $PAGES; do
    n="$(basename "$p")"
    cp "$p" "$D/mod/$n"
    gzip -9 -n -c "$p" >"$D/mod/$n.gz"
    brotli -q 11 -c "$p" >"$D/mod/$n.br"
    zstd -19 -q -c "$p" >"$D/mod/$n.zst"
    touch -r "$D/mod/$n" "$D/mod/$n".*
    cp "$D/mod/$n".{gz,br,zst} "$D/modonly/"
    cp -p "$D/mod/$n" "$D/mod/$n".{gz,zst} "$D/modjit/"
    cp "$D/mod/$n.gz" "$D/modonlygz/"
    cp "$D/mod/$n.gz" "$D/core/"
    cp "$D/mod/$n.gz" "$D/inflate/"
    cp "$p" "$D/deflate/$n"
done
chmod -R a+rX "$WORK"
PORT="${PORT:-18480}"
MODS=/usr/lib/apache2/modules
USERLINES=""
[ "$(id -u)" -eq 0 ] && USERLINES=$'User nobody\nGroup nogroup'
cat >"$WORK/httpd.conf" <<CONF
ServerRoot $WORK
DefaultRuntimeDir $WORK
PidFile $WORK/httpd.pid
ErrorLog $WORK/error.log
LogLevel warn
Listen 127.0.0.1:$PORT
ServerName localhost
$USERLINES
LoadModule mpm_event_module $MODS/mod_mpm_event.so
LoadModule authz_core_module $MODS/mod_authz_core.so
LoadModule mime_module $MODS/mod_mime.so
LoadModule filter_module $MODS/mod_filter.so
LoadModule deflate_module $MODS/mod_deflate.so
LoadModule gzip_disk_ng_module $MODULE_SO
TypesConfig /etc/mime.types
StartServers 2
ServerLimit 2
ThreadsPerChild 32
MaxRequestWorkers 64
KeepAlive On
MaxKeepAliveRequests 0
DocumentRoot $D
<Directory $D>
    Require all granted
</Directory>
<Directory $D/mod>
    SetHandler gzip-disk-ng
</Directory>
<Directory $D/modjit>
    SetHandler gzip-disk-ng
    GzipDiskNgJitter 32
</Directory>
<Directory $D/modonly>
    SetHandler gzip-disk-ng
</Directory>
<Directory $D/modonlygz>
    SetHandler gzip-disk-ng
</Directory>
<Directory $D/deflate>
    SetOutputFilter DEFLATE
</Directory>
<Directory $D/inflate>
    RemoveType .gz
    AddEncoding gzip .gz
    SetOutputFilter INFLATE
</Directory>
CONF
/usr/sbin/apache2 -d "$WORK" -f "$WORK/httpd.conf" -k start
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done

URL="http://127.0.0.1:$PORT"
run() { # label path accept-encoding expected-coding
    local label="$1" path="$2" ae="$3" want="$4" got rps
    got="$(curl -s -o /dev/null -D - -H "Accept-Encoding: $ae" "$URL$path" | tr -d '\r' | awk -F': ' 'tolower($1)=="content-encoding"{print $2}')"
    if [ "$got" != "$want" ]; then
        echo "bench: $label: expected Content-Encoding '$want', got '$got'" >&2
        exit 1
    fi
    rps="$(wrk -t2 -c"$CONNS" -d"${DURATION}s" -H "Accept-Encoding: $ae" "$URL$path" | awk '/Requests\/sec/{print $2}')"
    echo "$rps"
}

printf '%s\n' "date: $(date -u +%F) machine: $(nproc) cores, $(uname -m); wrk -t2 -c$CONNS -d${DURATION}s, HTTP/1.1 keep-alive"
for p in $PAGES; do
    n="$(basename "$p")"
    size=$(stat -c %s "$p")
    core=$(run "core .gz" "/core/$n.gz" "gzip" "")
    modgz=$(run "module gzip" "/mod/$n" "gzip" "gzip")
    modzst=$(run "module zstd" "/mod/$n" "zstd" "zstd")
    jitgz=$(run "module gzip + jitter" "/modjit/$n" "gzip" "gzip")
    jitzst=$(run "module zstd + jitter" "/modjit/$n" "zstd" "zstd")
    defl=$(run "mod_deflate" "/deflate/$n" "gzip" "gzip")
    infl=$(run "INFLATE" "/inflate/$n.gz" "" "")
    dec=$(run "module decompress (gz)" "/modonlygz/$n" "" "")
    decz=$(run "module decompress (zst)" "/modonly/$n" "" "")
    echo
    echo "page $n ($size bytes)"
    printf '%-44s %10s %8s\n' "case" "req/s" "ratio"
    printf '%-44s %10.0f %8s\n' "core handler, same .gz bytes" "$core" "1.00"
    printf '%-44s %10.0f %8.2f  (vs core)\n' "module precompressed gzip" "$modgz" "$(echo "$modgz/$core" | bc -l)"
    printf '%-44s %10.0f %8.2f  (vs core)\n' "module precompressed zstd" "$modzst" "$(echo "$modzst/$core" | bc -l)"
    printf '%-44s %10.0f %8.2f  (vs jitter off)\n' "module gzip, GzipDiskNgJitter 32" "$jitgz" "$(echo "$jitgz/$modgz" | bc -l)"
    printf '%-44s %10.0f %8.2f  (vs jitter off)\n' "module zstd, GzipDiskNgJitter 32" "$jitzst" "$(echo "$jitzst/$modzst" | bc -l)"
    printf '%-44s %10.0f %8.2f  (module gzip / this)\n' "mod_deflate on the fly" "$defl" "$(echo "$modgz/$defl" | bc -l)"
    printf '%-44s %10.0f %8s\n' "mod_deflate INFLATE of the .gz" "$infl" "1.00"
    printf '%-44s %10.0f %8.2f  (vs INFLATE)\n' "module decompress from .gz" "$dec" "$(echo "$dec/$infl" | bc -l)"
    printf '%-44s %10.0f %8.2f  (vs INFLATE)\n' "module decompress from .zst" "$decz" "$(echo "$decz/$infl" | bc -l)"
done
