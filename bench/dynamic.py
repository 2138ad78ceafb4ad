#!/usr/bin/env python3
"""Measures dynamic responses for bench/dynamic.sh: bytes per case over
every page (total, and the median page), then req/s with wrk over the
pages in turn, ROUNDS interleaved rounds, median. Each case's responses
are checked first: status 200 and the expected Content-Encoding.

Usage: dynamic.py BASE_URL PAGES_FILE"""

import os
import re
import statistics
import subprocess
import sys
import tempfile
import urllib.request

BASE, PAGES_FILE = sys.argv[1], sys.argv[2]
NAMES = [os.path.basename(p.strip())[:-5] + ".php" for p in open(PAGES_FILE) if p.strip()]
DURATION = int(os.environ.get("DURATION", "3"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
CONNS = int(os.environ.get("CONNS", "8"))

# (key, label, directory, Accept-Encoding, expected Content-Encoding)
CASES = [
    ("plain", "PHP-FPM, no coding", "plain", "identity", None),
    ("deflate", "mod_deflate (gzip, level 6)", "deflate", "gzip", "gzip"),
    ("brotli", "mod_brotli (br, quality 5)", "brotli", "br", "br"),
    ("gdn_zstd", "GZIP_DISK_NG zstd", "gdn", "zstd", "zstd"),
    ("gdn_br", "GZIP_DISK_NG br", "gdn", "br", "br"),
    ("gdn_gzip", "GZIP_DISK_NG gzip", "gdn", "gzip", "gzip"),
]


def fetch(url, ae):
    req = urllib.request.Request(url, headers={"Accept-Encoding": ae})
    with urllib.request.urlopen(req) as r:
        return r.status, r.headers.get("Content-Encoding"), len(r.read())


def sizes(case):
    _, _, d, ae, want = case
    out = []
    for n in NAMES:
        st, ce, size = fetch(f"{BASE}/{d}/{n}", ae)
        if st != 200 or ce != want:
            sys.exit(f"{case[0]}: {n} answered {st} {ce}, expected 200 {want}")
        out.append(size)
    return out


def wrk(case, script):
    _, _, d, ae, _ = case
    cmd = ["wrk", "-t2", f"-c{CONNS}", f"-d{DURATION}s", "-s", script,
           "-H", f"Accept-Encoding: {ae}", f"{BASE}/{d}/"]
    text = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in text:
        sys.exit(f"{case[0]}: non-2xx responses under load:\n{text}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))


def main():
    bytes_of = {c[0]: sizes(c) for c in CASES}
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        names = ", ".join(f'"{n}"' for n in NAMES)
        f.write(f"local pages = {{{names}}}\nlocal i = 0\n"
                "request = function()\n  i = i % #pages + 1\n"
                "  return wrk.format(nil, wrk.path .. pages[i])\nend\n")
        script = f.name
    rates = {c[0]: [] for c in CASES}
    for _ in range(ROUNDS):
        for c in CASES:
            rates[c[0]].append(wrk(c, script))
    os.unlink(script)
    br_total = sum(bytes_of["brotli"])
    br_rate = statistics.median(rates["brotli"])
    print(f"{'case':34} {'bytes':>10} {'×br':>6} {'median ×br':>10} {'req/s':>8} {'×br':>6}")
    for key, label, *_ in CASES:
        b = bytes_of[key]
        per_page = statistics.median(x / y for x, y in zip(b, bytes_of["brotli"]))
        rate = statistics.median(rates[key])
        print(f"{label:34} {sum(b):>10} {sum(b) / br_total:>6.3f} {per_page:>10.3f} "
              f"{rate:>8.0f} {rate / br_rate:>6.2f}")
    d, g = bytes_of["deflate"], bytes_of["gdn_gzip"]
    print(f"GZIP_DISK_NG gzip against mod_deflate: bytes {sum(g) / sum(d):.3f}, "
          f"req/s {statistics.median(rates['gdn_gzip']) / statistics.median(rates['deflate']):.2f}")


main()
