#!/usr/bin/env python3
"""Calls to the C heap (malloc, calloc, realloc, posix_memalign,
aligned_alloc, memalign) recorded in callgrind output files, summed.

    bench/malloc_calls.py FILE...

Callgrind writes a call as a `cfn=` line naming the callee (its name the
first time, `(id)` after) followed by `calls=COUNT ...`, under the `fn=`
of the caller; names may be compressed as `(id) name`. Calls made by the
dynamic linker's `tls_get_addr_tail` are left out: it allocates a
module's thread-locals the first time a thread touches them, once per
worker thread, not per request. Prints the total count.
"""
import re
import sys

HEAP = {"malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign"}
PER_THREAD = {"tls_get_addr_tail"}


def heap_calls(path):
    names = {}
    total = 0
    callee = None
    caller = ""
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("cfn="):
                m = re.match(r"cfn=(?:\((\d+)\))?\s*(.*)", line.strip())
                ident, name = m.group(1), m.group(2)
                if ident and name:
                    names[ident] = name
                callee = name or names.get(ident, "")
            elif line.startswith("fn="):
                m = re.match(r"fn=(?:\((\d+)\))?\s*(.*)", line.strip())
                if m.group(1) and m.group(2):
                    names[m.group(1)] = m.group(2)
                caller = m.group(2) or names.get(m.group(1), "")
            elif line.startswith("calls=") and callee is not None:
                if callee.split("'")[0] in HEAP and caller not in PER_THREAD:
                    total += int(line.split("=")[1].split()[0])
                callee = None
    return total


if __name__ == "__main__":
    print(sum(heap_calls(p) for p in sys.argv[1:]))
