#!/usr/bin/env python3
"""How far one request reaches into the module's source: from a callgrind
dump of that request alone (bench/budget.sh's, kept by bench/steps.sh),
the workspace's source files whose code ran (inlined code counted in its
own file), and how many calls entered a function of FILE (default
crates/module/src/handler/mod.rs) from code in another file.

    bench/reach.py DUMP [FILE]

REACH_ROOT names the checkout another build was made from (its sources
are named by their absolute paths).
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NAME = re.compile(r"^\((\d+)\)(?: (.*))?$")


def name(table, value):
    """A compressed name: `(id) name` defines it, `(id)` uses it."""
    m = NAME.match(value)
    if not m:
        return value
    if m.group(2) is not None:
        table[m.group(1)] = m.group(2)
    return table.get(m.group(1), "?")


def workspace_file(path):
    """The path inside the workspace (from `crates/`), or None: a build's
    debug information names its sources by their absolute paths."""
    at = path.find("/crates/")
    if at < 0 or not path.startswith(ROOT_OF_DUMP or ROOT):
        return None
    return path[at + 1:]


ROOT_OF_DUMP = os.environ.get("REACH_ROOT")


def reach(dump, target):
    files, fns = {}, {}
    ran = set()
    entries = 0
    fl = here = callee_file = None
    call_pending = False
    with open(dump) as f:
        for line in f:
            line = line.rstrip("\n")
            key, _, value = line.partition("=")
            if key == "fl":
                fl = here = name(files, value)
            elif key in ("fi", "fe"):
                here = name(files, value)
            elif key == "fn":
                name(fns, value)
                here = fl
                callee_file = None
            elif key in ("cfi", "cfl"):
                callee_file = name(files, value)
            elif key == "cfn":
                name(fns, value)
            elif key == "calls":
                count = int(value.split()[0])
                into = callee_file or fl
                if (into and workspace_file(into) == target
                        and workspace_file(here or "") != target):
                    entries += count
                callee_file = None
                call_pending = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                if call_pending:
                    call_pending = False
                    continue
                parts = line.split()
                if len(parts) > 1 and int(parts[1]) > 0 and here:
                    w = workspace_file(here)
                    if w:
                        ran.add(w)
    return sorted(ran), entries


def main():
    dump = sys.argv[1]
    target = sys.argv[2] if len(sys.argv) > 2 else "crates/module/src/handler/mod.rs"
    ran, entries = reach(dump, target)
    print(f"workspace files whose code ran: {len(ran)}")
    for r in ran:
        print(f"  {r}")
    print(f"calls into {target} from other files: {entries}")


if __name__ == "__main__":
    main()
