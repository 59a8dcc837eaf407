#!/usr/bin/env python3
"""The record batches a broker serves for one partition, read with a raw
Fetch v4 request (standard library only), so a runner can check how the
broker *stored* them: the codec in each batch's attributes, and the first
bytes of its records (the xerial snappy header, for instance).

Usage: batches.py BOOTSTRAP TOPIC PARTITION
    prints one line per batch: "<base offset> <codec name> <records count>"

As a module: fetch_batches(bootstrap, topic, partition) -> [Batch]
"""
import socket
import struct
import sys
from collections import namedtuple

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
Batch = namedtuple("Batch", "base_offset codec records_count body")


def _string(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _read_exact(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        out += chunk
    return out


def fetch_raw(bootstrap, topic, partition, offset=0, max_bytes=64 << 20, timeout=10.0):
    """The `records` bytes of one partition from `offset` (Fetch v4)."""
    host, port = bootstrap.rsplit(":", 1)
    body = struct.pack(">iiiib", -1, 100, 0, max_bytes, 0)
    body += struct.pack(">i", 1) + _string(topic)
    body += struct.pack(">i", 1) + struct.pack(">iqi", partition, offset, max_bytes)
    header = struct.pack(">hhi", 1, 4, 1) + _string("fjord-compat-batches")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
        size = struct.unpack(">i", _read_exact(sock, 4))[0]
        resp = _read_exact(sock, size)
    pos = 4 + 4  # correlation id, throttle time
    (topics,) = struct.unpack_from(">i", resp, pos)
    pos += 4
    for _ in range(topics):
        (n,) = struct.unpack_from(">h", resp, pos)
        pos += 2 + n
        (parts,) = struct.unpack_from(">i", resp, pos)
        pos += 4
        for _ in range(parts):
            p, err, _hw, _lso = struct.unpack_from(">ihqq", resp, pos)
            pos += 22
            (aborted,) = struct.unpack_from(">i", resp, pos)
            pos += 4 + max(aborted, 0) * 16
            (rlen,) = struct.unpack_from(">i", resp, pos)
            pos += 4
            records = resp[pos:pos + max(rlen, 0)]
            pos += max(rlen, 0)
            if p == partition:
                if err != 0:
                    raise RuntimeError(f"fetch {topic}-{partition}: error {err}")
                return records
    raise RuntimeError(f"fetch {topic}-{partition}: partition missing from the response")


def fetch_batches(bootstrap, topic, partition, offset=0):
    """Every whole batch served from `offset`, as Batch tuples."""
    data = fetch_raw(bootstrap, topic, partition, offset)
    out = []
    pos = 0
    while pos + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + length
        if end > len(data):
            break  # a partial batch at the end of the response
        (attributes,) = struct.unpack_from(">h", data, pos + 21)
        (count,) = struct.unpack_from(">i", data, pos + 57)
        codec = CODECS.get(attributes & 7, f"unknown({attributes & 7})")
        out.append(Batch(base, codec, count, data[pos + 61:end]))
        pos = end
    return out


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    for b in fetch_batches(sys.argv[1], sys.argv[2], int(sys.argv[3])):
        print(b.base_offset, b.codec, b.records_count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
