#!/usr/bin/env python3
"""Runs the load generator over every case, interleaved for ROUNDS rounds,
and prints req/s medians with ratios; writes results.tsv and an SVG plot.

Usage: measure.py BASE_URL OUT_DIR PAGE... (cases are fixed below; the
Apache configuration in bench/run.sh provides their paths)."""

import os
import re
import statistics
import subprocess
import sys
import urllib.request

BASE, OUT, PAGES = sys.argv[1], sys.argv[2], sys.argv[3:]
DURATION = int(os.environ.get("DURATION", "3"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
CONNS = int(os.environ.get("CONNS", "8"))

# (key, label, path template, Accept-Encoding, expected Content-Encoding, anchor key)
CASES = [
    ("core", "core handler, same .gz bytes", "/core/{n}.gz", "gzip", None, None),
    ("recipe", "mod_rewrite+mod_headers recipe", "/recipe/{n}", "gzip", "gzip", "core"),
    ("mod_gzip", "module precompressed gzip", "/mod/{n}", "gzip", "gzip", "core"),
    ("mod_br", "module precompressed br", "/mod/{n}", "br", "br", "core"),
    ("mod_zstd", "module precompressed zstd", "/mod/{n}", "zstd", "zstd", "core"),
    ("jit_gzip", "module gzip, GzipDiskNgJitter 32", "/modjit/{n}", "gzip", "gzip", "mod_gzip"),
    ("jit_zstd", "module zstd, GzipDiskNgJitter 32", "/modjit/{n}", "zstd", "zstd", "mod_zstd"),
    ("deflate", "mod_deflate on the fly", "/deflate/{n}", "gzip", "gzip", "core"),
    ("brotli", "mod_brotli on the fly", "/brotli/{n}", "br", "br", "core"),
    ("inflate", "mod_deflate INFLATE of the .gz", "/inflate/{n}.gz", "", None, None),
    ("dec_gz", "module decompress from .gz", "/modonlygz/{n}", "", None, "inflate"),
    ("dec_zst", "module decompress from .zst", "/modonlyzst/{n}", "", None, "inflate"),
]
if os.environ.get("NGINX_BASE"):
    NG = os.environ["NGINX_BASE"]
    CASES += [
        ("ng_static", "nginx gzip_static", NG + "/ngstatic/{n}", "gzip", "gzip", "core"),
        ("ng_gunzip", "nginx gunzip", NG + "/nggunzip/{n}", "", None, "inflate"),
    ]


def url_of(path):
    return path if path.startswith("http") else BASE + path


def check(path, ae, want):
    req = urllib.request.Request(url_of(path), headers={"Accept-Encoding": ae} if ae else {})
    with urllib.request.urlopen(req, timeout=30) as r:
        got = r.headers.get("Content-Encoding")
        r.read()
    if got != want:
        sys.exit(f"bench: {path} with '{ae}': Content-Encoding {got!r}, expected {want!r}")


def wrk_failures(out):
    """What in wrk's report makes a run worthless: socket errors (connect,
    read, write, timeout) and non-2xx/3xx responses. None when clean."""
    bad = []
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m and any(int(x) for x in m.groups()):
        bad.append(m.group(0))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m and int(m.group(1)):
        bad.append(m.group(0))
    if not re.search(r"Requests/sec:\s+[\d.]+", out):
        bad.append("no Requests/sec line")
    return "; ".join(bad) or None


def wrk(path, ae):
    cmd = ["wrk", "-t2", f"-c{CONNS}", f"-d{DURATION}s", url_of(path)]
    if ae:
        cmd[1:1] = ["-H", f"Accept-Encoding: {ae}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    bad = wrk_failures(out)
    if bad:
        sys.exit(f"bench: wrk saw failures on {path}: {bad}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def h2load_failures(out):
    """Failed, errored or timed-out requests, or any non-2xx status, in
    h2load's report. None when clean."""
    bad = []
    m = re.search(r"(\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout", out)
    if not m:
        return "no request summary"
    if any(int(x) for x in m.groups()[1:]):
        bad.append(m.group(0))
    m = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    if not m or any(int(x) for x in m.groups()[1:]):
        bad.append(m.group(0) if m else "no status code summary")
    if not re.search(r"finished in [\d.]+\w+, [\d.]+ req/s", out):
        bad.append("no req/s line")
    return "; ".join(bad) or None


def h2load(path, ae):
    cmd = ["h2load", "-D", str(DURATION), "-c", str(CONNS), "-m", "4", "-t", "2", url_of(path)]
    if ae:
        cmd[1:1] = ["-H", f"accept-encoding: {ae}"]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    bad = h2load_failures(out)
    if bad:
        sys.exit(f"bench: h2load saw failures on {path}: {bad}")
    return float(re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out).group(1))


def main():
    results = {}  # (page, proto, key) -> [req/s]
    for n in PAGES:
        for key, _, path, ae, want, _ in CASES:
            check(path.format(n=n), ae, want)
    for rnd in range(ROUNDS):
        for n in PAGES:
            for proto, tool in (("HTTP/1.1", wrk), ("h2c", h2load)):
                for key, _, path, ae, _, _ in CASES:
                    if proto == "h2c" and key.startswith("ng_"):
                        continue  # nginx serves h2c only on a port of its own
                    rps = tool(path.format(n=n), ae)
                    results.setdefault((n, proto, key), []).append(rps)
        print(f"round {rnd + 1}/{ROUNDS} done", file=sys.stderr)
    rows = []
    for n in PAGES:
        for proto in ("HTTP/1.1", "h2c"):
            print(f"\n{n}, {proto}: median req/s of {ROUNDS} rounds x {DURATION}s, {CONNS} connections")
            print(f"{'case':44} {'req/s':>9} {'ratio':>7}  vs")
            med = {k: statistics.median(results[(n, proto, k)]) for k, *_ in CASES if (n, proto, k) in results}
            for key, label, _, _, _, anchor in CASES:
                if key not in med:
                    continue
                ratio = med[key] / med[anchor] if anchor and med[anchor] else 1.0
                print(f"{label:44} {med[key]:9.0f} {ratio:7.2f}  {anchor or ''}")
                rows.append((n, proto, key, label, med[key], ratio, anchor or ""))
    print("\nTargets (ratios of medians, same run):")
    for n in PAGES:
        for proto in ("HTTP/1.1", "h2c"):
            med = {k: statistics.median(results[(n, proto, k)]) for k, *_ in CASES if (n, proto, k) in results}
            def r(a, b):
                return med[a] / med[b] if med[b] else float("nan")
            print(f"  {n:18} {proto:8} precompressed/core gzip {r('mod_gzip', 'core'):.2f} "
                  f"zstd {r('mod_zstd', 'core'):.2f} | jitter on/off gzip {r('jit_gzip', 'mod_gzip'):.2f} "
                  f"zstd {r('jit_zstd', 'mod_zstd'):.2f} | decompress/INFLATE {r('dec_gz', 'inflate'):.2f} "
                  f"| module/mod_deflate {r('mod_gzip', 'deflate'):.0f}x, /mod_brotli {r('mod_br', 'brotli'):.0f}x"
                  + (f" | decompress/nginx gunzip {r('dec_gz', 'ng_gunzip'):.2f}" if 'ng_gunzip' in med else ""))
    with open(os.path.join(OUT, "results.tsv"), "w") as f:
        f.write("page\tprotocol\tcase\tlabel\treq_per_s\tratio\tversus\n")
        for r in rows:
            f.write("\t".join(str(x) for x in r) + "\n")
    svg(rows, os.path.join(OUT, "results.svg"))
    print(f"\nwrote {OUT}/results.tsv and {OUT}/results.svg")


def svg(rows, path):
    """Horizontal bars of req/s per case, one panel per page and protocol."""
    panels = []
    for r in rows:
        if (r[0], r[1]) not in panels:
            panels.append((r[0], r[1]))
    bar_h, gap, label_w, plot_w = 16, 4, 300, 420
    per_panel = len(CASES) * (bar_h + gap) + 40
    height = per_panel * len(panels) + 20
    width = label_w + plot_w + 120
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    y = 10
    for page, proto in panels:
        prow = [r for r in rows if r[0] == page and r[1] == proto]
        top = max(r[4] for r in prow) or 1
        out.append(f'<text x="10" y="{y + 16}" font-weight="bold">{page}, {proto} (req/s)</text>')
        y += 28
        for r in prow:
            w = plot_w * r[4] / top
            color = "#2a7" if r[2].startswith(("mod_", "jit_", "dec_")) else "#89a"
            out.append(f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end">{r[3]}</text>')
            out.append(f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{color}"/>')
            out.append(f'<text x="{label_w + w + 4:.1f}" y="{y + 12}">{r[4]:.0f}</text>')
            y += bar_h + gap
        y += 12
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main()
