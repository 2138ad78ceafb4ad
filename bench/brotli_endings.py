#!/usr/bin/python3
"""Counts the .br files listed on stdin (paths under DIR) whose stream ends
in an empty last meta-block, at any bit, that takes a padding block before
it and still decodes alike: what the module pads. An independent check of
the splice, written from RFC 7932 with Python's brotli module.
Usage: brotli_endings.py DIR <list"""
import sys

import brotli


def data_end(b):
    """Bit where the data ends: below ISLAST, below ISLASTEMPTY, the last
    byte's highest set bit (bits are packed from the least significant)."""
    if not b or b[-1] == 0:
        return None
    top = b[-1].bit_length() - 1
    if top == 0:
        islast = b[-2] >> 7 if len(b) > 1 else 0
    else:
        islast = b[-1] >> (top - 1)
    return 8 * (len(b) - 1) + top - 1 if islast & 1 else None


def padded(b, end, pad):
    """The data bits, a metadata block (ISLAST 0, MNIBBLES code 3, reserved
    0, MSKIPBYTES, MSKIPLEN-1) with zero fill and `pad` bytes, then 0x03."""
    nbytes = 1 if pad <= 256 else 2 if pad <= 65536 else 3
    header = 0b0110 | nbytes << 4 | (pad - 1) << 6
    whole, part = divmod(end, 8)
    word = (b[whole] & ((1 << part) - 1) if part else 0) | header << part
    nbits = part + 6 + 8 * nbytes
    body = (b"Padding-" * (pad // 8 + 1))[:pad]
    return b[:whole] + word.to_bytes((nbits + 7) // 8, "little") + body + b"\x03"


def pads(b):
    end = data_end(b)
    if end is None:
        return None
    plain = brotli.decompress(b)
    for pad in (1, 300):
        try:
            if brotli.decompress(padded(b, end, pad)) != plain:
                return None
        except brotli.error:
            return None
    return end


def main():
    total = paddable = unaligned = 0
    for name in sys.stdin.read().splitlines():
        with open(f"{sys.argv[1]}/{name}.br", "rb") as f:
            end = pads(f.read())
        total += 1
        if end is not None:
            paddable += 1
            unaligned += end % 8 != 0
    print(f"{paddable} of {total} paddable ({unaligned} ending at an unaligned bit)")


main()
