#!/usr/bin/env python3
"""Where a request's instructions go, step by step: the inclusive cost of
each step of the request path in one steady request's callgrind dump
(`callgrind_annotate --inclusive=yes`), the module's beside core's.

    bench/steps.py CORE_DUMP MODULE_DUMP [LABEL]

bench/steps.sh makes the dumps (Debian's configuration, as bench/budget.sh
measures) and runs this on them.
"""
import re
import subprocess
import sys

LINE = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+([^:]*):(.*?)(?: \[[^\]]*\])?$")


TREE = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+([*>])\s+([^:]*):(.*?)(?: \(\d+x\))?(?: \[[^\]]*\])?$")


def inclusive(dump):
    """Each function's inclusive instructions (the largest row naming it:
    callgrind lists inlined code under the caller's name too), and, as
    `NAME without passing on`, its cost less what the brigades it passes
    down cost (a filter's own work)."""
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--tree=calling", "--threshold=100", dump],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    costs = {}
    total = 0
    current = None
    for line in out.splitlines():
        if line.strip().endswith("PROGRAM TOTALS"):
            total = int(line.split()[0].replace(",", ""))
            continue
        m = TREE.match(line)
        if not m:
            continue
        n, mark, name = int(m.group(1).replace(",", "")), m.group(2), m.group(4)
        if mark == "*":
            current = name
            costs[name] = max(costs.get(name, 0), n)
            costs[name + " without passing on"] = costs[name]
        elif current and name.startswith("ap_pass_brigade"):
            costs[current + " without passing on"] -= n
    costs["TOTAL"] = total
    return costs


# Steps of the request, by the functions that bound them. `minus` takes
# a nested step's cost out, so each row is that step's own part.
APACHE = [
    ("whole request (ap_process_async_request)", ["TOTAL"], []),
    ("  before the handler: walks, hooks", ["ap_process_request_internal"], []),
    ("    of which the module's fixups (core: not loaded)", ["gdn_httpd::module::fixups"], []),
    ("  the handler (ap_run_handler)", ["ap_run_handler"], []),
    ("    of which Apache's header filter (its own work)",
     ["ap_http_header_filter without passing on"], []),
    ("  after the handler: log, pool", ["ap_process_request_after_handler"], []),
]
SEND = "mod_gzip_disk_ng::respond::<impl mod_gzip_disk_ng::respond::responder::Responder>::send"
MODULE = [
    ("    1 facts and decision", ["mod_gzip_disk_ng::handler::serve"],
     [SEND, "mod_gzip_disk_ng::walk::resolve", "mod_gzip_disk_ng::handler::after_answer"]),
    ("      of which sizes (memo)", ["mod_gzip_disk_ng::facts::sizes"], []),
    ("    2 walk: the lookup", ["mod_gzip_disk_ng::walk::resolve"], []),
    ("    3 send: headers", [SEND], ["mod_gzip_disk_ng::respond::body::finish_file"]),
    ("      of which Repr-Digest", ["mod_gzip_disk_ng::respond::body::integrity_fields"], []),
    ("    3 send: body through the filters", ["mod_gzip_disk_ng::respond::body::finish_file"], []),
    ("    4 after the answer: count, note, copies", ["mod_gzip_disk_ng::handler::after_answer"], []),
]


def cost(costs, plus, minus):
    return sum(costs.get(f, 0) for f in plus) - sum(costs.get(f, 0) for f in minus)


def main():
    core, mod = inclusive(sys.argv[1]), inclusive(sys.argv[2])
    label = sys.argv[3] if len(sys.argv) > 3 else "module"
    print(f"{'step':<52} {'core':>8} {label:>9} {'extra':>7}")
    for name, plus, minus in APACHE:
        c, m = cost(core, plus, minus), cost(mod, plus, minus)
        print(f"{name:<52} {c:>8} {m:>9} {m - c:>+7}")
    steps = [row for row in MODULE if not part_of(row)]
    missing = sorted({f for _, plus, minus in steps for f in plus + minus if f not in mod})
    if missing:
        # A step named by a function the build no longer has: the table
        # would print zeros, so it says so instead.
        sys.exit("steps: no such function in the module's dump: " + ", ".join(missing))
    for row in MODULE:
        name, plus, minus = row
        if part_of(row) and any(f not in mod for f in plus):
            # A part the compiler inlined into its step: counted there.
            print(f"{name:<52} {'':>8} {'inlined':>9}")
            continue
        print(f"{name:<52} {'':>8} {cost(mod, plus, minus):>9}")


def part_of(row):
    """A row that only details the step above it ("of which ...")."""
    return row[0].lstrip().startswith("of which")


if __name__ == "__main__":
    main()
