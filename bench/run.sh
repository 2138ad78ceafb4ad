#!/usr/bin/env bash
# Benchmarks the module against Apache's own ways of serving the same pages,
# in one run, with the same clients (wrk for HTTP/1.1, h2load for h2c) on
# loopback: core serving the .gz bytes, the mod_rewrite+mod_headers recipe,
# mod_deflate and mod_brotli on the fly, mod_deflate's INFLATE filter, and
# nginx gzip_static/gunzip when nginx is installed. Writes results.tsv and
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
    [ -f "$WORK/httpd.pid" ] && kill "$(cat "$WORK/httpd.pid")" 2>/dev/null
    [ -f "$WORK/nginx.pid" ] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null
    sleep 1; rm -rf "$WORK"
}
trap cleanup EXIT
D="$WORK/docs"
mkdir -p "$D"/{mod,modjit,modonlygz,modonlyzst,core,recipe,deflate,brotli,inflate,ngstatic,nggunzip}
names=()
for p in $PAGES; do
    n="$(basename "$p")"
    names+=("$n")
    cp "$p" "$D/mod/$n"
    gzip -9 -n -c "$p" >"$D/mod/$n.gz"
    brotli -q 11 -c "$p" >"$D/mod/$n.br"
    zstd -19 -q -c "$p" >"$D/mod/$n.zst"
    touch -r "$D/mod/$n" "$D/mod/$n".*
    cp -p "$D/mod/$n" "$D/mod/$n".{gz,zst} "$D/modjit/"
    cp "$D/mod/$n.gz" "$D/modonlygz/"
    cp "$D/mod/$n.zst" "$D/modonlyzst/"
    cp "$D/mod/$n.gz" "$D/core/"
    cp -p "$D/mod/$n" "$D/mod/$n.gz" "$D/recipe/"
    cp "$D/mod/$n.gz" "$D/inflate/"
    cp "$p" "$D/deflate/$n"
    cp "$p" "$D/brotli/$n"
    cp -p "$D/mod/$n" "$D/mod/$n.gz" "$D/ngstatic/"
    cp "$D/mod/$n.gz" "$D/nggunzip/"
done
chmod -R a+rX "$WORK"
PORT="${PORT:-18480}"
{
    apache_conf_head "$WORK" "$PORT" event filter deflate brotli rewrite headers http2
    cat <<CONF
Protocols h2c http/1.1
H2MaxSessionStreams 100
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
<Directory $D/modonlygz>
    SetHandler gzip-disk-ng
</Directory>
<Directory $D/modonlyzst>
    SetHandler gzip-disk-ng
</Directory>
<Directory $D/recipe>
    RewriteEngine On
    RewriteCond %{HTTP:Accept-Encoding} gzip
    RewriteCond %{REQUEST_FILENAME}.gz -s
    RewriteRule ^(.+)\$ \$1.gz [QSA]
    <FilesMatch "\.html\.gz\$">
        ForceType text/html
        Header set Content-Encoding gzip
        Header append Vary Accept-Encoding
    </FilesMatch>
</Directory>
<Directory $D/deflate>
    SetOutputFilter DEFLATE
</Directory>
<Directory $D/brotli>
    SetOutputFilter BROTLI_COMPRESS
</Directory>
<Directory $D/inflate>
    RemoveType .gz
    AddEncoding gzip .gz
    SetOutputFilter INFLATE
</Directory>
CONF
} >"$WORK/httpd.conf"
/usr/sbin/apache2 -d "$WORK" -f "$WORK/httpd.conf" -k start
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done

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
python3 "$ROOT/bench/measure.py" "http://127.0.0.1:$PORT" "$OUT" "${names[@]}"
