#!/usr/bin/env bash
# Where the precompressed path's instructions go, step by step, beside
# core's handler sending the .gz: bench/budget.sh's measurement (Debian's
# configuration, mod_deflate.html) with its callgrind dumps kept, then
# bench/steps.py on one steady request of each; then bench/reach.py: the
# workspace's source files one precompressed request runs code of, and how
# many calls enter the handler's own file from the others.
#
#   bench/steps.sh            build, measure, print the tables
#   bench/steps.sh --no-build as above, using the module already built
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
BUDGET_KEEP=1 bash "$ROOT/bench/budget.sh" "$@" 2>&1 | tee "$log" || true
out="$(sed -n 's/^budget: dumps kept in //p' "$log")"
[ -n "$out" ] && [ -f "$out/index" ] || { echo "steps: no dumps" >&2; exit 1; }
# The cheapest steady request's dump of a path (the first three are
# set-up), as bench/budget.sh counts: the first listed for the path, which
# for core's .gz is core without the module.
dump() {
    local base
    base="$(awk -F'|' -v p="$1" -v a="$2" '$1 == p && $2 == a { print $3; exit }' "$out/index")"
    for f in "$base".*; do
        case "$f" in "$base".1 | "$base".2 | "$base".3) continue ;; esac
        echo "$(awk '/^(summary|totals):/ { print $2; exit }' "$f") $f"
    done | sort -n | head -1 | cut -d' ' -f2
}
core="$(dump /core/mod_deflate.html.gz gzip)"
for ae in gzip "gzip, deflate, br, zstd"; do
    echo
    echo "Accept-Encoding: $ae (instructions, the cheapest steady request)"
    python3 "$ROOT/bench/steps.py" "$core" "$(dump /mod/mod_deflate.html "$ae")" module
done
echo
echo "One precompressed request (Accept-Encoding: gzip): the workspace's files it runs code of"
python3 "$ROOT/bench/reach.py" "$(dump /mod/mod_deflate.html gzip)"
rm -rf "$(dirname "$out")"
