#!/usr/bin/env bash
# Memory of the decompress path: one prefork child serves a warm-up request,
# then a sibling that decodes to SIZE_MB (default 1024) MiB; the child's
# peak RSS (VmHWM) growth is what one streaming request costs, whatever the
# file size. Run for gzip and zstd siblings; the warm-up is served
# precompressed so no decoder memory is reused from it.
source "$(dirname "$0")/../scripts/lib.sh"
ensure_packages
build
SIZE_MB="${SIZE_MB:-1024}"
WORK="$(mktemp -d /tmp/gzip-disk-ng-mem.XXXXXX)"
chmod 755 "$WORK"
trap 'apache_stop "$WORK"; sleep 1; rm -rf "$WORK"' EXIT
D="$WORK/docs"
mkdir -p "$D"
src=/usr/share/doc/apache2-doc/manual/en/mod/core.html
[ -f "$src" ] || src=/etc/services
# A real page repeated: SIZE_MB MiB decoded, small on disk.
gen() { set +o pipefail; local SIZE_MB="${SIZE_MB}"; { while :; do cat "$src" 2>/dev/null || break; done; } | head -c "$((SIZE_MB << 20))"; }
gen | gzip -1 >"$D/big.txt.gz"
gen | zstd -q -3 --no-progress >"$D/bigz.txt.zst"
echo small >"$D/warm.txt"; gzip -k "$D/warm.txt"; rm "$D/warm.txt"
# 1 MiB versions: the first decode pays the decoder's buffers and code pages.
SIZE_MB=1 gen | gzip -1 >"$D/one.txt.gz"
SIZE_MB=1 gen | zstd -q -3 --no-progress >"$D/onez.txt.zst"
chmod -R a+rX "$WORK"
PORT="${PORT:-18495}"
{
    apache_conf_head "$WORK" "$PORT" prefork
    cat <<CONF
StartServers 1
MinSpareServers 1
MaxSpareServers 1
MaxRequestWorkers 1
KeepAlive Off
DocumentRoot $D
CONF
    conf_handler "$D" "Require all granted"
} >"$WORK/httpd.conf"
/usr/sbin/apache2 -d "$WORK" -f "$WORK/httpd.conf" -k start
apache_wait "$PORT"
URL="http://127.0.0.1:$PORT"
child() { pgrep -P "$(cat "$WORK/httpd.pid")" | head -1; }
hwm() { awk '/VmHWM/{print $2}' "/proc/$(child)/status"; }
curl -s -o /dev/null -H "Accept-Encoding: gzip" "$URL/warm.txt"
echo "date: $(date -u +%F); decompress path memory, one prefork child, ${SIZE_MB} MiB decoded per request"
echo "peak RSS (VmHWM) of the child: after a precompressed request, after decoding 1 MiB, after decoding ${SIZE_MB} MiB"
for pair in "one.txt big.txt" "onez.txt bigz.txt"; do
    set -- $pair
    h0=$(hwm)
    curl -s -o /dev/null "$URL/$1"
    h1=$(hwm)
    got=$(curl -s -o /dev/null -w '%{size_download}' "$URL/$2")
    h2=$(hwm)
    printf '%-9s %6s kB -> %6s kB (first decode: +%s kB) -> %6s kB (%s bytes decoded: +%s kB)\n' \
        "$2" "$h0" "$h1" "$((h1 - h0))" "$h2" "$got" "$((h2 - h1))"
done
