#!/usr/bin/env bash
# The C gate for the FFI crate's shim (crates/httpd/csrc): every file
# compiled against this httpd's headers with -Wall -Wextra as errors
# (the build itself warns but does not fail, so that another httpd's
# headers cannot stop an install), then cppcheck's warning, portability
# and performance checks. Run by scripts/test; exits 1 on any finding.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$ROOT/crates/httpd/csrc"
inc="$("$APXS" -q INCLUDEDIR)"
apr="$("$APXS" -q APR_INCLUDEDIR)"
apu="$("$APXS" -q APU_INCLUDEDIR)"
aprconf="$("$APXS" -q APR_CONFIG 2>/dev/null || true)"
[ -x "$aprconf" ] || aprconf=apr-1-config
# shellcheck disable=SC2207
defines=($("$aprconf" --cppflags))
status=0
for f in *.c; do
    cc -std=gnu11 -fsyntax-only -Wall -Wextra -Werror -I. -I"$inc" -I"$apr" -I"$apu" "${defines[@]}" "$f" ||
        status=1
done
# The shim alone (the system headers are the compiler's business above).
cppcheck --error-exitcode=1 --enable=warning,portability,performance --std=c11 --quiet \
    --suppress=missingIncludeSystem --suppress=missingInclude -I. "${defines[@]}" ./*.c || status=1
[ "$status" -eq 0 ] && echo "c gate: $(ls ./*.c | wc -l) files, -Werror and cppcheck clean"
exit "$status"
