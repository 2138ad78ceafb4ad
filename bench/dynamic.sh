#!/usr/bin/env bash
# Dynamic responses: the Apache manual's pages rendered through PHP-FPM
# (mod_proxy_fcgi), coded on the fly by mod_deflate and mod_brotli at their
# defaults and by the module's GZIP_DISK_NG filter in zstd, br and gzip at
# its defaults, in one run, same pages and client. Prints, per case, the
# bytes sent over PAGES_N pages (total and median page, each as a ratio to
# mod_brotli's) and req/s (wrk, CONNS connections, the pages in turn,
# ROUNDS interleaved rounds of DURATION seconds, median), with ratios.
#   bench/dynamic.sh            (PAGES_N=40 DURATION=3 ROUNDS=3 CONNS=8)
# FILTER_LEVELS="zstd=3 gzip=7" measures other levels than the defaults.
source "$(dirname "$0")/../scripts/lib.sh"
ensure_packages apache2-doc wrk php-fpm
build
MANUAL=/usr/share/doc/apache2-doc/manual/en
PAGES_N="${PAGES_N:-40}"
WORK="$(mktemp -d /tmp/gzip-disk-ng-dynamic.XXXXXX)"
chmod 755 "$WORK"
FPM="$(ls /usr/sbin/php-fpm* | sort | tail -1)"
cleanup() {
    apache_stop "$WORK"
    [ -f "$WORK/fpm.pid" ] && kill "$(cat "$WORK/fpm.pid")" 2>/dev/null
    sleep 1; rm -rf "$WORK"
}
trap cleanup EXIT
D="$WORK/docs"
mkdir -p "$D"
# Every page as a .php file: PHP sends its bytes as its output.
ls "$MANUAL"/mod/*.html | sort | head -n "$PAGES_N" >"$WORK/pages"
for c in plain deflate brotli gdn; do
    mkdir -p "$D/$c"
    while read -r p; do cp "$p" "$D/$c/$(basename "$p" .html).php"; done <"$WORK/pages"
done
chmod -R a+rX "$WORK"
FPM_USER=""
[ "$(id -u)" -eq 0 ] && FPM_USER=$'user = nobody\ngroup = nogroup'
cat >"$WORK/fpm.conf" <<FPMCONF
[global]
pid = $WORK/fpm.pid
error_log = $WORK/fpm.log
[www]
listen = $WORK/fpm.sock
listen.mode = 0666
$FPM_USER
pm = static
pm.max_children = 8
FPMCONF
"$FPM" -n -y "$WORK/fpm.conf"
for _ in $(seq 50); do [ -S "$WORK/fpm.sock" ] && break; sleep 0.1; done
PORT="${PORT:-18580}"
{
    apache_conf_head "$WORK" "$PORT" event filter deflate brotli proxy proxy_fcgi
    cat <<CONF
StartServers 2
ServerLimit 2
ThreadsPerChild 32
MaxRequestWorkers 64
KeepAlive On
MaxKeepAliveRequests 0
DocumentRoot $D
<Directory $D>
    Require all granted
    <FilesMatch "\.php$">
        SetHandler "proxy:unix:$WORK/fpm.sock|fcgi://localhost"
    </FilesMatch>
</Directory>
<Directory $D/deflate>
    AddOutputFilterByType DEFLATE text/html
</Directory>
<Directory $D/brotli>
    AddOutputFilterByType BROTLI_COMPRESS text/html
</Directory>
<Directory $D/gdn>
    AddOutputFilterByType GZIP_DISK_NG text/html
    ${FILTER_LEVELS:+GzipDiskNgFilterLevels $FILTER_LEVELS}
</Directory>
CONF
} >"$WORK/httpd.conf"
/usr/sbin/apache2 -d "$WORK" -f "$WORK/httpd.conf" -k start
apache_wait "$PORT"
echo "date: $(date -u +%F); machine: $(nproc) cores, $(uname -m); $(wc -l <"$WORK/pages") manual pages through $(basename "$FPM")"
python3 "$ROOT/bench/dynamic.py" "http://127.0.0.1:$PORT" "$WORK/pages"
