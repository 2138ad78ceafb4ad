# Shared by scripts/ and bench/: installs what is missing on Debian, builds
# the module and the publish tool, and writes the Apache configurations the
# benchmarks share.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# What the tests use (scripts/test installs them); scripts/install
# installs none of them: building needs only BUILD_NEEDS below.
APT_PACKAGES=(apache2 apache2-utils apache2-dev apache2-doc libclang-dev curl wget2 brotli zstd pigz zopfli python3 python3-brotli python3-zstandard bc openssl php-fpm libapache2-mod-php libapache2-mod-evasive chromium dpkg-dev binutils lintian man-db groff-base prometheus varnish nginx-light squid trafficserver haproxy tidy valgrind cppcheck debootstrap rpm cpio build-essential libssl-dev libbrotli-dev zlib1g-dev libnghttp2-dev)
# The oldest Rust that builds the project (rust-version in Cargo.toml),
# and what building the module needs besides, for each family of systems
# (scripts/install names them, never installs them).
RUST_MIN="$(sed -n 's/^rust-version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml")"
BUILD_NEEDS="apache2-dev libclang-dev (Debian, Ubuntu) or httpd-devel clang-devel (RHEL, AlmaLinux, Rocky), and Rust $RUST_MIN or newer"

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else echo "need root to run: $*" >&2; return 1; fi
}

ensure_packages() {
    local missing=() p
    for p in "${APT_PACKAGES[@]}" "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "installing: ${missing[*]}"
        as_root apt-get update -qq
        # The caches the tests put in front of Apache (nginx, Squid,
        # Traffic Server, HAProxy) run on test ports only: their
        # services are not started by the install, where nothing says so
        # already, so none takes the port the system's Apache uses.
        local guard=""
        if [ ! -e /usr/sbin/policy-rc.d ]; then
            guard=/usr/sbin/policy-rc.d
            printf '#!/bin/sh\nexit 101\n' | as_root tee "$guard" >/dev/null
            as_root chmod 755 "$guard"
        fi
        local rc=0
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || rc=$?
        [ -z "$guard" ] || as_root rm -f "$guard"
        [ "$rc" -eq 0 ] || return "$rc"
    fi
    ensure_cargo
}

# Puts cargo on PATH (rustup's places) or says how to get it.
ensure_cargo() {
    if ! command -v cargo >/dev/null 2>&1; then
        for d in "$HOME/.cargo/bin" /root/.cargo/bin /usr/local/cargo/bin; do
            [ -x "$d/cargo" ] && export PATH="$d:$PATH" && break
        done
    fi
    command -v cargo >/dev/null 2>&1 || {
        echo "cargo (Rust $RUST_MIN or newer) is required: see README.md, \"Building from source\"" >&2
        exit 1
    }
}

# apxs, the one program that names the httpd to build for and install
# into: APXS, else the first on PATH.
APXS="${APXS:-apxs}"

# Builds the module and the tools, and writes the publish tool's manual
# pages and bash completion into DOCS (see src/bin/gzip-disk-ng-docs.rs).
DOCS="$ROOT/target/release/docs"
build() {
    (cd "$ROOT" && cargo build --release --locked)
    rm -rf "$DOCS"
    "$ROOT/target/release/gzip-disk-ng-docs" "$DOCS"
}

MODULE_SO="${GZIP_DISK_NG_MODULE:-$ROOT/target/release/libmod_gzip_disk_ng.so}"

# Installs the ELF file SRC as DEST with MODE, stripped of debug info and
# symbols (SRC, where cargo left it, keeps them for debuggers). Written
# beside DEST then renamed, so a running Apache keeps the copy it mapped.
#   install_stripped SRC DEST MODE
install_stripped() {
    mkdir -p "$(dirname "$2")"
    strip --strip-unneeded --remove-section=.comment -o "$2.new" "$1"
    chmod "$3" "$2.new"
    mv -f "$2.new" "$2"
}

# Prints the head of a throwaway Apache config: files under WORK, listening
# on 127.0.0.1:PORT, the given MPM, authz_core, mime, the extra modules
# named after, and this module.
#   apache_conf_head WORK PORT MPM [MODULE...]
apache_conf_head() {
    local work="$1" port="$2" mpm="$3" mods=/usr/lib/apache2/modules m
    shift 3
    cat <<CONF
ServerRoot $work
DefaultRuntimeDir $work
PidFile $work/httpd.pid
ErrorLog $work/error.log
LogLevel warn
Listen 127.0.0.1:$port
ServerName localhost
LoadModule mpm_${mpm}_module $mods/mod_mpm_${mpm}.so
CONF
    if [ "$(id -u)" -eq 0 ]; then printf 'User nobody\nGroup nogroup\n'; fi
    for m in authz_core mime "$@"; do
        echo "LoadModule ${m}_module $mods/mod_${m}.so"
    done
    echo "LoadModule gzip_disk_ng_module $MODULE_SO"
    echo "TypesConfig /etc/mime.types"
    # ALLOW_OVERRIDE=None measures as Debian's apache2.conf serves: no
    # .htaccess looked for in each directory of a request's path.
    if [ -n "${ALLOW_OVERRIDE:-}" ]; then
        printf '<Directory />\n    AllowOverride %s\n</Directory>\n' "$ALLOW_OVERRIDE"
    fi
}

# Puts PAGE and/or its siblings into the case directory DOCS/CASE, each
# SUFFIX being "" (the page itself), .gz, .br or .zst. The siblings are made
# once per page (gzip -9, brotli -q 11, zstd -19) with the page's mtime, so
# the module finds them fresh.
#   bench_case DOCS CASE PAGE SUFFIX...
bench_case() {
    local docs="$1" case="$2" page="$3" src="$1/.src" n s
    shift 3
    n="$(basename "$page")"
    if [ ! -f "$src/$n" ]; then
        mkdir -p "$src"
        cp "$page" "$src/$n"
        gzip -9 -n -c "$page" >"$src/$n.gz"
        brotli -q 11 -c "$page" >"$src/$n.br"
        zstd -19 -q -c "$page" >"$src/$n.zst"
        touch -r "$src/$n" "$src/$n".*
    fi
    mkdir -p "$docs/$case"
    for s in "$@"; do cp -p "$src/$n$s" "$docs/$case/"; done
}

# Puts PAGE into DOCS/CASE with the publish tool's siblings and a delta
# against an earlier version (PAGE with its last 2 KB changed), published
# first with --delta-versions 1 as a site would, and writes the
# Available-Dictionary value announcing that version to
# DOCS/CASE/NAME.announce.
#   bench_delta DOCS CASE PAGE
bench_delta() {
    local docs="$1" case="$2" page="$3" n tool="$ROOT/target/release/gzip-disk-ng"
    n="$(basename "$page")"
    mkdir -p "$docs/$case"
    { head -c -2048 "$page"; head -c 2048 /dev/zero | tr '\0' x; } >"$docs/$case/$n"
    touch -d '-1 hour' "$docs/$case/$n"
    echo ":$(openssl dgst -sha256 -binary "$docs/$case/$n" | base64):" >"$docs/$case/$n.announce"
    "$tool" compress -q --delta-versions 1 "$docs/$case" >/dev/null
    cp "$page" "$docs/$case/$n"
    "$tool" compress -q --delta-versions 1 "$docs/$case" >/dev/null
}

# Prints DocumentRoot DOCS, open to all, and the <Directory> block of each
# case directory under DOCS that exists (see bench_case): mod*/ through the
# module (modjit with GzipDiskNgJitter 32, modfiles and modcheck with a
# <FilesMatch> section for neither name or for the .gz), core/ by core's
# handler (in a <Directory> section like the module's), recipe/ the mod_rewrite+mod_headers recipe, deflate/ and brotli/
# compressed on the fly, inflate/ the .gz through mod_deflate's INFLATE.
#   bench_conf_cases DOCS
bench_conf_cases() {
    local d="$1" c
    printf 'DocumentRoot %s\n<Directory %s>\n    Require all granted\n</Directory>\n' "$d" "$d"
    for c in "$d"/*/; do
        c="$(basename "$c")"
        case "$c" in
        modjit) conf_handler "$d/$c" "GzipDiskNgJitter 32" ;;
        modfiles) conf_handler "$d/$c" '<FilesMatch "\.(png|jpe?g|gif)$">' \
            "    Require all denied" "</FilesMatch>" ;;
        modcheck) conf_handler "$d/$c" '<FilesMatch "\.gz$">' "    Require all granted" "</FilesMatch>" ;;
        mod*) conf_handler "$d/$c" ;;
        # Core's handler named in a section of the same shape as the
        # module's, so both requests walk the same number of sections.
        core) printf '<Directory %s>\n    SetHandler default-handler\n</Directory>\n' "$d/$c" ;;
        recipe) cat <<CONF ;;
<Directory $d/recipe>
    RewriteEngine On
    RewriteCond %{HTTP:Accept-Encoding} gzip
    RewriteCond %{REQUEST_FILENAME}.gz -s
    RewriteRule ^(.+)\$ \$1.gz [QSA]
    <FilesMatch "\.html\.gz\$">
        ForceType text/html
        Header set Content-Encoding gzip
        Header append Vary Accept-Encoding
    </FilesMatch>
</Directory>
CONF
        deflate) printf '<Directory %s>\n    SetOutputFilter DEFLATE\n</Directory>\n' "$d/$c" ;;
        brotli) printf '<Directory %s>\n    SetOutputFilter BROTLI_COMPRESS\n</Directory>\n' "$d/$c" ;;
        inflate) printf '<Directory %s>\n    RemoveType .gz\n    AddEncoding gzip .gz\n    SetOutputFilter INFLATE\n</Directory>\n' "$d/$c" ;;
        esac
    done
}

# Prints a <Directory DIR> block handing its files to the module, with the
# extra configuration lines given.
#   conf_handler DIR [LINE...]
conf_handler() {
    local dir="$1" l
    shift
    printf '<Directory %s>\n    SetHandler gzip-disk-ng\n' "$dir"
    for l in "$@"; do printf '    %s\n' "$l"; done
    echo "</Directory>"
}

# Prints the lines of a site compressed on demand, as the bench/ondemand*.sh
# runs set it up: the cache root CACHE, WORKERS compressor threads, and DOCS
# as the DocumentRoot, every file of it handled by the module.
#   ondemand_site_conf CACHE DOCS WORKERS
ondemand_site_conf() {
    echo "GzipDiskNgCacheRoot $1"
    echo "GzipDiskNgCompressorWorkers $3"
    printf 'DocumentRoot %s\n<Directory %s>\n    Require all granted\n' "$2" "$2"
    printf '    SetHandler gzip-disk-ng\n    GzipDiskNgOnDemand On\n</Directory>\n'
}

# The modules a fresh Debian 12 apache2 enables (mods-enabled after
# `apt-get install apache2`), whatever this machine has enabled since
# (mod_php switches the MPM to prefork; ModSecurity and mod_evasive enable
# themselves): the benchmarks measure Debian's default, not this host.
DEBIAN_DEFAULT_MODULES=(access_compat alias auth_basic authn_core authn_file authz_core authz_host
    authz_user autoindex deflate dir env filter mime mpm_event negotiation reqtimeout setenvif status)

# Prints Debian's apache2.conf, less what concerns no request (timeouts,
# the error log's format), with the modules Debian enables by default
# (DEBIAN_DEFAULT_MODULES, each with its .load and .conf files of
# /etc/apache2/mods-available), the combined access log, DOCS as the
# DocumentRoot, DOCS/core served by core's handler and DOCS/mod* by the
# module, and the EXTRA lines given.
#   debian_site_conf WORK PORT DOCS EXTRA
debian_site_conf() {
    local work="$1" port="$2" d="$3" f c
    cat <<CONF
ServerRoot $work
DefaultRuntimeDir $work
PidFile $work/httpd.pid
ErrorLog $work/error.log
LogLevel warn gzip_disk_ng:info
Listen 127.0.0.1:$port
ServerName localhost
$([ "$(id -u)" -eq 0 ] && printf 'User nobody\nGroup nogroup')
CONF
    local m
    for m in "${DEBIAN_DEFAULT_MODULES[@]}"; do
        echo "Include /etc/apache2/mods-available/$m.load"
    done
    for m in "${DEBIAN_DEFAULT_MODULES[@]}"; do
        f="/etc/apache2/mods-available/$m.conf"
        [ -e "$f" ] && echo "Include $f"
    done
    cat <<CONF
LoadModule gzip_disk_ng_module $MODULE_SO
<Directory />
    Options FollowSymLinks
    AllowOverride None
    Require all denied
</Directory>
<Directory $d>
    Options Indexes FollowSymLinks
    AllowOverride None
    Require all granted
</Directory>
AccessFileName .htaccess
<FilesMatch "^\.ht">
    Require all denied
</FilesMatch>
LogFormat "%h %l %u %t \"%r\" %>s %O \"%{Referer}i\" \"%{User-Agent}i\"" combined
CustomLog $work/access.log combined
DocumentRoot $d
<Directory $d/core>
    SetHandler default-handler
</Directory>
CONF
    for c in "$d"/mod*/; do
        [ -d "$c" ] && printf '<Directory %s>\n    SetHandler gzip-disk-ng\n</Directory>\n' "${c%/}"
    done
    echo "$4"
}

# CONF as an Apache without the module would have it, as an outside
# harness compares: its LoadModule line, its directives, its output
# filter and its log level left out, nothing else changed; fails when the
# module is still named or the result does not parse.
#   conf_without_module WORK CONF OUT
conf_without_module() {
    sed -e '/^LoadModule gzip_disk_ng_module /d' -e '/^[[:space:]]*GzipDiskNg/d' \
        -e '/SetOutputFilter GZIP_DISK_NG$/d' -e 's/ gzip_disk_ng:[a-z0-9]*//' "$2" >"$3"
    ! grep -qi 'gzip_disk_ng\|GzipDiskNg' "$3" ||
        { echo "the module is still named in $3" >&2; return 1; }
    /usr/sbin/apache2 -t -d "$1" -f "$3" 2>/dev/null ||
        { echo "$3 does not parse" >&2; return 1; }
}

# Waits until Apache answers on 127.0.0.1:PORT (any status), for up to
# SECONDS (default 60).
#   apache_wait PORT [SECONDS]
apache_wait() {
    local i
    for i in $(seq $((${2:-60} * 5))); do
        curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0
        sleep 0.2
    done
    echo "Apache did not answer on port $1" >&2
    return 1
}

# Crawls a site's pages as a browser would until its site dictionary
# (GzipDiskNgSiteDictionary /dictionary.dat) is served and a whole crawl
# leaves it as it is (it is retrained as more pages are cached), at most
# SETTLE s (300); the dictionary ends in WORK/dictionary.dat.
#   crawl_site_dictionary URL WORK DOCROOT SITE_DIR
crawl_site_dictionary() {
    local url="$1" work="$2" root="$3" site=() p now last="" end
    while IFS= read -r p; do site+=("${p#"$root"}"); done < <(find "$4" -name '*.html' | sort)
    end=$(($(date +%s) + ${SETTLE:-300}))
    while :; do
        if [ "$(date +%s)" -gt "$end" ]; then
            echo "the site dictionary was not served and settled ${SETTLE:-300} s after crawling ${#site[@]} pages; last: $(curl -s -o /dev/null -w "%{http_code}" "$url/dictionary.dat"); error.log:" >&2
            grep -v "no site dictionary trained yet" "$work/error.log" | grep -i "dictionary" | tail -8 >&2
            return 1
        fi
        for p in "${site[@]}"; do curl -s -o /dev/null -H "Accept-Encoding: zstd, br, gzip" "$url$p"; done
        sleep 2
        [ "$(curl -s -o "$work/dictionary.dat" -w '%{http_code}' "$url/dictionary.dat")" = 200 ] || continue
        now="$(sha256sum <"$work/dictionary.dat")"
        [ "$now" = "$last" ] && return 0
        last="$now"
    done
}

# Stops the Apache whose pid file is WORK/httpd.pid, if it runs.
#   apache_stop WORK
apache_stop() {
    if [ -f "$1/httpd.pid" ]; then kill "$(cat "$1/httpd.pid")" 2>/dev/null || true; fi
}

# Prints [package.metadata.deb] of Cargo.toml, with the package's version
# and description, as shell assignments (NAME, VERSION, MAINTAINER,
# SECTION, PRIORITY, DEPENDS, SUMMARY, EXTENDED, SCRIPTS, CHANGELOG, and
# the arrays ASSETS, each "SRC DEST MODE", and CONFFILES). Cargo reads the
# table (`cargo metadata`), so any python3 (RHEL 9 has 3.9) parses its JSON.
package_table() {
    ensure_cargo
    (cd "$ROOT" && cargo metadata --format-version 1 --no-deps --locked) | python3 -c '
import json, shlex, sys
pkg = next(p for p in json.load(sys.stdin)["packages"] if p["name"] == "gzip-disk-ng")
deb = pkg["metadata"]["deb"]
def out(name, value):
    print(name + "=" + shlex.quote(value))
out("NAME", deb["name"]); out("VERSION", pkg["version"])
out("MAINTAINER", deb["maintainer"]); out("SECTION", deb["section"])
out("PRIORITY", deb["priority"]); out("DEPENDS", deb["depends"])
out("SUMMARY", pkg["description"]); out("EXTENDED", deb["extended-description"])
out("SCRIPTS", deb["maintainer-scripts"]); out("CHANGELOG", deb["changelog"])
print("ASSETS=(" + " ".join(shlex.quote(" ".join(a)) for a in deb["assets"]) + ")")
print("CONFFILES=(" + " ".join(shlex.quote(c) for c in deb["conf-files"]) + ")")
'
}

# Where the platform tests keep what is safe to reuse between runs (a
# Debian root's tarball, an httpd build): /var/cache/gzip-disk-ng-test as
# root, else target/platform-cache. Prints the directory, made.
test_cache() {
    local d=/var/cache/gzip-disk-ng-test
    [ "$(id -u)" -eq 0 ] || d="$ROOT/target/platform-cache"
    mkdir -p "$d" && echo "$d"
}

# A package test killed mid-way (its EXIT trap never ran) leaves the
# package installed, which the next run must not take for the admin's. The
# mark, made once the test has checked the machine is its own and removed
# by its trap, says what is there is a test's: the test's own cleanup
# (the caller's `cleanup`) undoes it, and the publish tool's state it set
# aside (the mark's one line, if any) is put back.
PACKAGE_TEST_MARK=/var/tmp/gzip-disk-ng-package-test.running
#   undo_interrupted_package_test NAME-OF-THE-TEST
undo_interrupted_package_test() {
    [ -e "$PACKAGE_TEST_MARK" ] || return 0
    local saved
    saved="$(cat "$PACKAGE_TEST_MARK")"
    echo "$1: undoing what an interrupted package test left" >&2
    cleanup
    if [ -n "$saved" ] && [ -e "$saved" ] && [ ! -e /var/lib/gzip-disk-ng ]; then mv "$saved" /var/lib/gzip-disk-ng; fi
    rm -f "$PACKAGE_TEST_MARK"
}
#   mark_package_test SAVED-STATE-PATH
mark_package_test() { printf '%s\n' "$1" >"$PACKAGE_TEST_MARK"; }
