#!/usr/bin/env bash
# Memory per concurrent stream of the GZIP_DISK_NG filter: STREAMS clients
# (default 24) each hold a server-sent-events stream from a CGI open while
# the Apache children's resident memory is read (VmRSS, summed), once with
# no coding and once per coding; prints the growth per stream in KiB.
# mod_deflate and mod_brotli are measured the same way, for comparison.
#   bench/dynamic_memory.sh
source "$(dirname "$0")/../scripts/lib.sh"
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
chmod -R a+rX "$WORK"
PORT="${PORT:-18680}"
{
    apache_conf_head "$WORK" "$PORT" event filter deflate brotli cgid
    cat <<CONF
StartServers 1
ServerLimit 1
ThreadsPerChild 64
MaxRequestWorkers 64
DocumentRoot $D
<Directory $D>
    Require all granted
    Options +ExecCGI
    SetHandler cgi-script
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
echo "date: $(date -u +%F); $STREAMS streams of server-sent events held open at once, a fresh server per case"
printf '%-28s %14s\n' case "KiB per stream"
while IFS='|' read -r label path coding; do
    /usr/sbin/apache2 -d "$WORK" -f "$WORK/httpd.conf" -k start
    apache_wait "$PORT"
    /usr/bin/python3 "$ROOT/bench/dynamic_memory.py" "$PORT" "$(cat "$WORK/httpd.pid")" "$STREAMS" "$label" "$path" "$coding"
    apache_stop "$WORK"
    sleep 1
done <<'CASES'
mod_deflate gzip|/deflate/events.cgi|gzip
mod_brotli br|/brotli/events.cgi|br
GZIP_DISK_NG zstd|/gdn/events.cgi|zstd
GZIP_DISK_NG br|/gdn/events.cgi|br
GZIP_DISK_NG gzip|/gdn/events.cgi|gzip
CASES
