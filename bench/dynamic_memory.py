#!/usr/bin/env python3
"""One case of bench/dynamic_memory.sh: the growth of the Apache children's
resident memory per stream held open, coded, over the same streams uncoded.

Usage: dynamic_memory.py PORT PARENT_PID STREAMS LABEL PATH CODING [DICTIONARY]
DICTIONARY: an Available-Dictionary value the coded streams announce."""
import os, socket, sys, time
port, parent, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])

def children_rss_kib():
    total = 0
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            status = open(f'/proc/{pid}/status').read()
        except OSError:
            continue
        fields = dict(l.split(':', 1) for l in status.splitlines() if ':' in l)
        if fields.get('PPid', '').strip() == parent and 'apache2' in fields.get('Name', ''):
            total += int(fields.get('VmRSS', '0 kB').split()[0])
    return total

def held(path, coding, dictionary=None):
    extra = f'Available-Dictionary: {dictionary}\r\n' if dictionary else ''
    socks = []
    for _ in range(n):
        s = socket.create_connection(('127.0.0.1', port))
        s.sendall(f'GET {path} HTTP/1.1\r\nHost: x\r\nAccept-Encoding: {coding}\r\n{extra}\r\n'.encode())
        socks.append(s)
    time.sleep(2)
    want = coding.split(',')[0].strip()
    for s in socks:
        head = s.recv(65536)
        if want != 'identity' and f'Content-Encoding: {want}\r\n'.encode() not in head:
            sys.exit(f'{label}: a stream not in {want}: {head[:300]!r}')
    rss = children_rss_kib()
    for s in socks:
        s.close()
    time.sleep(1)
    return rss

label, path, coding = sys.argv[4:7]
dictionary = sys.argv[7] if len(sys.argv) > 7 else None
# A first round warms every worker thread up; then the server's memory
# with the streams uncoded, then with them coded.
held('/plain/events.cgi', 'identity')
base = held('/plain/events.cgi', 'identity')
print(f'{label:28} {max(0, held(path, coding, dictionary) - base) / n:>14.0f}')
