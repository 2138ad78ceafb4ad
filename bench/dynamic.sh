#!/usr/bin/env bash
# Dynamic responses: the Apache manual's pages rendered through PHP-FPM
# (mod_proxy_fcgi), coded on the fly by mod_deflate and mod_brotli at their
# defaults and by the module's GZIP_DISK_NG filter in zstd, br and gzip at
# its defaults, in one run, same pages and client. Prints, per case, the
# bytes sent over PAGES_N pages (total and median page, each as a ratio to
# mod_brotli's) and req/s (wrk, CONNS connections, the pages in turn,
# ROUNDS interleaved rounds of DURATION seconds, median), with ratios.
# The dcz and dcb rows: the rest of the manual (the pages not measured) is
# served as static files under on-demand compression with
# `GzipDiskNgSiteDictionary /dictionary.dat`, crawled until the site
# dictionary is trained; the PHP pages are then asked with its hash in
# `Available-Dictionary`, and the first dcz body is decoded with
# `zstd -D` against the served dictionary, the first dcb body checked
# against it by `gzip-disk-ng verify`.
#   bench/dynamic.sh            (PAGES_N=40 DURATION=3 ROUNDS=3 CONNS=8)
# FILTER_LEVELS="zstd=3 gzip=7" measures other levels than the defaults;
# DCZ_LEVELS (default "6 12 16") adds a dcz row at each of these levels;
# LOGLEVEL (default warn) is Apache's, SETTLE (300) bounds the crawl in s.
source "$(dirname "$0")/../scripts/lib.sh"
ensure_packages apache2-doc wrk php-fpm zstd
build
MANUAL=/usr/share/doc/apache2-doc/manual/en
PAGES_N="${PAGES_N:-40}"
WORK="$(mktemp -d /tmp/gzip-disk-ng-dynamic.XXXXXX)"
chmod 755 "$WORK"
FPM="$(ls /usr/sbin/php-fpm* | sort | tail -1)"
cleanup() {
    apache_stop "$WORK"
    [ -f "$WORK/fpm.pid" ] && kill "$(cat "$WORK/fpm.pid")" 2>/dev/null
    sleep 1; rm -rf "$WORK" 2>/dev/null || { sleep 2; rm -rf "$WORK"; }
}
trap cleanup EXIT
D="$WORK/docs"
mkdir -p "$D"
# Every page as a .php file: PHP sends its bytes as its output.
ls "$MANUAL"/mod/*.html | sort | head -n "$PAGES_N" >"$WORK/pages"
DCZ_LEVELS="${DCZ_LEVELS-6 12 16}"
for c in plain deflate brotli gdn $(for l in $DCZ_LEVELS; do echo "dcz$l"; done); do
    mkdir -p "$D/$c"
    while read -r p; do cp "$p" "$D/$c/$(basename "$p" .html).php"; done <"$WORK/pages"
done
# The static site the dictionary is trained from: the manual's other pages.
find "$MANUAL" -name '*.html' | sort | grep -vxFf "$WORK/pages" | while read -r p; do
    rel="${p#"$MANUAL"/}"
    mkdir -p "$D/site/$(dirname "$rel")"
    cp "$p" "$D/site/$rel"
done
mkdir -p "$WORK/cache"
chmod -R a+rX "$WORK"
# Apache's User writes the cache; the module refuses a root others could write.
[ "$(id -u)" -eq 0 ] && chown nobody "$WORK/cache"
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
LogLevel ${LOGLEVEL:-warn}
StartServers 2
ServerLimit 2
ThreadsPerChild 32
MaxRequestWorkers 64
KeepAlive On
MaxKeepAliveRequests 0
DocumentRoot $D
GzipDiskNgCacheRoot $WORK/cache
GzipDiskNgSiteDictionary /dictionary.dat
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
$(for l in $DCZ_LEVELS; do
    printf '<Directory %s>\n    AddOutputFilterByType GZIP_DISK_NG text/html\n    GzipDiskNgFilterLevels dcz=%s\n</Directory>\n' "$D/dcz$l" "$l"
done)
<Directory $D/site>
    SetHandler gzip-disk-ng
    GzipDiskNgOnDemand On
</Directory>
CONF
} >"$WORK/httpd.conf"
/usr/sbin/apache2 -d "$WORK" -f "$WORK/httpd.conf" -k start
apache_wait "$PORT"
echo "date: $(date -u +%F); machine: $(nproc) cores, $(uname -m); $(wc -l <"$WORK/pages") manual pages through $(basename "$FPM")"
URL="http://127.0.0.1:$PORT"
crawl_site_dictionary "$URL" "$WORK" "$D" "$D/site"
SITE_PAGES="$(find "$D/site" -name '*.html' | wc -l)"
echo "site dictionary: $(stat -c %s "$WORK/dictionary.dat") bytes, trained from the crawl of $SITE_PAGES other pages of the manual"
DCZ_LEVELS="$DCZ_LEVELS" DICTIONARY="$WORK/dictionary.dat" TOOL="$ROOT/target/release/gzip-disk-ng" python3 "$ROOT/bench/dynamic.py" "$URL" "$WORK/pages" "$D/gdn"
