#!/usr/bin/env bash
# What the module's own header fields cost a request: RFC 9530's
# Repr-Digest (a memo lookup of the version's digest, the field set, and
# Apache's header filter checking and writing it) and the marker header
# (Mod-Gzip-Disk-Ng). bench/budget.sh's measurement (Debian's
# configuration, instructions per steady request inside
# ap_process_async_request under callgrind) run three times on the module
# built with its bench-knobs feature: as it is, with
# GZIP_DISK_NG_NO_REPR_DIGEST, and with GZIP_DISK_NG_NO_MARKER set.
#
#   bench/fields_cost.sh
#
# Prints, per path, the instructions of each run and what each field
# costs (the difference), also as a share of core's request.
source "$(dirname "$0")/../scripts/lib.sh"
build
(cd "$ROOT" && CARGO_TARGET_DIR="$ROOT/target/bench-knobs" \
    cargo build --release --locked -p mod_gzip_disk_ng --lib --features bench-knobs)
KNOBS="$ROOT/target/bench-knobs/release/libmod_gzip_disk_ng.so"
OUT="$(mktemp -d /tmp/gzip-disk-ng-fields.XXXXXX)"
trap 'rm -rf "$OUT"' EXIT
run() {
    local name="$1"
    shift
    env "$@" GZIP_DISK_NG_MODULE="$KNOBS" bash "$ROOT/bench/budget.sh" --no-build \
        >"$OUT/$name" 2>&1 || true
    grep -q '^gzip ' "$OUT/$name" || { cat "$OUT/$name" >&2; echo "fields_cost: $name gave no figures" >&2; exit 1; }
}
run all
run nodigest GZIP_DISK_NG_NO_REPR_DIGEST=1
run nomarker GZIP_DISK_NG_NO_MARKER=1
row() { awk -v p="$1" '$1 == p { print $2 }' "$OUT/$2"; }
core="$(row core all)"
echo "fields_cost $(date -u +%Y-%m-%d): instructions per steady request (bench/budget.sh's measurement, bench-knobs build); core $core"
printf '%-10s %10s %12s %12s %14s %14s\n' path all no-digest no-marker Repr-Digest marker
for p in gzip browser cached delta decoded; do
    a="$(row "$p" all)" d="$(row "$p" nodigest)" m="$(row "$p" nomarker)"
    printf '%-10s %10d %12d %12d %7d %5.1f%% %7d %5.1f%%\n' "$p" "$a" "$d" "$m" \
        "$((a - d))" "$(echo "100 * ($a - $d) / $core" | bc -l)" \
        "$((a - m))" "$(echo "100 * ($a - $m) / $core" | bc -l)"
done
