#!/bin/sh
# Dictionary transport (RFC 9842): bytes on the wire for a returning
# visitor, from the tool's deltas beside br, zstd and `zstd --patch-from`.
#
# 1. Same path, new content: two real updates from the npm registry
#    (jquery 3.6.0 -> 3.7.1, react-dom 18.2.0 -> 18.3.1), published with
#    `compress --delta-versions 1` before and after the update.
# 2. Site dictionary: `train` on 120 pages of Debian's Apache manual
#    (64 KB), then `compress --dictionary` on the other 124.
#
# Usage: bench/dictionary.sh   (needs npm, zstd, brotli, apache2-doc)
set -eu
cd "$(dirname "$0")/.."
MANUAL=/usr/share/doc/apache2-doc/manual/en
for tool in brotli zstd npm; do
    command -v "$tool" >/dev/null || apt-get install -y "$tool"
done
[ -d "$MANUAL" ] || apt-get install -y apache2-doc
cargo build --release --bin gzip-disk-ng >/dev/null
BIN=$(pwd)/${CARGO_TARGET_DIR:-target}/release/gzip-disk-ng
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/gzip-disk-ng-bench
mkdir -p "$CACHE"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

size() { wc -c <"$1" | tr -d ' '; }

# npm tarball file of PACKAGE@VERSION, fetched once.
tarball() {
    t="$CACHE/$1-$2.tgz"
    [ -f "$t" ] || (cd "$CACHE" && npm pack --silent "$1@$2" >/dev/null)
    echo "$t"
}

# One update: PACKAGE OLD NEW PATH-IN-PACKAGE.
update() {
    d="$WORK/$1"
    mkdir -p "$d/old" "$d/new" "$d/site"
    tar -xzf "$(tarball "$1" "$2")" -C "$d/old"
    tar -xzf "$(tarball "$1" "$3")" -C "$d/new"
    old="$d/old/package/$4" new="$d/new/package/$4"
    f="$d/site/$(basename "$4")"
    cp "$old" "$f"
    touch -d '2 days ago' "$f"
    "$BIN" compress --quiet --delta-versions 1 "$d/site" >/dev/null
    cp "$new" "$f"
    "$BIN" compress --quiet --delta-versions 1 "$d/site" >/dev/null
    dcz=$(ls "$f".*.dcz)
    dcb=$(ls "$f".*.dcb)
    br=$(brotli -c -q 11 "$new" | wc -c)
    zst=$(zstd -19 -c -q "$new" | wc -c)
    patch=$(($(zstd -19 -c -q --patch-from="$old" "$new" 2>/dev/null | wc -c) + 40))
    tool=$(size "$dcz")
    printf '| %s %s → %s, `%s` | %s | %s | %s | %s | %s | %s (%s×) | %s (%s×) |\n' \
        "$1" "$2" "$3" "$4" "$(size "$new")" "$br" "$(size "$f.br")" "$zst" \
        "$patch" "$tool" "$(echo "scale=3; $tool / $br" | bc)" \
        "$(size "$dcb")" "$(echo "scale=3; $(size "$dcb") / $br" | bc)"
    "$BIN" verify --quiet "$d/site" >/dev/null
}

echo '| update | original | br -q 11 | tool br | zstd -19 | zstd -19 --patch-from + 40 | tool dcz (/ br -q 11) | tool dcb (/ br -q 11) |'
echo '|---|---|---|---|---|---|---|---|'
update jquery 3.6.0 3.7.1 dist/jquery.min.js
update react-dom 18.2.0 18.3.1 umd/react-dom.production.min.js

# Site dictionary: every other page (120) to learn from, the other 124
# published with a delta against what was learnt.
find "$MANUAL" -name '*.html' | sort >"$WORK/pages"
mkdir -p "$WORK/train" "$WORK/manual"
n=0
while IFS= read -r p; do
    rel=${p#"$MANUAL"/}
    n=$((n + 1))
    if [ $((n % 2)) -eq 1 ] && [ $((n / 2)) -lt 120 ]; then
        dest="$WORK/train/$rel"
    else
        dest="$WORK/manual/$rel"
    fi
    mkdir -p "$(dirname "$dest")"
    cp "$p" "$dest"
done <"$WORK/pages"
dict="$WORK/dictionary.dat"
"$BIN" train "$WORK/train" --out "$dict" --size 64K
"$BIN" compress --quiet --dictionary "$dict" "$WORK/manual" >/dev/null
"$BIN" verify --quiet --dictionary "$dict" "$WORK/manual" >/dev/null
pages=0 orig=0 br=0 served=0 dcz=0 dcb=0 patch=0 kept=0 keptb=0
for p in $(find "$WORK/manual" -name '*.html' | sort); do
    pages=$((pages + 1))
    orig=$((orig + $(size "$p")))
    b=$(size "$p.br")
    br=$((br + b))
    patch=$((patch + 40 + $(zstd -19 -c -q --patch-from="$dict" "$p" 2>/dev/null | wc -c)))
    best=$b
    if d=$(ls "$p".*.dcz 2>/dev/null); then
        kept=$((kept + 1))
        dcz=$((dcz + $(size "$d")))
        [ "$(size "$d")" -lt "$best" ] && best=$(size "$d")
    fi
    if d=$(ls "$p".*.dcb 2>/dev/null); then
        keptb=$((keptb + 1))
        dcb=$((dcb + $(size "$d")))
        [ "$(size "$d")" -lt "$best" ] && best=$(size "$d")
    fi
    served=$((served + best))
done
echo
echo "| Apache manual, $pages pages, dictionary $(size "$dict") bytes from 120 pages | bytes |"
echo '|---|---|'
echo "| original | $orig |"
echo "| br (tool) | $br |"
echo "| zstd -19 --patch-from=dictionary + 40, every page | $patch |"
echo "| tool dcz, the $kept pages that got one | $dcz |"
echo "| tool dcb, the $keptb pages that got one | $dcb |"
echo "| served to a client with the dictionary (smallest of dcz, dcb, br) | $served |"
