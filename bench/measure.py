#!/usr/bin/env python3
"""Runs the load generator over every case, interleaved for ROUNDS rounds,
and prints req/s medians with ratios; writes results.tsv and an SVG plot.

Usage: measure.py BASE_URL OUT_DIR PAGE... (cases are fixed below; the
Apache configuration in bench/run.sh provides their paths). With
DEBIAN_BASE set, every Apache case also runs against that server (Debian's
defaults: sendfile off, mmap on), in a column beside BASE's (sendfile on).
A case fails unless its responses are 2xx: checked before and after the
rounds (redirects not followed), and in wrk's and h2load's counts."""

import os
import re
import statistics
import subprocess
import sys
import urllib.error
import urllib.request

BASE, OUT, PAGES = sys.argv[1], sys.argv[2], sys.argv[3:]
# (column key, heading, base URL): where each Apache case is measured.
COLUMNS = [("sendfile", "sendfile on", BASE)]
if os.environ.get("DEBIAN_BASE"):
    COLUMNS.append(("debian", "Debian defaults", os.environ["DEBIAN_BASE"]))
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


def url_of(path, base):
    return path if path.startswith("http") else base + path


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """A 3xx is an answer to report, not one to follow."""

    def redirect_request(self, *args, **kwargs):
        return None


OPENER = urllib.request.build_opener(NoRedirect)


def check(url, ae, want):
    req = urllib.request.Request(url, headers={"Accept-Encoding": ae} if ae else {})
    try:
        with OPENER.open(req, timeout=30) as r:
            status, got = r.status, r.headers.get("Content-Encoding")
            r.read()
    except urllib.error.HTTPError as e:
        status, got = e.code, None
    if not 200 <= status < 300:
        sys.exit(f"bench: {url} with '{ae}': status {status}, expected 2xx")
    if got != want:
        sys.exit(f"bench: {url} with '{ae}': Content-Encoding {got!r}, expected {want!r}")


def runs():
    """Every (page, column key, case) measured, with its URL."""
    for n in PAGES:
        for col, _, base in COLUMNS:
            for key, _, path, ae, want, _ in CASES:
                if col != "sendfile" and path.startswith("http"):
                    continue  # nginx has a configuration of its own
                yield n, col, key, url_of(path.format(n=n), base), ae, want


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


def wrk(url, ae):
    cmd = ["wrk", "-t2", f"-c{CONNS}", f"-d{DURATION}s", url]
    if ae:
        cmd[1:1] = ["-H", f"Accept-Encoding: {ae}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    bad = wrk_failures(out)
    if bad:
        sys.exit(f"bench: wrk saw failures on {url}: {bad}")
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


def h2load(url, ae):
    cmd = ["h2load", "-D", str(DURATION), "-c", str(CONNS), "-m", "4", "-t", "2", url]
    if ae:
        cmd[1:1] = ["-H", f"accept-encoding: {ae}"]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    bad = h2load_failures(out)
    if bad:
        sys.exit(f"bench: h2load saw failures on {url}: {bad}")
    return float(re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out).group(1))


def main():
    results = {}  # (page, protocol, column, key) -> [req/s]
    for _, _, _, url, ae, want in runs():
        check(url, ae, want)
    for rnd in range(ROUNDS):
        for proto, tool in (("HTTP/1.1", wrk), ("h2c", h2load)):
            for n, col, key, url, ae, _ in runs():
                if proto == "h2c" and key.startswith("ng_"):
                    continue  # nginx serves h2c only on a port of its own
                results.setdefault((n, proto, col, key), []).append(tool(url, ae))
        print(f"round {rnd + 1}/{ROUNDS} done", file=sys.stderr)
    for _, _, _, url, ae, want in runs():
        check(url, ae, want)
    rows = []
    for n in PAGES:
        for proto in ("HTTP/1.1", "h2c"):
            rows += table(results, n, proto)
    print("\nTargets (ratios of medians, same run):")
    for n in PAGES:
        for proto in ("HTTP/1.1", "h2c"):
            for col, heading, _ in COLUMNS:
                print(f"  {n:18} {proto:8} {heading:16} " + targets(medians(results, n, proto, col)))
    with open(os.path.join(OUT, "results.tsv"), "w") as f:
        f.write("page\tprotocol\tserver\tcase\tlabel\treq_per_s\tratio\tversus\n")
        for r in rows:
            f.write("\t".join(str(x) for x in r) + "\n")
    svg(rows, os.path.join(OUT, "results.svg"))
    print(f"\nwrote {OUT}/results.tsv and {OUT}/results.svg")


def medians(results, n, proto, col):
    return {k: statistics.median(results[(n, proto, col, k)])
            for k, *_ in CASES if (n, proto, col, k) in results}


def table(results, n, proto):
    """Prints one page and protocol, a req/s and ratio column per server
    configuration; returns its rows for results.tsv."""
    print(f"\n{n}, {proto}: median req/s of {ROUNDS} rounds x {DURATION}s, {CONNS} connections")
    print(f"{'case':44}" + "".join(f" {h:>16} {'ratio':>6}" for _, h, _ in COLUMNS) + "  vs")
    med = {col: medians(results, n, proto, col) for col, _, _ in COLUMNS}
    rows = []
    for key, label, _, _, _, anchor in CASES:
        line = f"{label:44}"
        for col, heading, _ in COLUMNS:
            m = med[col]
            if key not in m:
                line += f" {'-':>16} {'':>6}"
                continue
            ratio = m[key] / m[anchor] if anchor and m.get(anchor) else 1.0
            line += f" {m[key]:16.0f} {ratio:6.2f}"
            rows.append((n, proto, heading, key, label, m[key], ratio, anchor or ""))
        if any(key in med[col] for col, _, _ in COLUMNS):
            print(line + f"  {anchor or ''}")
    return rows


def targets(med):
    def r(a, b):
        return med[a] / med[b] if med.get(a) and med.get(b) else float("nan")
    return (f"precompressed/core gzip {r('mod_gzip', 'core'):.2f} "
            f"zstd {r('mod_zstd', 'core'):.2f} | jitter on/off gzip {r('jit_gzip', 'mod_gzip'):.2f} "
            f"zstd {r('jit_zstd', 'mod_zstd'):.2f} | decompress/INFLATE {r('dec_gz', 'inflate'):.2f} "
            f"| module/mod_deflate {r('mod_gzip', 'deflate'):.0f}x, /mod_brotli {r('mod_br', 'brotli'):.0f}x"
            + (f" | decompress/nginx gunzip {r('dec_gz', 'ng_gunzip'):.2f}" if 'ng_gunzip' in med else ""))


def svg(rows, path):
    """Horizontal bars of req/s per case, one panel per page, protocol and
    server configuration."""
    panels = []
    for r in rows:
        if (r[0], r[1], r[2]) not in panels:
            panels.append((r[0], r[1], r[2]))
    bar_h, gap, label_w, plot_w = 16, 4, 300, 420
    per_panel = len(CASES) * (bar_h + gap) + 40
    height = per_panel * len(panels) + 20
    width = label_w + plot_w + 120
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    y = 10
    for page, proto, server in panels:
        prow = [r[:2] + r[3:] for r in rows if r[:3] == (page, proto, server)]
        top = max(r[4] for r in prow) or 1
        out.append(f'<text x="10" y="{y + 16}" font-weight="bold">{page}, {proto}, {server} (req/s)</text>')
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
