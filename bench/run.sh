#!/usr/bin/env bash
# Benchmarks the module against Apache's own ways of serving the same pages,
# in one run, with the same clients (wrk for HTTP/1.1, h2load for h2c) on
# loopback: core serving the .gz bytes, the mod_rewrite+mod_headers recipe,
# mod_deflate and mod_brotli on the fly, mod_deflate's INFLATE filter, and
# nginx gzip_static/gunzip when nginx is installed. Every Apache case runs
# with EnableSendfile On and with Debian's defaults (sendfile Off, EnableMMAP
# On); a case fails on any response that is not 2xx. Writes results.tsv and
# results.svg into OUT (default bench/out). DURATION, ROUNDS, CONNS, PAGES
# may be overridden.
source "$(dirname "$0")/../scripts/lib.sh"
ensure_packages apache2-doc wrk nghttp2-client
build
MANUAL=/usr/share/doc/apache2-doc/manual/en
PAGES="${PAGES:-$MANUAL/mod/core.html $MANUAL/mod/mod_deflate.html}"
OUT="${OUT:-$ROOT/bench/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/gzip-disk-ng-bench.XXXXXX)"
chmod 755 "$WORK"
cleanup() {
    apache_stop "$WORK"
    [ -f "$WORK/nginx.pid" ] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null
    sleep 1; rm -rf "$WORK"
}
trap cleanup EXIT
D="$WORK/docs"
names=()
for p in $PAGES; do
    names+=("$(basename "$p")")
    bench_case "$D" mod "$p" "" .gz .br .zst
    bench_case "$D" modjit "$p" "" .gz .zst
    bench_case "$D" recipe "$p" "" .gz
    bench_case "$D" ngstatic "$p" "" .gz
    for c in modonlygz core inflate nggunzip; do bench_case "$D" "$c" "$p" .gz; done
    bench_case "$D" modonlyzst "$p" .zst
    for c in deflate brotli; do bench_case "$D" "$c" "$p" ""; done
done
chmod -R a+rX "$WORK"
PORT="${PORT:-18480}"
# The same cases twice: on PORT with sendfile, on DPORT as Debian's
# apache2.conf leaves it (EnableSendfile unset, so Off; EnableMMAP On).
DPORT=$((PORT + 2))
{
    apache_conf_head "$WORK" "$PORT" event filter deflate brotli rewrite headers http2
    cat <<CONF
Listen 127.0.0.1:$DPORT
Protocols h2c http/1.1
H2MaxSessionStreams 100
StartServers 2
ServerLimit 2
ThreadsPerChild 32
MaxRequestWorkers 64
KeepAlive On
MaxKeepAliveRequests 0
EnableSendfile On
<VirtualHost 127.0.0.1:$DPORT>
    EnableSendfile Off
    EnableMMAP On
</VirtualHost>
CONF
    bench_conf_cases "$D"
} >"$WORK/httpd.conf"
/usr/sbin/apache2 -d "$WORK" -f "$WORK/httpd.conf" -k start
apache_wait "$PORT"

if command -v nginx >/dev/null 2>&1; then
    NPORT=$((PORT + 1))
    NUSER=""
    [ "$(id -u)" -eq 0 ] && NUSER="user nobody nogroup;"
    cat >"$WORK/nginx.conf" <<NCONF
$NUSER
worker_processes 2;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log;
events { worker_connections 256; }
http {
    include /etc/nginx/mime.types;
    access_log off;
    sendfile on;
    client_body_temp_path $WORK/ngtmp;
    proxy_temp_path $WORK/ngtmp;
    fastcgi_temp_path $WORK/ngtmp;
    uwsgi_temp_path $WORK/ngtmp;
    scgi_temp_path $WORK/ngtmp;
    server {
        listen 127.0.0.1:$NPORT;
        root $D;
        location /ngstatic/ { gzip_static on; gzip_vary on; }
        location /nggunzip/ { gzip_static always; gunzip on; }
    }
}
NCONF
    nginx -c "$WORK/nginx.conf" && export NGINX_BASE="http://127.0.0.1:$NPORT"
    sleep 0.5
fi

echo "date: $(date -u +%F); machine: $(nproc) cores, $(uname -m), $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)"
DEBIAN_BASE="http://127.0.0.1:$DPORT" python3 "$ROOT/bench/measure.py" "http://127.0.0.1:$PORT" "$OUT" "${names[@]}"
