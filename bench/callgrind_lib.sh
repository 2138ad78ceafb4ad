# Shared by bench/callgrind.sh and bench/ondemand_callgrind.sh: Apache -X
# under callgrind on WORK/CONF (default WORK/httpd.conf) and PORT, and the
# two ways of counting: steady requests (measure) and whole requests on
# new connections (whole).

# Starts Apache -X under callgrind with the given extra options, writing to
# the file named by the first; valgrind's pid goes to VG.
callgrind_apache() {
    local out="$1"
    shift
    # Created now, it stays writable after Apache drops privileges.
    install -m 666 /dev/null "$out"
    [ "$(id -u)" -eq 0 ] && chown nobody "$out"
    valgrind --tool=callgrind --callgrind-out-file="$out" "$@" \
        /usr/sbin/apache2 -X -d "$WORK" -f "${CONF:-$WORK/httpd.conf}" >"$WORK/vg.log" 2>&1 &
    VG=$!
}

# Stops Apache, waits for valgrind to write its files.
callgrind_stop() {
    kill -TERM "$(cat "$WORK/httpd.pid")"
    # A forked helper (the on-demand compressor) writes the same file when
    # Apache ends it; Apache, ending last, writes its own over it.
    wait "$VG" 2>/dev/null || true
    # Apache under callgrind may leave it: a stale pid is no one to signal.
    rm -f "$WORK/httpd.pid"
}

measure() { # path accept-encoding -> instructions per steady request
    local path="$1" ae="$2" out="$WORK/out/cg.$RANDOM"
    # A dump before each request: out.1 is empty, out.2 the readiness
    # probe, out.3 the first request (per-file-version caches, lazy
    # set-up), out.4 on and the final dump the N steady requests counted.
    callgrind_apache "$out" --toggle-collect='ap_process_async_request' \
        --dump-before='ap_process_async_request'
    apache_wait "$PORT" 300
    local urls=()
    for _ in $(seq $((N + 1))); do urls+=("http://127.0.0.1:$PORT$path" -o /dev/null); done
    curl -s -H "Accept-Encoding: $ae" "${urls[@]}"
    callgrind_stop
    local f total=0 n=0
    for f in "$out" "$out".*; do
        case "$f" in "$out".1 | "$out".2 | "$out".3) continue ;; esac
        total=$((total + $(awk '/^(summary|totals):/ { print $2; exit }' "$f")))
        n=$((n + 1))
    done
    [ "$n" -eq "$N" ] || { echo "callgrind: $n dumps for $N requests" >&2; exit 1; }
    echo $((total / N))
}

# Instructions of Apache -X serving COUNT requests for PATH, each on a new
# connection; fails unless every response is a 200 with Content-Encoding
# WANT (empty: none).
run_whole() { # path accept-encoding want count -> total instructions
    local path="$1" ae="$2" want="$3" count="$4" out="$WORK/out/whole.$RANDOM"
    callgrind_apache "$out"
    apache_wait "$PORT" 300
    local urls=()
    for _ in $(seq "$count"); do urls+=("http://127.0.0.1:$PORT$path" -o /dev/null); done
    local got
    got=$(curl -s -H "Connection: close" -H "Accept-Encoding: $ae" ${EXTRA_HEADER:+-H "$EXTRA_HEADER"} \
        -w '%{http_code} %header{content-encoding}\n' "${urls[@]}" | sort | uniq -c)
    callgrind_stop
    if [ "$(echo "$got" | awk '{print $1, $2, $3}')" != "$count 200 $want" ]; then
        echo "callgrind: $path with '$ae': expected $count x 200 '$want', got: $got" >&2
        exit 1
    fi
    awk '/^(summary|totals):/ { print $2; exit }' "$out"
}

whole() { # path accept-encoding want -> instructions per whole request
    local few many
    few=$(run_whole "$@" "$FEW") || exit 1
    many=$(run_whole "$@" "$MANY") || exit 1
    echo $(((many - few) / (MANY - FEW)))
}
