#!/usr/bin/env bash
# Times `gzip-disk-ng compress` (gzip+brotli+zstd) against the sequential
# CLI loop it replaces, on Debian's apache2-doc manual, then times an
# incremental rerun. Usage: bench/publish.sh [TREE]
source "$(dirname "$0")/../scripts/lib.sh"
cd "$ROOT"
TREE=${1:-/usr/share/doc/apache2-doc/manual}
ensure_packages apache2-doc time
build >/dev/null
BIN=${CARGO_TARGET_DIR:-target}/release/gzip-disk-ng

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# Symlinks (the Debian tree has many) stay links; neither side follows them.
cp -a "$TREE" "$WORK/tool"
cp -a "$TREE" "$WORK/cli"

# /usr/bin/time: wall seconds, then user and system CPU seconds.
TIME="/usr/bin/time -f %e:%U:%S"
$TIME -o "$WORK/t.tool" "$BIN" compress --quiet "$WORK/tool" >"$WORK/tool.log"
$TIME -o "$WORK/t.inc" "$BIN" compress --quiet "$WORK/tool" >"$WORK/tool2.log"

# The same selection the tool compresses, for a fair comparison.
find "$WORK/tool" -type f \( -name '*.gz' -o -name '*.br' -o -name '*.zst' \) |
    sed -e "s|^$WORK/tool/||" -e 's/\.\(gz\|br\|zst\)$//' | sort -u |
    while IFS= read -r f; do if [ -f "$WORK/tool/$f" ]; then echo "$f"; fi; done >"$WORK/list"

cat >"$WORK/cli.sh" <<'LOOP'
while IFS= read -r f; do
    gzip -9 -k -f "$1/$f"
    brotli -q 11 -k -f "$1/$f"
    zstd -19 -q -k -f "$1/$f"
done <"$2"
LOOP
$TIME -o "$WORK/t.cli" sh "$WORK/cli.sh" "$WORK/cli" "$WORK/list"

size() { # dir suffix
    (cd "$1" && sed "s/\$/$2/" "$WORK/list" | tr '\n' '\0' | xargs -0 stat -c %s 2>/dev/null) |
        awk '{s+=$1} END {print s+0}'
}
orig=$( (cd "$WORK/cli" && tr '\n' '\0' <"$WORK/list" | xargs -0 stat -c %s) | awk '{s+=$1} END {print s}')
files=$(wc -l <"$WORK/list")
wall() { cut -d: -f1 "$1"; }
cpu() { awk -F: '{print $2 + $3}' "$1"; }
tool_t=$(wall "$WORK/t.tool")
inc_t=$(wall "$WORK/t.inc")
cli_t=$(wall "$WORK/t.cli")

echo "tree: $TREE ($files compressible files, $orig bytes), $(nproc) cores"
printf 'gzip-disk-ng compress: %8.2f s wall, %8.2f s CPU\n' "$tool_t" "$(cpu "$WORK/t.tool")"
printf 'sequential CLI loop:   %8.2f s wall, %8.2f s CPU\n' "$cli_t" "$(cpu "$WORK/t.cli")"
printf 'speed-up:              %8.2fx\n' "$(echo "$cli_t / $tool_t" | bc -l)"
printf 'incremental rerun:     %8.3f s wall\n' "$inc_t"
# On a shared machine wall time suffers; the load average says how much.
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %12s %12s\n' coding tool cli
for s in .gz .br .zst; do
    printf '%-6s %12d %12d\n' "$s" "$(size "$WORK/tool" $s)" "$(size "$WORK/cli" $s)"
done
echo "--- tool summary"
tail -n 8 "$WORK/tool.log"
echo "--- rerun summary"
tail -n 8 "$WORK/tool2.log"
"$BIN" verify --quiet "$WORK/tool" | tail -n 2
# .br files the module can pad (an empty last meta-block at any bit).
if /usr/bin/python3 -c 'import brotli' 2>/dev/null; then
    printf 'brotli endings, tool: '
    bench/brotli_endings.py "$WORK/tool" <"$WORK/list"
    printf 'brotli endings, cli:  '
    bench/brotli_endings.py "$WORK/cli" <"$WORK/list"
fi
