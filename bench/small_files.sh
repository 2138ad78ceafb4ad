#!/usr/bin/env bash
# Where one read into the request pool stops beating a mapped file bucket,
# on Debian's defaults (EnableSendfile unset, so off; EnableMMAP On): the
# module made to always read (built with the bench-knobs feature, run with
# GZIP_DISK_NG_POOL_READ_MAX huge) against it made to always map (0), and
# core's handler serving the same .gz, for siblings of SIZES bytes. wrk -c CONNS for DURATION seconds per case,
# ROUNDS interleaved rounds, medians; prints req/s and the ratios.
source "$(dirname "$0")/../scripts/lib.sh"
ensure_packages wrk
SIZES="${SIZES:-2048 8192 16384 32768 65536 131072 262144}"
DURATION="${DURATION:-3}"
ROUNDS="${ROUNDS:-3}"
CONNS="${CONNS:-8}"
WORK="$(mktemp -d /tmp/gzip-disk-ng-small.XXXXXX)"
chmod 755 "$WORK"
trap 'apache_stop "$WORK"; sleep 1; rm -rf "$WORK"' EXIT
# In a target directory of its own, so the release build stays as it is.
(cd "$ROOT" && CARGO_TARGET_DIR="$ROOT/target/bench-knobs" \
    cargo build --release --locked -q -p mod_gzip_disk_ng --lib --features bench-knobs)
cp "$ROOT/target/bench-knobs/release/libmod_gzip_disk_ng.so" "$WORK/module.so"
declare -A POOL_READ_MAX=([mmap]=0 [pool]=1073741824)
D="$WORK/docs"
mkdir -p "$D/mod" "$D/core"
for s in $SIZES; do
    # Random bytes: the .gz is about as large as the page.
    head -c "$s" /dev/urandom >"$D/mod/f$s.html"
    gzip -1 -n -c "$D/mod/f$s.html" >"$D/mod/f$s.html.gz"
    touch -r "$D/mod/f$s.html" "$D/mod/f$s.html.gz"
    cp "$D/mod/f$s.html.gz" "$D/core/"
done
chmod -R a+rX "$WORK"
PORT="${PORT:-18470}"

start() { # variant
    {
        MODULE_SO="$WORK/module.so" apache_conf_head "$WORK" "$PORT" event
        bench_conf_cases "$D"
    } >"$WORK/httpd.conf"
    GZIP_DISK_NG_POOL_READ_MAX="${POOL_READ_MAX[$1]}" \
        /usr/sbin/apache2 -d "$WORK" -f "$WORK/httpd.conf" -k start
    apache_wait "$PORT" 30
}

stop() {
    local pid
    pid="$(cat "$WORK/httpd.pid" 2>/dev/null)" || return 0
    kill "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
}

rps() { # path accept-encoding
    local code
    code=$(curl -s -o /dev/null -w '%{http_code}' -H "Accept-Encoding: $2" "http://127.0.0.1:$PORT$1")
    [ "$code" = 200 ] || { echo "$1: status $code" >&2; exit 1; }
    wrk -t2 -c"$CONNS" -d"${DURATION}s" -H "Accept-Encoding: $2" "http://127.0.0.1:$PORT$1" |
        awk '/Requests\/sec/ { print int($2) }'
}

declare -A got
for r in $(seq "$ROUNDS"); do
    for v in mmap pool; do
        start "$v"
        for s in $SIZES; do
            got[$v.$s]+="$(rps "/mod/f$s.html" gzip) "
            got[core.$s]+="$(rps "/core/f$s.html.gz" gzip) "
        done
        stop
    done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
printf '%-9s %10s %10s %10s %10s %10s\n' "sibling" "core" "mod mmap" "mod read" "read/mmap" "read/core"
for s in $SIZES; do
    c=$(echo "${got[core.$s]}" | median)
    m=$(echo "${got[mmap.$s]}" | median)
    p=$(echo "${got[pool.$s]}" | median)
    printf '%-9s %10d %10d %10d %10.2f %10.2f\n' "$s" "$c" "$m" "$p" \
        "$(echo "$p/$m" | bc -l)" "$(echo "$p/$c" | bc -l)"
done
