#!/usr/bin/env python3
"""A recording TCP proxy: accepts on 127.0.0.1:LISTEN, forwards each
connection to TARGET (host:port) unchanged, and writes every whole frame one
side sends into OUT_DIR as its own file.

Usage: record_proxy.py LISTEN_PORT TARGET OUT_DIR [--kafka | --quorum]

--kafka (the default): frames are Kafka requests (`i32` size, then the
  header: api key, version, ...); each client-to-broker frame is written as
  `req-<api key>-v<version>-<n>.bin`, size prefix included, so a file is
  exactly the bytes a client sent for one request.
--quorum: frames are Fjord's controller-listener frames (`u32` length, then
  JSON); both directions are written, without the length prefix, as
  `to-<n>.json` (what a node sent to the listener) and `from-<n>.json`
  (what it answered).

Runs until killed (SIGTERM).
"""

import os
import socket
import struct
import sys
import threading

lock = threading.Lock()
counter = [0]


def next_n():
    with lock:
        counter[0] += 1
        return counter[0]


def pump(src, dst, out_dir, mode, direction):
    buf = b""
    try:
        while True:
            data = src.recv(1 << 16)
            if not data:
                break
            dst.sendall(data)
            buf += data
            while len(buf) >= 4:
                (size,) = struct.unpack(">i" if mode == "kafka" else ">I", buf[:4])
                if size < 0 or size > (256 << 20):
                    buf = b""
                    break
                if len(buf) < 4 + size:
                    break
                frame, buf = buf[: 4 + size], buf[4 + size :]
                n = next_n()
                if mode == "kafka":
                    # Requests only: a response starts with the correlation id.
                    if direction == "to" and size >= 4:
                        api, ver = struct.unpack(">hh", frame[4:8])
                        name = f"req-{api}-v{ver}-{n}.bin"
                        with open(os.path.join(out_dir, name), "wb") as f:
                            f.write(frame)
                else:
                    name = f"{direction}-{n}.json"
                    with open(os.path.join(out_dir, name), "wb") as f:
                        f.write(frame[4:])
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    port = int(sys.argv[1])
    host, tport = sys.argv[2].rsplit(":", 1)
    out_dir = sys.argv[3]
    mode = "quorum" if "--quorum" in sys.argv[4:] else "kafka"
    os.makedirs(out_dir, exist_ok=True)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(128)
    while True:
        c, _ = ls.accept()
        try:
            s = socket.create_connection((host, int(tport)))
        except OSError:
            c.close()
            continue
        for sock in (c, s):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=pump, args=(c, s, out_dir, mode, "to"), daemon=True).start()
        threading.Thread(target=pump, args=(s, c, out_dir, mode, "from"), daemon=True).start()


if __name__ == "__main__":
    main()
