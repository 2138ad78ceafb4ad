#!/usr/bin/env bash
# The budget's limits move only in commits of their own: fails when a
# commit raises a limit in bench/budget.txt (a ratio, a heap-call count,
# core's recorded count or its tolerance) and changes code (crates/, src/,
# Cargo.toml, Cargo.lock) in the same commit, so no change can pay for
# itself by raising the bar it is measured against. Walks the whole
# history (git log), each commit against its parent; a merge raises a
# limit only where its value is above every parent's (what its branches
# raised was checked in their own commits). Run by scripts/test.
#
#   bench/budget-guard.sh [REV]   check the history of REV (default HEAD)
set -euo pipefail
cd "$(dirname "$0")/.."
FILE=bench/budget.txt
CODE=(crates src Cargo.toml Cargo.lock)
rev="${1:-HEAD}"
git rev-parse --git-dir >/dev/null 2>&1 || { echo "budget-guard: not a git checkout" >&2; exit 1; }
# A shallow clone hides the commits that raised a limit: nothing to pass on.
if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
    echo "budget-guard: shallow clone, the history of $FILE is incomplete (git fetch --unshallow)" >&2
    exit 1
fi

# The limits of FILE at COMMIT, one "name column value" a line.
limits() {
    git show "$1:$FILE" 2>/dev/null | awk '!/^#/ && NF > 1 {
        for (i = 2; i <= NF; i++) { v = $i; sub(/%$/, "", v); print $1, i, v } }'
}

# The limits of NEW above those of every commit in OLDS, one a line.
raised() { # new old...
    local new="$1" o
    shift
    {
        for o in "$@"; do limits "$o" | sed 's/^/old /'; done
        limits "$new" | sed 's/^/new /'
    } | awk '$1 == "old" { k = $2 " " $3; if (!(k in max) || $4 + 0 > max[k]) max[k] = $4 + 0; next }
             { k = $2 " " $3; if ((k in max) && $4 + 0 > max[k]) print $2 " column " $3 ": " max[k] " -> " $4 }'
}

checked=0 failed=0
while read -r commit parents; do
    [ -n "$parents" ] || continue # the commit that made the file
    checked=$((checked + 1))
    # shellcheck disable=SC2086
    up="$(raised "$commit" $parents)"
    [ -n "$up" ] || continue
    # shellcheck disable=SC2086
    set -- $parents
    code="$(git diff --name-only "$1" "$commit" -- "${CODE[@]}")"
    if [ $# -gt 1 ] || [ -z "$code" ]; then
        # A merge's own raise, or a raise in a commit of its own.
        [ $# -gt 1 ] && [ -n "$code" ] && {
            echo "budget-guard: merge $(git log -1 --format='%h %s' "$commit") raises $FILE beyond its parents:" >&2
            echo "$up" | sed 's/^/  /' >&2
            failed=$((failed + 1))
        }
        continue
    fi
    echo "budget-guard: $(git log -1 --format='%h %s' "$commit") raises $FILE and changes code:" >&2
    echo "$up" | sed 's/^/  raised: /' >&2
    echo "$code" | head -5 | sed 's/^/  changed: /' >&2
    failed=$((failed + 1))
done < <(git log --full-history --format='%H %P' "$rev" -- "$FILE")
echo "budget-guard: $checked commits changing $FILE checked, $failed raise a limit with code"
[ "$failed" -eq 0 ]
