# Shared by scripts/serve, scripts/test and scripts/install: installs what is
# missing on Debian, then builds the module and the publish tool.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
APT_PACKAGES=(apache2 apache2-utils apache2-dev libclang-dev curl brotli zstd python3 python3-brotli bc openssl chromium)

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
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    if ! command -v cargo >/dev/null 2>&1; then
        for d in "$HOME/.cargo/bin" /root/.cargo/bin /usr/local/cargo/bin; do
            [ -x "$d/cargo" ] && export PATH="$d:$PATH" && break
        done
    fi
    command -v cargo >/dev/null 2>&1 || { echo "cargo (Rust) is required" >&2; exit 1; }
}

build() {
    (cd "$ROOT" && cargo build --release --locked)
}

MODULE_SO="${GZIP_DISK_NG_MODULE:-$ROOT/target/release/libmod_gzip_disk_ng.so}"

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
}
