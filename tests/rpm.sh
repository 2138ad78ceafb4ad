#!/usr/bin/env bash
# The RHEL-family package as far as this machine can check it (no RHEL
# runtime here): `scripts/package --rpm` builds it with rpmbuild, and
#   - rpm -qlp: the module in /usr/lib64/httpd/modules, its LoadModule
#     line in /etc/httpd/conf.modules.d/10-gzip_disk_ng.conf and the conf
#     in /etc/httpd/conf.d (both %config), the tool, its manual pages,
#     the license, the cache root /var/cache/httpd/gzip-disk-ng (apache,
#     0750), and nothing at Debian's paths;
#   - rpm -qp --requires: httpd-mmn = the module magic number of the
#     headers built against with rpm's ISA suffix (as RHEL's httpd provides
#     it), and no Debian package;
#   - the scriptlets: %post labels the cache root (restorecon, when there
#     is one), %postun restarts httpd under systemd and otherwise says in
#     one line that it must be restarted;
#   - the files: LoadModule names modules/mod_gzip_disk_ng.so, the conf
#     has nothing but <IfModule> uncommented, names RHEL's paths and the
#     SELinux label, and the packaged .so passes `apache2 -t` (the same
#     httpd 2.4 module ABI);
#   - scripts/install on RHEL's layout (a scratch root an apxs describes)
#     writes conf.modules.d/10-gzip_disk_ng.conf, whose LoadModule passes
#     `-t`, and names RHEL's restart;
#   - scripts/package and scripts/lib.sh need no Python tomllib (RHEL 9
#     has Python 3.9).
#   tests/rpm.sh [--no-build]
source "$(dirname "$0")/../scripts/lib.sh"
ensure_packages
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
fail() {
    echo "rpm test: FAILED: $*" >&2
    [ -f "$W/out" ] && sed 's/^/  | /' "$W/out" >&2
    exit 1
}
RPM="$("$ROOT/scripts/package" "$@" --rpm | tail -1)"
[ -f "$RPM" ] || fail "scripts/package --rpm made no package"
rpm -qlp "$RPM" >"$W/list" 2>"$W/out" || fail "rpm -qlp"
cp "$W/list" "$W/out"
for f in /usr/lib64/httpd/modules/mod_gzip_disk_ng.so /etc/httpd/conf.modules.d/10-gzip_disk_ng.conf \
    /etc/httpd/conf.d/gzip-disk-ng.conf /usr/bin/gzip-disk-ng /usr/share/man/man1/gzip-disk-ng.1.gz \
    /usr/share/man/man8/mod_gzip_disk_ng.8.gz /usr/share/bash-completion/completions/gzip-disk-ng \
    /usr/share/licenses/mod_gzip_disk_ng/LICENSE /usr/share/doc/mod_gzip_disk_ng/docs/rhel.md \
    /usr/share/gzip-disk-ng/gzip-disk-ng.vcl /var/cache/httpd/gzip-disk-ng; do
    grep -qxF "$f" "$W/list" || fail "rpm -qlp: no $f"
done
if grep -E 'apache2|mods-available|lintian|take-over-original' "$W/list"; then fail "rpm -qlp: Debian paths"; fi
rpm -qp --configfiles "$RPM" >"$W/out" 2>&1 || fail "rpm -qp --configfiles"
[ "$(sort "$W/out" | tr '\n' ' ')" = "/etc/httpd/conf.d/gzip-disk-ng.conf /etc/httpd/conf.modules.d/10-gzip_disk_ng.conf " ] ||
    fail "the conf files are not %config"
rpm -qp --dump "$RPM" >"$W/out" 2>&1 || fail "rpm -qp --dump"
grep -qE '^/var/cache/httpd/gzip-disk-ng [0-9]+ [0-9]+ 0+ 040750 apache apache ' "$W/out" ||
    fail "the cache root is not apache's, mode 0750"

MMN="$(awk '$1 == "#define" && $2 == "MODULE_MAGIC_NUMBER_MAJOR" { print $3 }' "$(apxs -q INCLUDEDIR)/ap_mmn.h")"
rpm -qp --requires "$RPM" >"$W/out" 2>&1 || fail "rpm -qp --requires"
grep -qxF "httpd-mmn = ${MMN}$(rpm --eval '%{__isa_name}%{__isa_bits}')" "$W/out" || fail "no httpd-mmn = ${MMN}ISA requirement"
[ "$(uname -m)" != x86_64 ] || grep -qxF "httpd-mmn = 20120211x8664" "$W/out" || fail "not RHEL's httpd-mmn for x86_64"
if grep -E 'apache2|dpkg' "$W/out"; then fail "requires a Debian package"; fi

rpm -qp --scripts "$RPM" >"$W/out" 2>&1 || fail "rpm -qp --scripts"
grep -q 'restorecon -R /var/cache/httpd/gzip-disk-ng' "$W/out" || fail "%post does not label the cache root"
grep -q 'systemctl try-restart httpd.service' "$W/out" || fail "%postun does not restart httpd under systemd"
[ "$(grep -c 'restart httpd now (apachectl restart)' "$W/out")" = 1 ] || fail "%postun does not say httpd must be restarted"

mkdir "$W/x"
(cd "$W/x" && rpm2cpio "$RPM" | cpio -idm --quiet) || fail "rpm2cpio"
grep -qx 'LoadModule gzip_disk_ng_module modules/mod_gzip_disk_ng.so' "$W/x/etc/httpd/conf.modules.d/10-gzip_disk_ng.conf" ||
    fail "10-gzip_disk_ng.conf has no LoadModule of modules/mod_gzip_disk_ng.so"
C="$W/x/etc/httpd/conf.d/gzip-disk-ng.conf"
grep -vE '^[[:space:]]*(#|$)' "$C" >"$W/out" || true
[ "$(cat "$W/out")" = "$(printf '<IfModule gzip_disk_ng_module>\n</IfModule>')" ] || fail "conf.d/gzip-disk-ng.conf has more than <IfModule> uncommented"
grep -q '#GzipDiskNgCacheRoot /var/cache/httpd/gzip-disk-ng$' "$C" && grep -q httpd_cache_t "$C" &&
    ! grep -qE 'apache2|www-data|a2en' "$C" || { cp "$C" "$W/out"; fail "conf.d/gzip-disk-ng.conf is not written for RHEL"; }
SO="$W/x/usr/lib64/httpd/modules/mod_gzip_disk_ng.so"
if readelf -S "$SO" | grep -q '\.debug_info'; then fail "the packaged module has debug info"; fi
cat >"$W/t.conf" <<CONF
ServerRoot $W
DefaultRuntimeDir $W
PidFile $W/pid
ErrorLog $W/err
Listen 127.0.0.1:1
ServerName localhost
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule gzip_disk_ng_module $SO
CONF
apache2 -t -d "$W" -f "$W/t.conf" >"$W/out" 2>&1 || fail "the packaged module does not load"
# scripts/install on the RHEL layout, as `apxs -q` on RHEL describes it
# (SYSCONFDIR /etc/httpd/conf beside conf.modules.d), under a scratch
# root: its LoadModule line goes into conf.modules.d/10-gzip_disk_ng.conf,
# and that httpd's `-t` (Debian's apache2 reading the scratch httpd.conf,
# which includes conf.modules.d/*.conf as RHEL's does) loads it.
F="$W/rhel"
mkdir -p "$F/etc/httpd/conf" "$F/etc/httpd/conf.modules.d" "$F/usr/lib64/httpd/modules" "$F/usr/sbin" "$F/run"
cat >"$F/apxs" <<APXS
#!/bin/sh
case "\$2" in
LIBEXECDIR) echo $F/usr/lib64/httpd/modules ;; SYSCONFDIR) echo $F/etc/httpd/conf ;;
SBINDIR) echo $F/usr/sbin ;; TARGET) echo httpd ;; *) exit 1 ;;
esac
APXS
printf '#!/bin/sh\nexec apache2 -d %s -f %s "$@"\n' "$F/run" "$F/etc/httpd/conf/httpd.conf" >"$F/usr/sbin/httpd"
chmod 755 "$F/apxs" "$F/usr/sbin/httpd"
sed "s|^ServerRoot .*|ServerRoot $F/run|; s|^DefaultRuntimeDir .*|DefaultRuntimeDir $F/run|; /gzip_disk_ng_module/d" "$W/t.conf" \
    >"$F/etc/httpd/conf/httpd.conf"
echo "IncludeOptional $F/etc/httpd/conf.modules.d/*.conf" >>"$F/etc/httpd/conf/httpd.conf"
APXS="$F/apxs" PREFIX="$F/usr/local" "$ROOT/scripts/install" --no-build >"$W/out" 2>&1 || fail "scripts/install on the RHEL layout"
grep -qE "^installed $F/usr/lib64/httpd/modules/mod_gzip_disk_ng.so; loaded at the next restart: (systemctl restart httpd|apachectl restart)\$" "$W/out" ||
    fail "scripts/install did not name RHEL's restart"
grep -q "Syntax OK" "$W/out" || fail "scripts/install's httpd -t on the RHEL layout"
grep -qx "LoadModule gzip_disk_ng_module $F/usr/lib64/httpd/modules/mod_gzip_disk_ng.so" "$F/etc/httpd/conf.modules.d/10-gzip_disk_ng.conf" ||
    { cp "$F/etc/httpd/conf.modules.d/10-gzip_disk_ng.conf" "$W/out"; fail "10-gzip_disk_ng.conf by scripts/install"; }
if grep -n tomllib "$ROOT/scripts/package" "$ROOT/scripts/package-rpm" "$ROOT/scripts/lib.sh" >"$W/out"; then
    fail "the package scripts need tomllib (Python 3.11)"
fi
echo "rpm test: passed ($(basename "$RPM"): files, httpd-mmn = ${MMN}$(rpm --eval '%{__isa_name}%{__isa_bits}'), scriptlets, conf, the module loads)"
