#!/usr/bin/env bash
# docs/debian.md ("Debian in ten minutes") performed on this machine with
# the system's Apache, as root: the package built by scripts/package is
# installed and every ```sh block of the page is run, in order, as it is
# written there (each is named by the `<!-- step: NAME -->` comment before
# it; a block without one, or a step this script does not check, fails),
# and what each should show is checked. Then the same package is removed,
# and purged, with the module and the conf enabled and on-demand on: Apache
# must pass configtest and restart, and no process may keep the removed
# module (children, parent or compressor) mapped. At the end the machine
# must be as it was but for the admin's own files the page makes (a page
# and a copied VCL), which are then removed too; Apache is left running
# or stopped as it was found.
#
# The system's Apache serves on port 80: if it is not running, nothing
# else may listen there. Run by scripts/test as root (CI: a fresh Debian
# 12 VM); needs root.
#   tests/debian.sh [--no-build]
source "$(dirname "$0")/../scripts/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "debian test: needs root" >&2; exit 1; }
ensure_packages dpkg-dev
NAME=libapache2-mod-gzip-disk-ng
DOC="$ROOT/docs/debian.md"
STEPS=(install enable serve check on-demand status metrics varnish clean remove)
SO=/usr/lib/apache2/modules/mod_gzip_disk_ng.so
CONF=/etc/apache2/conf-available/gzip-disk-ng.conf
CACHE=/var/cache/apache2/gzip-disk-ng
STATE=/var/lib/gzip-disk-ng
TRY=/var/www/html/gzip-disk-ng-try
VCL=/etc/varnish/gzip-disk-ng.vcl
PIDFILE=/var/run/apache2/apache2.pid
# The admin's own files the page makes: kept by the purge.
ADMINS=("$TRY" "$TRY/gpl.txt" "$VCL")
OURS=("$SO" "$CONF" /etc/apache2/conf-enabled/gzip-disk-ng.conf /etc/apache2/mods-enabled/gzip_disk_ng.load
    /etc/apache2/mods-enabled/gzip_disk_ng.conf "$CACHE" "$STATE" "$TRY" "$VCL" /usr/bin/gzip-disk-ng
    /usr/share/gzip-disk-ng /usr/share/doc/$NAME /usr/share/$NAME)
# a2enmod's and a2enconf's state directories, made by their first run and
# kept (see scripts/test-package); their records are compared.
STATE_DIRS='/var/lib/apache2(/(module|conf|site)(/(en|dis)abled_by_(admin|maint))?)?'
W="$(mktemp -d /tmp/gzip-disk-ng-debian.XXXXXX)"
chmod 755 "$W"

fail() {
    echo "debian test: FAILED: $*" >&2
    [ -f "$W/out" ] && sed 's/^/  | /' "$W/out" >&2
    exit 1
}

running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

# What the page and the package may change.
state() {
    { find /etc/apache2 /etc/varnish /var/lib/apache2 /var/cache/apache2 /var/lib/varnish /var/www \
        /usr/lib/apache2/modules "${OURS[@]}" -regextype posix-extended \
        ! \( -type d -regex "$STATE_DIRS" \) -printf '%p %y %l %m %u\n' 2>/dev/null || true; } | sort
    find /etc/apache2 /etc/varnish /var/www -type f -exec md5sum {} + | sort
    dpkg-query -W -f='${Status}\n' "$NAME" 2>/dev/null || true
}

# The processes that have the installed module mapped (deleted or not).
mapping() {
    grep -l " $SO" /proc/[0-9]*/maps 2>/dev/null | cut -d/ -f3 | sort -n | tr '\n' ' ' || true
}

# Waits up to 10 s for no process to map the module.
unmapped() {
    local i
    for i in $(seq 50); do
        [ -z "$(mapping)" ] && return 0
        sleep 0.2
    done
    fail "$1: processes still map $SO: $(mapping)"
}

WAS_RUNNING=false
if running; then WAS_RUNNING=true; fi
# Under systemd, Apache is started and stopped as its unit, so that the
# package's restart (invoke-rc.d: systemctl) restarts the Apache that runs.
SYSTEMD=false
if [ -d /run/systemd/system ]; then SYSTEMD=true; fi
start_apache() { if $SYSTEMD; then systemctl start apache2; else apache2ctl start; fi; }
stop_apache() {
    if $SYSTEMD; then systemctl stop apache2; else apache2ctl stop; fi
    for _ in $(seq 50); do running || break; sleep 0.2; done
}

cleanup() {
    dpkg --purge "$NAME" >/dev/null 2>&1 || true
    rm -rf "${OURS[@]}"
    find /var/lib/apache2 \( -name 'gzip_disk_ng' -o -name 'gzip-disk-ng' \) -delete
    if $WAS_RUNNING; then
        if running; then apache2ctl restart >/dev/null 2>&1 || true; else start_apache >/dev/null 2>&1 || true; fi
    elif running; then
        stop_apache >/dev/null 2>&1 || true
    fi
}

# The publish tool's state for root, which any `gzip-disk-ng compress`
# run as root makes: set aside while the package (whose purge removes it)
# is tested, and put back.
undo_interrupted_package_test "debian test"
SAVED_STATE=""
if [ -e /var/lib/gzip-disk-ng ]; then
    SAVED_STATE="$W/saved-state"
    mv /var/lib/gzip-disk-ng "$SAVED_STATE"
fi
restore_state() {
    if [ -n "$SAVED_STATE" ]; then rm -rf /var/lib/gzip-disk-ng && mv "$SAVED_STATE" /var/lib/gzip-disk-ng; fi
}
trap restore_state EXIT
for p in "${OURS[@]}"; do
    if [ -e "$p" ]; then fail "$p exists: the test would change it"; fi
done
if dpkg-query -W "$NAME" >/dev/null 2>&1; then fail "$NAME is installed; the test would change it"; fi
if ! $WAS_RUNNING && [ -n "$(ss -Hltn 'sport = :80')" ]; then
    fail "the system's Apache is stopped and something else listens on port 80"
fi
trap 'cleanup; restore_state; rm -f "$PACKAGE_TEST_MARK"; rm -rf "$W"' EXIT
mark_package_test "$SAVED_STATE"
state >"$W/before"
if ! $WAS_RUNNING; then start_apache >"$W/out" 2>&1 || fail "the system's Apache does not start"; fi

# The page's blocks, one file each, named by their step.
mkdir "$W/steps"
awk -v dir="$W/steps" '
    /^<!-- step: [a-z-]+ -->$/ { name = $3; next }
    /^```/ && !inblock {
        if (name != "" && $0 != "```sh") { print "line " NR ": step " name " is not a ```sh block"; exit 1 }
        if ($0 == "```sh") {
            if (name == "") { print "line " NR ": a ```sh block without a step"; exit 1 }
            printf "%s\n", name >> (dir "/order")
            file = dir "/" name ".sh"; inblock = 1; name = ""; next
        }
        inother = !inother; next
    }
    /^```$/ && inblock { inblock = 0; close(file); next }
    inblock { print > file }
' "$DOC" >"$W/out" || fail "docs/debian.md"
[ "$(tr '\n' ' ' <"$W/steps/order")" = "${STEPS[*]} " ] ||
    { echo "docs/debian.md has: $(tr '\n' ' ' <"$W/steps/order")" >"$W/out"; fail "its steps are not those this test checks (${STEPS[*]})"; }

# Runs the page's block NAME in the package's directory; its output in
# W/NAME.out, and in W/out for a failure.
step() {
    echo "debian test: $1"
    (cd "$W/deb" && bash -e -o pipefail "$W/steps/$1.sh") >"$W/$1.out" 2>&1 ||
        { cp "$W/$1.out" "$W/out"; fail "step $1 of docs/debian.md"; }
    cp "$W/$1.out" "$W/out"
}

# Whether the output of the last step has a line matching the ERE.
said() { grep -qiE "$1" "$W/out"; }

answers() { # the system's Apache answers on port 80
    local i
    for i in $(seq 50); do
        curl -s -o /dev/null "http://localhost/" && return 0
        sleep 0.2
    done
    fail "Apache does not answer on port 80 ($1)"
}

mkdir "$W/deb"
DEB="$("$ROOT/scripts/package" "$@" | tail -1)"
[ -f "$DEB" ] || fail "scripts/package made no package"
cp "$DEB" "$W/deb/"

step install
[ "$(dpkg-query -W -f='${Status}' "$NAME")" = "install ok installed" ] || fail "not installed"
[ "$(stat -c '%U %a' "$CACHE")" = "www-data 750" ] || fail "$CACHE: $(stat -c '%U %a' "$CACHE" 2>&1)"
[ -f "$CONF" ] || fail "no $CONF"

step enable
said '^Syntax OK' || fail "configtest"
answers enable
# Read whole before grep: httpd writes -M a line at a time, and grep -q
# leaving early would end it with SIGPIPE, which pipefail counts a failure.
loaded="$(apache2ctl -M 2>/dev/null)" || fail "apache2ctl -M"
grep -q gzip_disk_ng_module <<<"$loaded" || fail "the module is not loaded"
[ -n "$(mapping)" ] || fail "no process maps $SO"

step serve
for s in zst br gz; do [ -s "$TRY/gpl.txt.$s" ] || fail "compress wrote no gpl.txt.$s"; done

step check
said '^HTTP/1.1 200' || fail "check: no 200"
said '^Content-Encoding: (br|zstd)' || fail "check: not br or zstd"
said '^Mod-Gzip-Disk-Ng: :-\)' || fail "check: no marker"
said '^Vary:.*Accept-Encoding' || fail "check: no Vary"
said '^same$' || fail "check: the gzip body is not the page"

step on-demand
# The two header blocks: the first uncompressed, the second the copy.
awk '/^HTTP\//{n++} n==1' "$W/out" >"$W/first"
awk '/^HTTP\//{n++} n==2' "$W/out" >"$W/second"
grep -q '^HTTP/1.1 200' "$W/first" && ! grep -qi '^Content-Encoding' "$W/first" || fail "on-demand: the first response"
grep -qi '^Content-Encoding: br' "$W/second" && grep -qi '^Mod-Gzip-Disk-Ng: :-)' "$W/second" ||
    fail "on-demand: the second response is not the br copy"
said "^$CACHE/[0-9a-f]{2}/.*\.br$" || fail "on-demand: find lists no copy"
copy="$(grep -E "^$CACHE/.*\.br$" "$W/out" | head -1)"
[ "$(stat -c %U "$copy")" = www-data ] || fail "on-demand: $copy is not www-data's"

step status
said '^GzipDiskNgResponses: [1-9]' || fail "status: no responses counted"
said '^GzipDiskNgSavedBytes: [1-9]' || fail "status: nothing saved"

step metrics
said '^gzip_disk_ng_responses_total\{outcome="precompressed",coding="(br|zstd)"\} [1-9]' || fail "metrics: precompressed"
said '^gzip_disk_ng_responses_total\{outcome="cached",coding="br"\} [1-9]' || fail "metrics: cached"
# The Grafana dashboard: every metric it names is served, and every query
# parses (promtool checks them as recording rules).
curl -s http://localhost/gzip-disk-ng-metrics >"$W/metrics"
python3 - /usr/share/gzip-disk-ng/gzip-disk-ng-dashboard.json "$W/metrics" "$W/rules.yml" <<'PY' >"$W/out" 2>&1 ||
import json, re, sys
dash = json.load(open(sys.argv[1]))
served = set(re.findall(r"^# TYPE (\S+)", open(sys.argv[2]).read(), re.M))
exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
names = set(re.findall(r"gzip_disk_ng_[a-z_]+", " ".join(exprs)))
missing = sorted(names - served)
if missing or not exprs:
    sys.exit(f"not served: {missing}")
with open(sys.argv[3], "w") as f:
    f.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, e in enumerate(exprs):
        e = e.replace("$__rate_interval", "5m").replace("$instance", ".*")
        f.write(f"      - record: dashboard:q{i}\n        expr: {json.dumps(e)}\n")
print(f"{len(exprs)} queries, {len(names)} metrics")
PY
    fail "the Grafana dashboard"
promtool check rules "$W/rules.yml" >"$W/out" 2>&1 || fail "promtool check rules: the dashboard's queries"

step varnish
said '^VCL compiles$' || fail "varnish"

step clean
said 'removed' || fail "clean: no summary"
[ "$(ls "$TRY")" = gpl.txt ] || { ls -la "$TRY" >"$W/out"; fail "clean left more than gpl.txt"; }

step remove
said '^Syntax OK' || fail "remove: configtest"
answers remove
unmapped remove
if dpkg-query -W "$NAME" >/dev/null 2>&1; then fail "remove: $NAME still known to dpkg"; fi
for p in "$CACHE" "$STATE" "$CONF" /usr/share/gzip-disk-ng; do
    if [ -e "$p" ]; then fail "remove: $p left"; fi
done
for p in "${ADMINS[@]}"; do [ -e "$p" ] || fail "remove: the admin's $p is gone"; done

# Removed, then purged, while enabled and compressing: the maintainer
# scripts disable the conf and the module and restart Apache (unless a
# policy-rc.d forbids it, as in containers: then the admin restarts).
enabled_and_running() {
    dpkg -i "$DEB" >"$W/out" 2>&1 || fail "dpkg -i ($1)"
    { a2enmod -q gzip_disk_ng && a2enconf -q gzip-disk-ng; } >"$W/out" 2>&1 || fail "a2enmod, a2enconf ($1)"
    sed -i '/^ *# \(Serving\|On-demand\)/,/^$/s/^\( *\)#\([^ ]\)/\1\2/' "$CONF"
    apache2ctl restart >"$W/out" 2>&1 || fail "apache2ctl restart ($1)"
    answers "$1"
    curl -s -o /dev/null -H 'Accept-Encoding: br' http://localhost/index.html
    [ -n "$(mapping)" ] || fail "no process maps $SO ($1)"
}
restarted_without() {
    apache2ctl configtest >"$W/out" 2>&1 || fail "configtest after $1"
    if [ -x /usr/sbin/policy-rc.d ] && ! /usr/sbin/policy-rc.d apache2 restart >/dev/null 2>&1; then
        echo "debian test: $1: policy-rc.d forbids restarting services here; restarting as the admin would"
        apache2ctl restart >"$W/out" 2>&1 || fail "apache2ctl restart after $1"
    fi
    answers "$1"
    unmapped "$1"
    if [ -e /etc/apache2/mods-enabled/gzip_disk_ng.load ] || [ -e /etc/apache2/conf-enabled/gzip-disk-ng.conf ]; then
        fail "$1 left the module or the conf enabled"
    fi
}
echo "debian test: dpkg -r and dpkg --purge while enabled"
enabled_and_running "dpkg -r"
dpkg -r "$NAME" >"$W/out" 2>&1 || fail "dpkg -r"
restarted_without "dpkg -r"
[ -f "$CONF" ] || fail "dpkg -r removed the conffile $CONF"
enabled_and_running "dpkg --purge"
dpkg --purge "$NAME" >"$W/out" 2>&1 || fail "dpkg --purge"
restarted_without "dpkg --purge"

# Nothing left but the admin's files: the changes are theirs alone.
state >"$W/after"
diff "$W/before" "$W/after" | sed -n 's/^[<>] //p' >"$W/changes" || true
theirs="$(IFS='|' && echo "${ADMINS[*]}")"
grep -vE "^($theirs) |  ($theirs)\$" "$W/changes" >"$W/out" || true
[ ! -s "$W/out" ] || fail "the purge left the machine changed beyond the admin's files"
for p in "${ADMINS[@]}"; do grep -q "^$p " "$W/changes" || fail "the admin's $p is gone"; done
rm -rf "$TRY" "$VCL"
cleanup
state >"$W/after"
diff "$W/before" "$W/after" >"$W/out" || fail "the machine is not as it was"
echo "debian test: passed (docs/debian.md's ${#STEPS[@]} steps, dpkg -r and --purge while enabled, nothing left but the admin's files)"
