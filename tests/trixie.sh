#!/usr/bin/env bash
# The Debian package on Debian 13 (trixie), in a root made by debootstrap
# in this run's folder, as an admin of such a machine (a container, a
# chroot: no init system) uses it: apt-get installs Debian 13's apache2
# and curl there, then the package built here by scripts/package installs
# with dpkg, `a2enmod gzip_disk_ng`, `a2enconf gzip-disk-ng` and
# `apache2ctl configtest` pass, and the Apache of that root, started on a
# free loopback port, answers docs/debian.md's curl checks: the br sibling
# for a browser, the gzip one that decodes to the original, both marked
# `Mod-Gzip-Disk-Ng: :-)`, and a .gz alone decoded (`:-(`) for a client
# that accepts no coding. Then `dpkg --purge` with Apache running says in
# one line that Apache must be restarted (nothing restarts it here) and
# removes the module and the cache root.
#
# The root, with apache2 and curl, is cached as a tarball for a week
# (test_cache in scripts/lib.sh); each run unpacks a fresh copy. /proc is
# mounted in the root for the run and always unmounted; the processes
# running in the root (its Apache) are stopped. Needs root (debootstrap, chroot, mount).
#   tests/trixie.sh [--no-build]
source "$(dirname "$0")/../scripts/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "trixie test: needs root" >&2; exit 1; }
ensure_packages dpkg-dev
SUITE=trixie
MIRROR=http://deb.debian.org/debian
CACHE="$(test_cache)"
TARBALL="$CACHE/$SUITE-apache2-root.tar"
W="$(mktemp -d /var/tmp/gzip-disk-ng-trixie.XXXXXX)"
R="$W/root"
say() { echo "trixie test: $*"; }
fail() {
    echo "trixie test: FAILED: $*" >&2
    [ -f "$W/out" ] && sed 's/^/  | /' "$W/out" >&2
    exit 1
}
in_root() { chroot "$R" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }

# The processes whose root is the root: those this test started there.
in_root_pids() {
    local p
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/root" 2>/dev/null)" != "$R" ] || echo "${p#/proc/}"
    done
}
cleanup() {
    local pids
    pids="$(in_root_pids)"
    if [ -n "$pids" ]; then
        kill $pids 2>/dev/null || true
        for _ in $(seq 50); do [ -n "$(in_root_pids)" ] || break; sleep 0.2; done
        pids="$(in_root_pids)"
        if [ -n "$pids" ]; then kill -9 $pids 2>/dev/null || true; fi
    fi
    if mountpoint -q "$R/proc"; then umount "$R/proc" || umount -l "$R/proc"; fi
    rm -rf --one-file-system "$W"
}
trap cleanup EXIT

# The root: Debian 13's minimal base, apt-get install apache2 curl, a
# policy-rc.d that starts no service (as in Debian's container images).
# Made once a week, under a lock, and unpacked fresh for each run.
(
    flock 9
    if [ ! -f "$TARBALL" ] || [ -n "$(find "$TARBALL" -mtime +6)" ]; then
        say "making a Debian 13 root with debootstrap (cached in $CACHE)"
        B="$W/build"
        debootstrap --variant=minbase "$SUITE" "$B" "$MIRROR" >"$W/out" 2>&1 || fail "debootstrap $SUITE"
        printf '#!/bin/sh\nexit 101\n' >"$B/usr/sbin/policy-rc.d" && chmod 755 "$B/usr/sbin/policy-rc.d"
        chroot "$B" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -qq --no-install-recommends apache2 curl >"$W/out" 2>&1 ||
            fail "apt-get install apache2 curl in the root"
        chroot "$B" apt-get clean
        tar -C "$B" -cf "$TARBALL.new" . && mv "$TARBALL.new" "$TARBALL"
        rm -rf --one-file-system "$B"
    fi
) 9>"$CACHE/$SUITE.lock" || exit 1
mkdir "$R"
tar -C "$R" -xf "$TARBALL" || fail "unpacking $TARBALL"
mount -t proc proc "$R/proc"
[ "$(in_root sh -c '. /etc/os-release && echo $VERSION_ID')" = 13 ] || fail "the root is not Debian 13"

DEB="$("$ROOT/scripts/package" "$@" | tail -1)"
[ -f "$DEB" ] || fail "scripts/package made no package"
cp "$DEB" "$R/tmp/"
in_root dpkg -i "/tmp/$(basename "$DEB")" >"$W/out" 2>&1 || fail "dpkg -i on Debian 13"
[ "$(stat -c '%U %a' "$R/var/cache/apache2/gzip-disk-ng")" = "www-data 750" ] || fail "the cache root"
in_root a2enmod -q gzip_disk_ng >"$W/out" 2>&1 || fail "a2enmod gzip_disk_ng"
in_root a2enconf -q gzip-disk-ng >"$W/out" 2>&1 || fail "a2enconf gzip-disk-ng"
in_root apache2ctl configtest >"$W/out" 2>&1 || fail "apache2ctl configtest"

# Apache of the root on a free loopback port, the Serving section on, and
# docs/debian.md's page with its siblings (gzip-disk-ng compress).
PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
echo "Listen 127.0.0.1:$PORT" >"$R/etc/apache2/ports.conf"
sed -i '/^ *# Serving/,/^$/s/^\( *\)#\([^ ]\)/\1\2/' "$R/etc/apache2/conf-available/gzip-disk-ng.conf"
TRY=/var/www/html/gzip-disk-ng-try
in_root sh -e -c "mkdir $TRY && cp /usr/share/common-licenses/GPL-3 $TRY/gpl.txt &&
    gzip-disk-ng compress $TRY && cp $TRY/gpl.txt.gz $TRY/only.txt.gz" >"$W/out" 2>&1 ||
    fail "gzip-disk-ng compress"
in_root apache2ctl configtest >"$W/out" 2>&1 || fail "apache2ctl configtest with the Serving section"
in_root apache2ctl start >"$W/out" 2>&1 || fail "apache2ctl start"
apache_wait "$PORT" 20 || fail "Apache of the Debian 13 root did not answer"
URL="http://localhost:$PORT/gzip-disk-ng-try"
in_root curl -sI -H 'Accept-Encoding: gzip, deflate, br, zstd' "$URL/gpl.txt" >"$W/out" 2>&1 || fail "curl -sI"
grep -qiE '^Content-Encoding: (br|zstd)' "$W/out" && grep -qi '^Vary: Accept-Encoding' "$W/out" &&
    grep -qi '^Mod-Gzip-Disk-Ng: :-)' "$W/out" || fail "a browser's request"
in_root curl -sI -H 'Accept-Encoding: gzip' "$URL/gpl.txt" >"$W/out" 2>&1 || fail "curl -sI for gzip"
grep -qi '^Content-Encoding: gzip' "$W/out" && grep -qi '^Mod-Gzip-Disk-Ng: :-)' "$W/out" || fail "a gzip client's request"
in_root sh -c "curl -s -H 'Accept-Encoding: gzip' $URL/gpl.txt | gunzip | cmp - /usr/share/common-licenses/GPL-3 && echo same" \
    >"$W/out" 2>&1 && [ "$(cat "$W/out")" = same ] || fail "the gzip sibling does not decode to the original"
in_root curl -s -D /tmp/h -o /tmp/b "$URL/only.txt" >"$W/out" 2>&1 || fail "curl for a .gz alone"
cp "$R/tmp/h" "$W/out"
grep -qi '^HTTP/1.1 200' "$W/out" && grep -qi '^Mod-Gzip-Disk-Ng: :-(' "$W/out" && ! grep -qi '^Content-Encoding' "$W/out" &&
    cmp -s "$R/tmp/b" "$R/usr/share/common-licenses/GPL-3" || fail "a .gz alone, decoded for a client accepting none"

# Removal while Apache runs, with no init system to restart it.
in_root dpkg --purge libapache2-mod-gzip-disk-ng >"$W/out" 2>&1 || fail "dpkg --purge"
[ "$(grep -c 'restart it now (apache2ctl restart)' "$W/out")" = 1 ] || fail "dpkg --purge did not say Apache must be restarted"
for p in /usr/lib/apache2/modules/mod_gzip_disk_ng.so /var/cache/apache2/gzip-disk-ng /etc/apache2/mods-enabled/gzip_disk_ng.load \
    /etc/apache2/conf-enabled/gzip-disk-ng.conf /usr/bin/gzip-disk-ng; do
    if [ -e "$R$p" ] || [ -L "$R$p" ]; then fail "$p left after dpkg --purge"; fi
done
in_root apache2ctl restart >"$W/out" 2>&1 || fail "apache2ctl restart after the purge"
say "passed (Debian 13 $(cat "$R/etc/debian_version"), apache2 $(in_root dpkg-query -W -f='${Version}' apache2): dpkg -i, a2enmod, configtest, the curl checks, dpkg --purge)"
