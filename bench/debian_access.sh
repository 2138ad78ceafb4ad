#!/usr/bin/env bash
# Instructions per whole request on Debian's default site configuration:
# the modules a fresh Debian enables (DEBIAN_DEFAULT_MODULES, scripts/lib.sh) with their .conf files, the
# apache2.conf lines that shape a request (<Directory /> with
# FollowSymLinks and AllowOverride None, <FilesMatch "^\.ht">), and the
# combined access log. Cases, each on PAGES (core.html, 314 KB, and
# mod_dir.html, 24 KB):
#   core     core's handler serving the .gz bytes, in an Apache without the
#            module (the same configuration less the module's LoadModule
#            and directives), as an outside harness compares
#   loaded   the same with the module loaded (what it costs requests it
#            does not serve)
#   mod      the module, precompressed gzip, judging the sibling's name by
#            sections alone (the configuration is on its list)
#   asked    the same with one line off the list (a subrequest per sibling)
# Prints instructions per request and the ratios to core.
#   GZIP_DISK_NG_MODULE=... bench/debian_access.sh   to measure another build
source "$(dirname "$0")/../scripts/lib.sh"
ensure_packages apache2-doc valgrind
build
MANUAL=/usr/share/doc/apache2-doc/manual/en/mod
PAGES="${PAGES:-$MANUAL/core.html $MANUAL/mod_dir.html}"
FEW="${FEW:-50}"
MANY="${MANY:-250}"
WORK="$(mktemp -d /tmp/gzip-disk-ng-deb.XXXXXX)"
chmod 755 "$WORK"
trap 'apache_stop "$WORK"; sleep 1; rm -rf "$WORK"' EXIT
D="$WORK/docs"
for p in $PAGES; do
    bench_case "$D" mod "$p" "" .gz
    bench_case "$D" core "$p" .gz
done
chmod -R a+rX "$WORK"
mkdir -m 1777 "$WORK/out"
PORT="${PORT:-18494}"

debian_site_conf "$WORK" "$PORT" "$D" "" >"$WORK/httpd.conf"
# Options in <Files> is off the list: every sibling is asked of Apache.
debian_site_conf "$WORK" "$PORT" "$D" $'<Files "*.never">\n    Options -Indexes\n</Files>' >"$WORK/asked.conf"
conf_without_module "$WORK" "$WORK/httpd.conf" "$WORK/core.conf" || exit 1

source "$(dirname "$0")/callgrind_lib.sh"

echo "callgrind, Debian's default configuration, instructions per whole request: (Ir($MANY) - Ir($FEW)) / $((MANY - FEW))"
for p in $PAGES; do
    n="$(basename "$p")"
    core=$(CONF="$WORK/core.conf" whole "/core/$n.gz" "gzip" "") || exit 1
    loaded=$(CONF="$WORK/httpd.conf" whole "/core/$n.gz" "gzip" "") || exit 1
    mod=$(CONF="$WORK/httpd.conf" whole "/mod/$n" "gzip" "gzip") || exit 1
    ! grep -q "asked of Apache" "$WORK/error.log" || { echo "Debian's configuration is not on the list" >&2; exit 1; }
    asked=$(CONF="$WORK/asked.conf" whole "/mod/$n" "gzip" "gzip") || exit 1
    grep -q "asked of Apache" "$WORK/error.log" || { echo "the asked case did not ask" >&2; exit 1; }
    : >"$WORK/error.log"
    awk -v n="$n" -v c="$core" -v l="$loaded" -v m="$mod" -v a="$asked" 'BEGIN {
        printf "%s: core %d, core with the module loaded %d (%.3fx), module %d (%.3fx core), asked %d (%.3fx core)\n",
            n, c, l, l / c, m, m / c, a, a / c }'
done
