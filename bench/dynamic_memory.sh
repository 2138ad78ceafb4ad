#!/usr/bin/env bash
# Memory per concurrent stream of the GZIP_DISK_NG filter: STREAMS clients
# (default 24) each hold a server-sent-events stream from a CGI open while
# the Apache children's resident memory is read (VmRSS, summed), once with
# no coding and once per coding; prints the growth per stream in KiB.
# mod_deflate and mod_brotli are measured the same way, for comparison.
# The dcz and dcb cases announce the site dictionary, trained first from
# Debian's Apache manual served as files under on-demand compression
# (crawled until it is served and settled, at most SETTLE s, 300).
#   bench/dynamic_memory.sh
source "$(dirname "$0")/../scripts/lib.sh"
ensure_packages apache2-doc
build
STREAMS="${STREAMS:-24}"
WORK="$(mktemp -d /tmp/gzip-disk-ng-dynmem.XXXXXX)"
chmod 755 "$WORK"
trap 'apache_stop "$WORK"; sleep 1; rm -rf "$WORK"' EXIT
D="$WORK/docs"
mkdir -p "$D"
cat >"$D/events.cgi" <<'CGI'
#!/usr/bin/python3
import sys, time
sys.stdout.write('Content-Type: text/event-stream\r\n\r\n')
sys.stdout.flush()
page = open('/usr/share/doc/apache2-doc/manual/en/mod/core.html').read()
for i in range(40):
    sys.stdout.write('data: %s\n\n' % page[i * 4000:(i + 1) * 4000].replace('\n', ' '))
    sys.stdout.flush()
    time.sleep(0.25)
CGI
chmod 755 "$D/events.cgi"
for c in deflate brotli gdn plain; do mkdir -p "$D/$c"; cp "$D/events.cgi" "$D/$c/"; done
MANUAL=/usr/share/doc/apache2-doc/manual/en
cp -r "$MANUAL" "$D/site"
mkdir -p "$WORK/cache"
chmod -R a+rX "$WORK"
# Apache's User writes the cache; the module refuses a root others could write.
[ "$(id -u)" -eq 0 ] && chown nobody "$WORK/cache"
PORT="${PORT:-18680}"
# Stops the server and waits (10 s at most) until its processes, the
# on-demand compressor among them, have left the port.
stop_and_wait() {
    local pid
    pid="$(cat "$WORK/httpd.pid")"
    apache_stop "$WORK"
    for _ in $(seq 100); do ss -Hltn "sport = :$PORT" | grep -q . || return 0; sleep 0.1; done
    echo "port $PORT still taken after the server stopped: $(ss -Hltnp "sport = :$PORT")" >&2
    exit 1
}
{
    apache_conf_head "$WORK" "$PORT" event filter deflate brotli cgid
    cat <<CONF
StartServers 1
ServerLimit 1
ThreadsPerChild 64
MaxRequestWorkers 64
DocumentRoot $D
GzipDiskNgCacheRoot $WORK/cache
GzipDiskNgSiteDictionary /dictionary.dat
<Directory $D>
    Require all granted
    Options +ExecCGI
    <Files "events.cgi">
        SetHandler cgi-script
    </Files>
</Directory>
<Directory $D/site>
    SetHandler gzip-disk-ng
    GzipDiskNgOnDemand On
</Directory>
<Directory $D/deflate>
    AddOutputFilterByType DEFLATE text/event-stream
</Directory>
<Directory $D/brotli>
    AddOutputFilterByType BROTLI_COMPRESS text/event-stream
</Directory>
<Directory $D/gdn>
    AddOutputFilterByType GZIP_DISK_NG text/event-stream
</Directory>
CONF
} >"$WORK/httpd.conf"
# The site dictionary: the manual crawled until it is served and a whole
# crawl leaves it as it is.
/usr/sbin/apache2 -d "$WORK" -f "$WORK/httpd.conf" -k start
apache_wait "$PORT"
URL="http://127.0.0.1:$PORT"
crawl_site_dictionary "$URL" "$WORK" "$D" "$D/site"
stop_and_wait
DICT=":$(openssl dgst -sha256 -binary "$WORK/dictionary.dat" | base64):"
echo "date: $(date -u +%F); $STREAMS streams of server-sent events held open at once, a fresh server per case"
echo "site dictionary: $(stat -c %s "$WORK/dictionary.dat") bytes"
printf '%-28s %14s\n' case "KiB per stream"
while IFS='|' read -r label path coding dict; do
    /usr/sbin/apache2 -d "$WORK" -f "$WORK/httpd.conf" -k start
    apache_wait "$PORT"
    /usr/bin/python3 "$ROOT/bench/dynamic_memory.py" "$PORT" "$(cat "$WORK/httpd.pid")" "$STREAMS" "$label" "$path" "$coding" ${dict:+"$DICT"}
    stop_and_wait
done <<'CASES'
mod_deflate gzip|/deflate/events.cgi|gzip
mod_brotli br|/brotli/events.cgi|br
GZIP_DISK_NG zstd|/gdn/events.cgi|zstd
GZIP_DISK_NG br|/gdn/events.cgi|br
GZIP_DISK_NG gzip|/gdn/events.cgi|gzip
GZIP_DISK_NG dcz|/gdn/events.cgi|dcz, zstd|dictionary
GZIP_DISK_NG dcb|/gdn/events.cgi|dcb, br|dictionary
CASES
