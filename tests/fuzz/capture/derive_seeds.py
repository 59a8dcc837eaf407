#!/usr/bin/env python3
"""Derives the committed fuzz seeds from a capture (capture.sh): the request
frames real clients sent, the controller-listener frames between real
nodes, and the data directories Fjord and Apache Kafka wrote.

Usage: derive_seeds.py WORK_DIR SEEDS_DIR

Replaces SEEDS_DIR/<target>/ for every target except the files named
`crash-*` / `regression-*` (inputs of crashes found, kept as they are).
Input layouts are those of `fjord::fuzzing` (see docs/fuzzing.md):
  decode_request       one request frame, size prefix included
  validate_batches     the records of one Produce partition
  legacy_message_sets  version byte + a Produce v0-v2 body
  compression          selector byte + records (or a compressed payload)
  partition_dir        tagged parts (tag, u32 length, bytes) of a partition directory
  checkpoint_files     selector byte + one file
  metadata_log         selector byte + quorum.log / a snapshot / tagged files
  controller_rpc       one controller-listener frame body (JSON)
  coordinator_records  selector byte + stored batches
"""

import hashlib
import json
import os
import re
import struct
import sys

WORK, OUT = sys.argv[1], sys.argv[2]
TARGETS = ["decode_request", "validate_batches", "legacy_message_sets", "compression",
           "partition_dir", "checkpoint_files", "metadata_log", "controller_rpc",
           "coordinator_records"]
seen = {t: set() for t in TARGETS}
written = {t: 0 for t in TARGETS}
# At most this many seeds per (target, name family): the set stays small.
CAP = {"partition_dir": 1, "compression": 2, "checkpoint_files": 3, "coordinator_records": 3,
       "metadata_log": 3}
family = {}


def put(target, name, data, limit=64 << 10):
    if len(data) > limit:
        return
    fam = (target, name)
    if family.get(fam, 0) >= CAP.get(target, 1 << 30):
        return
    h = hashlib.sha1(data).hexdigest()[:12]
    if h in seen[target]:
        return
    seen[target].add(h)
    family[fam] = family.get(fam, 0) + 1
    with open(os.path.join(OUT, target, f"{name}-{h}"), "wb") as f:
        f.write(data)
    written[target] += 1


for t in TARGETS:
    d = os.path.join(OUT, t)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if not f.startswith(("crash-", "regression-")):
            os.remove(os.path.join(d, f))

# --- request frames ----------------------------------------------------------


def uvarint(b, p):
    v = s = 0
    while True:
        x = b[p]
        p += 1
        v |= (x & 0x7F) << s
        s += 7
        if not x & 0x80:
            return v, p


def skip_tags(b, p):
    n, p = uvarint(b, p)
    for _ in range(n):
        _, p = uvarint(b, p)
        size, p = uvarint(b, p)
        p += size
    return p


def produce_parts(frame):
    """(version, body, [records of each partition]) of a Produce frame."""
    _, ver = struct.unpack_from(">hh", frame, 4)
    p = 12
    (clen,) = struct.unpack_from(">h", frame, p)
    p += 2 + max(clen, 0)
    flexible = ver >= 9
    if flexible:
        p = skip_tags(frame, p)
    body = frame[p:]
    out = []
    try:
        if ver >= 3:
            if flexible:
                n, p = uvarint(frame, p)
                p += max(n - 1, 0)
            else:
                (n,) = struct.unpack_from(">h", frame, p)
                p += 2 + max(n, 0)
        p += 6  # acks, timeout
        if flexible:
            nt, p = uvarint(frame, p)
            nt -= 1
        else:
            (nt,) = struct.unpack_from(">i", frame, p)
            p += 4
        for _ in range(nt):
            if flexible:
                n, p = uvarint(frame, p)
                p += n - 1
                np_, p = uvarint(frame, p)
                np_ -= 1
            else:
                (n,) = struct.unpack_from(">h", frame, p)
                p += 2 + n
                (np_,) = struct.unpack_from(">i", frame, p)
                p += 4
            for _ in range(np_):
                p += 4
                if flexible:
                    n, p = uvarint(frame, p)
                    n -= 1
                else:
                    (n,) = struct.unpack_from(">i", frame, p)
                    p += 4
                if n > 0:
                    out.append(frame[p:p + n])
                    p += n
                if flexible:
                    p = skip_tags(frame, p)
            if flexible:
                p = skip_tags(frame, p)
    except (struct.error, IndexError):
        pass
    return ver, body, out


reqdir = os.path.join(WORK, "requests")
frames = {}
for f in sorted(os.listdir(reqdir), key=lambda x: int(x.rsplit("-", 1)[1].split(".")[0])):
    m = re.match(r"req-(-?\d+)-v(-?\d+)-\d+\.bin", f)
    if not m:
        continue
    frames.setdefault((int(m[1]), int(m[2])), []).append(open(os.path.join(reqdir, f), "rb").read())

batches = []
for (api, ver), fs in sorted(frames.items()):
    fs.sort(key=len)
    picks = [fs[0]] + ([fs[len(fs) // 2]] if len(fs) > 2 else []) + ([fs[-1]] if len(fs) > 1 else [])
    for fr in picks:
        put("decode_request", f"api{api}-v{ver}", fr, limit=16 << 10)
    if api == 0:
        for fr in fs:
            v, body, recs = produce_parts(fr)
            if v <= 2:
                put("legacy_message_sets", f"produce-v{v}", bytes([v]) + body, limit=16 << 10)
            for r in recs:
                batches.append(r)

# librdkafka sends Produce v2 (magic 1) only as a 0.10 client without
# ApiVersions, which current kcat builds no longer do; the v2 seed is the
# captured v1 request's layout with a magic 1 message set (CRC32 over magic
# to value, a timestamp after the attributes), as Kafka 0.10 wrote them.
import zlib


def message_v1(value, ts=1_700_000_000_000):
    body = struct.pack(">bbq", 1, 0, ts) + struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    msg = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", 0, len(msg)) + msg


mset = message_v1(b"one") + message_v1(b"two")
body = struct.pack(">hi", 1, 30000) + struct.pack(">i", 1) + struct.pack(">h", 6) + b"legacy" \
    + struct.pack(">i", 1) + struct.pack(">ii", 0, len(mset)) + mset
put("legacy_message_sets", "produce-v2-magic1", bytes([2]) + body)
put("legacy_message_sets", "produce-v2-magic1-acks0", bytes([2]) + struct.pack(">h", 0) + body[2:])

# The first requests of a connection, in order (one stream).
order = sorted(os.listdir(reqdir), key=lambda x: int(x.rsplit("-", 1)[1].split(".")[0]))
stream = b"".join(open(os.path.join(reqdir, f), "rb").read() for f in order[:6])
put("decode_request", "stream", stream, limit=32 << 10)

by_attr = {}
for r in batches:
    if len(r) < 61:
        continue
    magic = r[16]
    attrs = struct.unpack_from(">h", r, 21)[0] if magic == 2 else r[17]
    by_attr.setdefault((magic, attrs), []).append(r)
for (magic, attrs), rs in sorted(by_attr.items()):
    rs.sort(key=len)
    for r in rs[:2] + rs[-1:]:
        put("validate_batches", f"magic{magic}-attrs{attrs}", r, limit=16 << 10)
        codec = attrs & 7
        if magic == 2:
            for target in sorted({1, 2 + codec % 4, 2 + (codec + 1) % 4}):
                for ts in (0, 6):
                    sel = codec | ((target + ts) << 3)
                    put("compression", f"codec{codec}-to{target + ts}", bytes([sel]) + r, limit=16 << 10)
            if codec:
                put("compression", f"payload{codec}", bytes([codec]) + r[61:], limit=16 << 10)

# --- controller-listener frames ----------------------------------------------
kinds = {}
for side in ("1", "2"):
    d = os.path.join(WORK, "quorum", side)
    if not os.path.isdir(d):
        continue
    for f in os.listdir(d):
        data = open(os.path.join(d, f), "rb").read()
        try:
            v = json.loads(data)
        except ValueError:
            continue
        k = next(iter(v)) if isinstance(v, dict) else str(v)
        if isinstance(v, dict) and isinstance(v[k], dict) and k in ("Controller", "Log", "Append"):
            inner = v[k]
            k = k + "-" + (next(iter(inner)) if inner else "")
        kinds.setdefault(k, []).append(data)
for k, ds in sorted(kinds.items()):
    ds.sort(key=len)
    for data in ds[:2] + ds[-1:]:
        put("controller_rpc", re.sub(r"[^A-Za-z0-9]", "_", k), data, limit=32 << 10)

# --- data directories --------------------------------------------------------


def tlv(items):
    out = b""
    for tag, data in items:
        out += bytes([tag]) + struct.pack(">I", len(data)) + data
    return out


SEG = {"log": 0, "index": 1, "timeindex": 2, "txnindex": 3, "snapshot": 4}
NAMED = {"leader-epoch-checkpoint": 5, "log-start-offset": 6, "cleaner-offset": 7,
         "partition.metadata": 8, ".clean_shutdown": 9}
CKPT = {"leader-epoch-checkpoint": 0, "replication-offset-checkpoint": 1,
        "recovery-point-offset-checkpoint": 1, "log-start-offset-checkpoint": 1,
        "cleaner-offset-checkpoint": 1, "log-start-offset": 3, "cleaner-offset": 3,
        "partition.metadata": 4, "meta.properties": 5}
EXT = {"snapshot": 6, "txnindex": 7, "index": 8, "timeindex": 9}


def first_batches(data, budget):
    """The whole batches of a .log within budget bytes."""
    p = 0
    while p + 12 <= len(data):
        (n,) = struct.unpack_from(">i", data, p + 8)
        if n <= 0 or p + 12 + n > budget:
            break
        p += 12 + n
    return data[:p]


for source in ("fjord-data", "fjord-quorum-data", "kafka-data"):
    root = os.path.join(WORK, source)
    if not os.path.isdir(root):
        continue
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if os.path.isfile(path):
            base = re.sub(r"-\d+$", "", name)
            if base in CKPT:
                put("checkpoint_files", f"{source}-{base}", bytes([CKPT[base] if base != "replication-offset-checkpoint" else 2])
                    + open(path, "rb").read())
                if CKPT[base] == 1:
                    put("checkpoint_files", f"{source}-{base}", bytes([1]) + open(path, "rb").read())
            continue
        if name == "__cluster_metadata-0":
            files = {f: open(os.path.join(path, f), "rb").read() for f in os.listdir(path)
                     if os.path.isfile(os.path.join(path, f))}
            log = files.get("quorum.log", b"")
            pos, starts = 0, []
            while pos + 8 <= len(log):
                (n,) = struct.unpack_from(">I", log, pos)
                if pos + 8 + n > len(log):
                    break
                starts.append(pos)
                pos += 8 + n
            starts.append(pos)
            for i in range(0, max(len(starts) - 1, 0), 8):
                put("metadata_log", f"{source}-quorum-log", bytes([0]) + log[starts[i]:starts[min(i + 8, len(starts) - 1)]])
            snap = files.get("quorum-snapshot.json")
            if snap:
                try:
                    put("metadata_log", f"{source}-image", bytes([1]) + bytes(json.loads(snap)["data"]))
                except (ValueError, KeyError, TypeError):
                    pass
            tags = {"quorum.log": 0, "quorum-snapshot.json": 1, "quorum-vote.json": 2,
                    "quorum-committed.json": 3, "quorum-purged.json": 4}
            items = [(tags[f], d) for f, d in files.items() if f in tags and f != "quorum.log"]
            items.append((0, log[:starts[min(6, len(starts) - 1)]] if starts else b""))
            put("metadata_log", f"{source}-files", bytes([2]) + tlv(items))
            continue
        if not os.path.isdir(path):
            continue
        items, total = [], 0
        for f in sorted(os.listdir(path)):
            fp = os.path.join(path, f)
            data = open(fp, "rb").read()
            m = re.match(r"(\d{20})\.(\w+)$", f)
            if m and m[2] in EXT:
                put("checkpoint_files", f"{source}-{m[2]}", bytes([EXT[m[2]]]) + data[:8192])
            if f in CKPT:
                put("checkpoint_files", f"{source}-{f}", bytes([CKPT[f]]) + data)
            if m and m[2] in SEG:
                if m[2] == "log":
                    data = first_batches(data, 6 << 10)
                elif m[2] in ("index", "timeindex"):
                    data = data[:2048]
                part = (SEG[m[2]], struct.pack(">q", int(m[1])) + data)
            elif f in NAMED:
                part = (NAMED[f], data)
            else:
                continue
            if total + len(part[1]) > (16 << 10):
                continue
            total += len(part[1])
            items.append(part)
        if not any(p[0] == 0 and len(p[1]) > 8 for p in items):
            continue
        put("partition_dir", f"{source}-{re.sub(r'-[0-9a-f]{6}(?=-|$)|[0-9-]+', '', name)[:32]}", tlv(items))
        # The same directory after a crash: no clean-shutdown marker.
        put("partition_dir", f"{source}-{re.sub(r'-[0-9a-f]{6}(?=-|$)|[0-9-]+', '', name)[:32]}-unclean",
            tlv([p for p in items if p[0] != 9]))
        if name.startswith(("__consumer_offsets", "__transaction_state")):
            for f in sorted(os.listdir(path)):
                if f.endswith(".log"):
                    data = first_batches(open(os.path.join(path, f), "rb").read(), 16 << 10)
                    if data:
                        put("coordinator_records", f"{source}-{name.split('-')[0].strip('_')}", bytes([0]) + data)

for t in TARGETS:
    d = os.path.join(OUT, t)
    size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
    print(f"{t}: {len(os.listdir(d))} seeds, {size} bytes")
