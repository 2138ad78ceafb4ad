#!/usr/bin/env bash
# Deterministic per-request cost: instructions inside ap_process_async_request
# under callgrind (Apache in -X mode), for the module's precompressed path
# against core's handler serving the same .gz bytes, plus the decompress
# path (from the .gz, and from a .zst made by `zstd -19`) against
# mod_deflate's INFLATE. N steady requests each: the first request after
# start-up is not counted.
source "$(dirname "$0")/../scripts/lib.sh"
ensure_packages apache2-doc valgrind
build
N="${N:-200}"
PAGE="${PAGE:-/usr/share/doc/apache2-doc/manual/en/mod/core.html}"
WORK="$(mktemp -d /tmp/gzip-disk-ng-cg.XXXXXX)"
chmod 755 "$WORK"
trap "" EXIT
D="$WORK/docs"
mkdir -p "$D"/{mod,modjit,modonly,modzst,modfiles,modcheck,core,inflate}
n="$(basename "$PAGE")"
cp "$PAGE" "$D/mod/$n"
gzip -9 -n -c "$PAGE" >"$D/mod/$n.gz"
touch -r "$D/mod/$n" "$D/mod/$n.gz"
for d in modjit modfiles modcheck; do cp -p "$D/mod/$n" "$D/mod/$n.gz" "$D/$d/"; done
cp "$D/mod/$n.gz" "$D/modonly/"
zstd -19 -q -c "$PAGE" >"$D/modzst/$n.zst"
cp "$D/mod/$n.gz" "$D/core/"
cp "$D/mod/$n.gz" "$D/inflate/"
chmod -R a+rX "$WORK"
# Apache drops privileges even in -X mode: callgrind writes as that user.
mkdir -m 1777 "$WORK/out"
PORT="${PORT:-18490}"
{
    apache_conf_head "$WORK" "$PORT" event deflate
    cat <<CONF
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
<Directory $D/modzst>
    SetHandler gzip-disk-ng
</Directory>
# Sections that match neither name: the sibling needs no access check.
<Directory $D/modfiles>
    SetHandler gzip-disk-ng
    <FilesMatch "\.(png|jpe?g|gif)$">
        Require all denied
    </FilesMatch>
</Directory>
# A section for the sibling's name only: httpd is asked (a subrequest).
<Directory $D/modcheck>
    SetHandler gzip-disk-ng
    <FilesMatch "\.gz$">
        Require all granted
    </FilesMatch>
</Directory>
<Directory $D/inflate>
    RemoveType .gz
    AddEncoding gzip .gz
    SetOutputFilter INFLATE
</Directory>
CONF
} >"$WORK/httpd.conf"

measure() { # path accept-encoding -> instructions per steady request
    local path="$1" ae="$2" out="$WORK/out/cg.$RANDOM"
    # Created now, it stays writable after Apache drops privileges.
    install -m 666 /dev/null "$out"
    [ "$(id -u)" -eq 0 ] && chown nobody "$out"
    # A dump before each request: out.1 is empty, out.2 the readiness
    # probe, out.3 the first request (per-file-version caches, lazy
    # set-up), out.4 on and the final dump the N steady requests counted.
    valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect='ap_process_async_request' \
        --dump-before='ap_process_async_request' \
        /usr/sbin/apache2 -X -d "$WORK" -f "$WORK/httpd.conf" >"$WORK/vg.log" 2>&1 &
    local vg=$!
    for _ in $(seq 300); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.2; done
    local urls=()
    for _ in $(seq $((N + 1))); do urls+=("http://127.0.0.1:$PORT$path" -o /dev/null); done
    curl -s -H "Accept-Encoding: $ae" "${urls[@]}"
    kill -TERM "$(cat "$WORK/httpd.pid")"
    wait "$vg" 2>/dev/null || true
    local f total=0 n=0
    for f in "$out" "$out".*; do
        case "$f" in "$out".1 | "$out".2 | "$out".3) continue ;; esac
        total=$((total + $(awk '/^(summary|totals):/ { print $2; exit }' "$f")))
        n=$((n + 1))
    done
    [ "$n" -eq "$N" ] || { echo "callgrind: $n dumps for $N requests" >&2; exit 1; }
    echo $((total / N))
}

core=$(measure "/core/$n.gz" "gzip")
mod=$(measure "/mod/$n" "gzip")
jit=$(measure "/modjit/$n" "gzip")
files=$(measure "/modfiles/$n" "gzip")
check=$(measure "/modcheck/$n" "gzip")
infl=$(measure "/inflate/$n.gz" "")
dec=$(measure "/modonly/$n" "")
zdec=$(measure "/modzst/$n" "")
echo "callgrind, instructions per request inside ap_process_async_request, $N requests, $n ($(stat -c %s "$PAGE") bytes)"
printf '%-40s %12s %8s\n' case instr/req ratio
printf '%-40s %12d %8s\n' "core handler, same .gz bytes" "$core" 1.00
printf '%-40s %12d %8.3f  (core/this: speed vs core)\n' "module precompressed gzip" "$mod" "$(echo "$core/$mod" | bc -l)"
printf '%-40s %12d %8.3f  (plain/this)\n' "module gzip, <FilesMatch> for neither" "$files" "$(echo "$mod/$files" | bc -l)"
printf '%-40s %12d %8.3f  (plain/this)\n' "module gzip, <FilesMatch> for .gz" "$check" "$(echo "$mod/$check" | bc -l)"
printf '%-40s %12d %8.3f  (off/on)\n' "module gzip, GzipDiskNgJitter 32" "$jit" "$(echo "$mod/$jit" | bc -l)"
printf '%-40s %12d %8s\n' "mod_deflate INFLATE" "$infl" 1.00
printf '%-40s %12d %8.3f  (inflate/this)\n' "module decompress from .gz" "$dec" "$(echo "$infl/$dec" | bc -l)"
printf '%-40s %12d %8.3f  (inflate/this)\n' "module decompress from .zst" "$zdec" "$(echo "$infl/$zdec" | bc -l)"
