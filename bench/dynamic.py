#!/usr/bin/env python3
"""Measures dynamic responses for bench/dynamic.sh: bytes per case over
every page (total, and the median page), then req/s with wrk over the
pages in turn, ROUNDS interleaved rounds, median. Each case's responses
are checked first: status 200 and the expected Content-Encoding. The
dcz and dcb cases announce the site dictionary (the file DICTIONARY, as
served) by its SHA-256; the first dcz body is decoded with `zstd -D`
against it and compared with the page it stands for, in PAGES_DIR, and
the first dcb body is checked against both by `gzip-disk-ng verify`
(the tool TOOL).

Usage: DICTIONARY=FILE TOOL=FILE dynamic.py BASE_URL PAGES_FILE PAGES_DIR"""

import base64
import hashlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import urllib.request

BASE, PAGES_FILE, PAGES_DIR = sys.argv[1], sys.argv[2], sys.argv[3]
DICTIONARY = os.environ["DICTIONARY"]
with open(DICTIONARY, "rb") as f:
    DICT_HASH = hashlib.sha256(f.read()).digest()
DICT_NAME = ":" + base64.b64encode(DICT_HASH).decode() + ":"
TOOL = os.environ["TOOL"]
NAMES = [os.path.basename(p.strip())[:-5] + ".php" for p in open(PAGES_FILE) if p.strip()]
DURATION = int(os.environ.get("DURATION", "3"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
CONNS = int(os.environ.get("CONNS", "8"))

# (key, label, directory, Accept-Encoding, expected Content-Encoding)
# dcz, dcb: announced with Available-Dictionary; 40 bytes of dcz's header.
DCZ_HEADER = 40
DELTAS = ("dcz", "dcb")
CASES = [
    ("plain", "PHP-FPM, no coding", "plain", "identity", None),
    ("deflate", "mod_deflate (gzip, level 6)", "deflate", "gzip", "gzip"),
    ("brotli", "mod_brotli (br, quality 5)", "brotli", "br", "br"),
    ("gdn_zstd", "GZIP_DISK_NG zstd", "gdn", "zstd", "zstd"),
    ("gdn_br", "GZIP_DISK_NG br", "gdn", "br", "br"),
    ("gdn_gzip", "GZIP_DISK_NG gzip", "gdn", "gzip", "gzip"),
    ("gdn_dcz", "GZIP_DISK_NG dcz (site dictionary)", "gdn", "dcz, zstd, br, gzip", "dcz"),
    ("gdn_dcb", "GZIP_DISK_NG dcb (site dictionary)", "gdn", "dcb, br, gzip", "dcb"),
] + [(f"dcz{l}", f"GZIP_DISK_NG dcz, level {l}", f"dcz{l}", "dcz, zstd, br, gzip", "dcz")
     for l in os.environ.get("DCZ_LEVELS", "").split()]


def headers(case):
    h = {"Accept-Encoding": case[3]}
    if case[4] in DELTAS:
        h["Available-Dictionary"] = DICT_NAME
    return h


def fetch(url, case):
    req = urllib.request.Request(url, headers=headers(case))
    with urllib.request.urlopen(req) as r:
        return r.status, r.headers.get("Content-Encoding"), r.read()


def check_dcz(name, body):
    """The body decodes against the dictionary to the page."""
    plain = subprocess.run(["zstd", "-d", "-q", "-c", "-D", DICTIONARY],
                           input=body[DCZ_HEADER:], capture_output=True, check=True).stdout
    with open(os.path.join(PAGES_DIR, name), "rb") as f:
        if plain != f.read():
            sys.exit(f"dcz: {name} does not decode to the page")


def check_dcb(name, body):
    """The body names the dictionary and decodes against it to the page,
    as the publish tool verifies a published delta."""
    with tempfile.TemporaryDirectory() as d:
        page = os.path.join(d, name[:-4] + ".html")
        shutil.copy(os.path.join(PAGES_DIR, name), page)
        with open(f"{page}.{DICT_HASH.hex()}.dcb", "wb") as f:
            f.write(body)
        r = subprocess.run([TOOL, "verify", "--quiet", "--dictionary", DICTIONARY, d],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"dcb: {name} does not verify: {r.stdout}{r.stderr}")


def sizes(case):
    _, _, d, _, want = case
    out = []
    for n in NAMES:
        st, ce, body = fetch(f"{BASE}/{d}/{n}", case)
        if st != 200 or ce != want:
            sys.exit(f"{case[0]}: {n} answered {st} {ce}, expected 200 {want}")
        if want == "dcz" and not out:
            check_dcz(n, body)
        if want == "dcb" and not out:
            check_dcb(n, body)
        out.append(len(body))
    return out


def wrk(case, script):
    d = case[2]
    cmd = ["wrk", "-t2", f"-c{CONNS}", f"-d{DURATION}s", "-s", script]
    for k, v in headers(case).items():
        cmd += ["-H", f"{k}: {v}"]
    cmd.append(f"{BASE}/{d}/")
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
