"""Log directories both ways between Apache Kafka 4.4 and Fjord.

Kafka -> Fjord: partition directories written by a Kafka broker (one topic per
codec, a transactional topic with committed and aborted transactions, a
compacted topic after the cleaner ran) are copied into a stopped Fjord's log
dir, registered with `fjord import-logs`, and must be served exactly as Kafka
served them: the same offsets, timestamps, keys, values and headers, under
read_committed and read_uncommitted. Appends continue at Kafka's log end.

Fjord -> Kafka: the same workload produced to Fjord; after a clean stop,
`kafka-dump-log --deep-iteration` reads every `.log`, `.index`, `.timeindex`,
`.snapshot` and `.txnindex` file without an error, and a Kafka broker given the
segment files (beside the partition.metadata of topics it created itself)
recovers them and serves the same records.

Usage: log_dirs_both_ways.py   (FJORD_BIN: the broker binary; default
target/debug/fjord). Prints `ok:` lines and ends with "N passed, N failed".
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PEER = os.path.join(ROOT, "scripts", "peers", "kafka")
FJORD_BIN = os.path.abspath(os.environ.get("FJORD_BIN", os.path.join(ROOT, "target", "debug", "fjord")))
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
RECORDS = 500

passed = 0
failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok: {what}", flush=True)
    else:
        failed += 1
        print(f"FAIL: {what}", flush=True)
    return cond


# --- brokers -------------------------------------------------------------


class KafkaPeer:
    def __init__(self, home):
        self.home = home
        self.env = dict(os.environ, KAFKA_PEER_HOME=home)

    def run(self, *args, check=True):
        return subprocess.run([PEER, *args], env=self.env, check=check,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def start(self, *settings):
        return self.run("start", *settings).stdout.strip()

    def stop(self):
        self.run("stop")

    def logdir(self):
        return os.path.join(self.home, "data")

    def tool(self, *args):
        return self.run("tool", *args, check=False)


class Fjord:
    def __init__(self, data, *overrides):
        self.data = data
        self.overrides = [a for kv in overrides for a in ("--override", kv)]
        self.proc = None
        self.log = os.path.join(os.path.dirname(data), "fjord.log")

    def start(self):
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen(
            [FJORD_BIN, "serve", "--listeners", "PLAINTEXT://127.0.0.1:0",
             "--log-dirs", self.data, "--shards", "1", *self.overrides],
            stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.time() + 60
        while time.time() < deadline:
            with open(self.log, "r", errors="replace") as f:
                m = re.findall(r"listening on (127\.0\.0\.1:\d+)", f.read())
            if m:
                return m[-1]
            if self.proc.poll() is not None:
                raise RuntimeError(f"fjord exited: see {self.log}")
            time.sleep(0.1)
        raise RuntimeError(f"fjord did not start: see {self.log}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=60)
        self.proc = None


# --- workload ------------------------------------------------------------


def create_topics(bootstrap, suffix):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic(f"mig-{c}-{suffix}", 1, 1) for c in CODECS]
    topics.append(NewTopic(f"mig-txn-{suffix}", 1, 1))
    topics.append(NewTopic(f"mig-compact-{suffix}", 1, 1, config={
        "cleanup.policy": "compact", "segment.ms": "100",
        "min.cleanable.dirty.ratio": "0.01", "min.compaction.lag.ms": "0"}))
    for t, f in admin.create_topics(topics).items():
        f.result(30)


def produce(bootstrap, suffix):
    now = int(time.time() * 1000)
    for c in CODECS:
        p = Producer({"bootstrap.servers": bootstrap, "compression.type": c,
                      "linger.ms": 5, "enable.idempotence": True})
        for i in range(RECORDS):
            p.produce(f"mig-{c}-{suffix}", key=f"k{i}".encode(),
                      value=(f"value-{c}-{i}-" + "x" * (i % 50)).encode(),
                      timestamp=now - 100_000 + i * 10, headers=[("h", str(i).encode())])
        p.flush(30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for r in range(5):
        for i in range(300):
            p.produce(f"mig-compact-{suffix}", key=f"k{i % 20}".encode(), value=f"r{r}-{i}".encode())
        p.flush(30)
        time.sleep(0.2)  # lets segment.ms=100 roll a segment between rounds
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"mig-tx-{suffix}"})
    p.init_transactions(60)
    for r in range(4):
        p.begin_transaction()
        for i in range(50):
            p.produce(f"mig-txn-{suffix}", value=f"t{r}-{i}".encode())
        p.flush(30)
        if r % 2 == 0:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)


def dump(bootstrap, topic, isolation):
    """Every record of partition 0 as (offset, ts type, ts, key, value, headers)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"dump-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "enable.partition.eof": True})
    low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    c.assign([TopicPartition(topic, 0, low)])
    out = []
    deadline = time.time() + 60
    while time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                break
            raise RuntimeError(f"{topic}: {m.error()}")
        out.append((m.offset(), m.timestamp()[0], m.timestamp()[1], m.key(), m.value(),
                    tuple(m.headers() or ())))
    c.close()
    return (low, high), out


def dump_all(bootstrap, suffix):
    topics = [f"mig-{c}-{suffix}" for c in CODECS] + [f"mig-compact-{suffix}"]
    d = {t: dump(bootstrap, t, "read_uncommitted") for t in topics}
    t = f"mig-txn-{suffix}"
    d[t + "/read_committed"] = dump(bootstrap, t, "read_committed")
    d[t + "/read_uncommitted"] = dump(bootstrap, t, "read_uncommitted")
    return d


def wait_compacted(bootstrap, topic, logdir, deadline_s=60):
    """Until the cleaner has run: the first segment holds <= 20 records."""
    deadline = time.time() + deadline_s
    while time.time() < deadline:
        (_, _), recs = dump(bootstrap, topic, "read_uncommitted")
        if len(recs) < 1500:
            return True
        time.sleep(0.5)
    return False


def compare(name, a, b):
    same = True
    for k in a:
        if a[k] != b.get(k):
            same = False
            wa, ra = a[k]
            wb, rb = b.get(k, ((None, None), []))
            print(f"   {k}: watermarks {wa} vs {wb}, {len(ra)} vs {len(rb)} records", flush=True)
            for x, y in zip(ra, rb):
                if x != y:
                    print(f"   first difference: {x} vs {y}", flush=True)
                    break
    return check(same, name)


def copy_partitions(src, dst, suffix, files=None):
    for d in os.listdir(src):
        if d.endswith(f"-{suffix}-0") and d.startswith("mig-"):
            target = os.path.join(dst, d)
            if files is None:
                shutil.copytree(os.path.join(src, d), target)
            else:
                os.makedirs(target, exist_ok=True)
                for f in os.listdir(os.path.join(src, d)):
                    if files(f):
                        shutil.copy2(os.path.join(src, d, f), os.path.join(target, f))


# --- the two directions --------------------------------------------------


def kafka_to_fjord(work):
    suffix = uuid.uuid4().hex[:6]
    kafka = KafkaPeer(os.path.join(work, "kafka-a"))
    b = kafka.start("log.cleaner.backoff.ms=200")
    create_topics(b, suffix)
    produce(b, suffix)
    check(wait_compacted(b, f"mig-compact-{suffix}", kafka.logdir()),
          "Kafka compacted its compacted topic")
    served_by_kafka = dump_all(b, suffix)
    # Kafka holds its log dir's .lock (an fcntl lock): Fjord must not open it.
    imp = subprocess.run([FJORD_BIN, "import-logs", "--log-dirs", kafka.logdir(), "--dry-run"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    srv = subprocess.run([FJORD_BIN, "serve", "--listeners", "PLAINTEXT://127.0.0.1:0",
                          "--log-dirs", kafka.logdir(), "--shards", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    check(imp.returncode != 0 and "in use by another broker" in imp.stdout
          and srv.returncode != 0 and "in use by another broker" in srv.stdout,
          "fjord serve and fjord import-logs refuse a log dir a running Kafka broker holds")
    kafka.stop()

    data = os.path.join(work, "fjord-a", "data")
    os.makedirs(data)
    copy_partitions(kafka.logdir(), data, suffix)
    imp = subprocess.run([FJORD_BIN, "import-logs", "--log-dirs", data,
                          "--topic-config", f"mig-compact-{suffix}:cleanup.policy=compact"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print("   " + imp.stdout.strip().replace("\n", "\n   "), flush=True)
    check(imp.returncode == 0 and imp.stdout.count("(from partition.metadata)") == len(CODECS) + 2,
          "fjord import-logs registered every copied topic with Kafka's topic id")
    fjord = Fjord(data)
    fb = fjord.start()
    try:
        served_by_fjord = dump_all(fb, suffix)
        compare("Fjord serves Kafka's partition directories exactly (offsets, timestamps, "
                "keys, values, headers; both isolation levels)", served_by_kafka, served_by_fjord)
        admin = AdminClient({"bootstrap.servers": fb})
        from confluent_kafka.admin import ConfigResource
        res = ConfigResource(ConfigResource.Type.TOPIC, f"mig-compact-{suffix}")
        cfg = list(admin.describe_configs([res]).values())[0].result(30)
        check(cfg["cleanup.policy"].value == "compact", "the imported topic has its config")
        # Kafka gave the five codec producers ids 0..4; a new idempotent
        # producer on Fjord must get none of them, or its first batch would
        # be taken for a duplicate (or refused as out of order) on the topic
        # whose Kafka producer had that id.
        p = Producer({"bootstrap.servers": fb, "enable.idempotence": True, "linger.ms": 50})
        results = []
        for c in CODECS:
            for i in range(50):
                p.produce(f"mig-{c}-{suffix}", value=b"after-import",
                          on_delivery=lambda e, m: results.append((m.topic(), e, m.offset())))
        p.flush(30)
        errors = [r for r in results if r[1] is not None]
        check(not errors and len(results) == 50 * len(CODECS),
              f"a new idempotent producer appends to every imported topic ({errors[:2]})")
        c = Consumer({"bootstrap.servers": fb, "group.id": "hw-check"})
        highs = {t: c.get_watermark_offsets(TopicPartition(f"mig-{t}-{suffix}", 0), timeout=30)[1]
                 for t in CODECS}
        c.close()
        check(all(h == RECORDS + 50 for h in highs.values()),
              f"appends continue at Kafka's log end, none taken for a duplicate ({highs})")
    finally:
        fjord.stop()


def fjord_to_kafka(work):
    suffix = uuid.uuid4().hex[:6]
    data = os.path.join(work, "fjord-b", "data")
    os.makedirs(data)
    fjord = Fjord(data, "log.cleaner.backoff.ms=200")
    fb = fjord.start()
    try:
        create_topics(fb, suffix)
        produce(fb, suffix)
        check(wait_compacted(fb, f"mig-compact-{suffix}", data), "Fjord compacted its compacted topic")
        served_by_fjord = dump_all(fb, suffix)
    finally:
        fjord.stop()

    # kafka-dump-log on Fjord's own files.
    kafka = KafkaPeer(os.path.join(work, "kafka-b"))
    kinds = {}
    for d in sorted(os.listdir(data)):
        if not d.endswith(f"-{suffix}-0"):
            continue
        for f in sorted(os.listdir(os.path.join(data, d))):
            ext = f.rsplit(".", 1)[-1]
            if ext in ("log", "index", "timeindex", "snapshot", "txnindex"):
                kinds.setdefault(ext, []).append(os.path.join(data, d, f))
    for ext in ("log", "index", "timeindex", "snapshot", "txnindex"):
        files = kinds.get(ext, [])
        if not check(files, f"Fjord wrote .{ext} files ({len(files)})"):
            continue
        args = ["kafka-dump-log", "--files", ",".join(files)]
        if ext == "log":
            args += ["--deep-iteration", "--print-data-log"]
        if ext in ("index", "timeindex"):
            args += ["--index-sanity-check"]
        r = kafka.tool(*args)
        out = r.stdout + r.stderr
        bad = [ln for ln in out.splitlines()
               if re.search(r"(?i)exception|error|mismatch|corrupt|fails sanity|found log offset", ln)]
        check(r.returncode == 0 and not bad,
              f"kafka-dump-log reads Fjord's .{ext} files without complaint"
              + (f": {bad[:3]}" if bad else ""))
        if ext == "log":
            n = len(re.findall(r"\| offset: \d+", out))
            # (the compacted topic counts what the cleaner kept)
            want = sum(len(v[1]) for k, v in served_by_fjord.items() if not k.endswith("/read_committed"))
            # read_uncommitted dumps hold every data record; markers add 4.
            check(n == want + 4,
                  f"kafka-dump-log --deep-iteration sees every record ({n} = {want} + 4 markers)")

    # A Kafka broker given Fjord's segment files.
    b = kafka.start()
    create_topics(b, suffix)
    kafka.stop()
    for d in os.listdir(kafka.logdir()):
        if d.endswith(f"-{suffix}-0"):
            target = os.path.join(kafka.logdir(), d)
            for f in os.listdir(target):
                if f != "partition.metadata":
                    os.remove(os.path.join(target, f))
    copy_partitions(data, kafka.logdir(), suffix,
                    files=lambda f: f.rsplit(".", 1)[-1] in ("log", "index", "timeindex", "txnindex", "snapshot"))
    # No clean-shutdown marker: Kafka recovers (validates) the copied segments.
    marker = os.path.join(kafka.logdir(), ".kafka_cleanshutdown")
    if os.path.exists(marker):
        os.remove(marker)
    b = kafka.start()
    try:
        served_by_kafka = dump_all(b, suffix)
        compare("Kafka serves Fjord's segment files exactly", served_by_fjord, served_by_kafka)
    finally:
        kafka.stop()


def main():
    work = tempfile.mkdtemp(prefix="fjord-logdirs-")
    try:
        kafka_to_fjord(work)
        fjord_to_kafka(work)
    finally:
        for home in ("kafka-a", "kafka-b"):
            KafkaPeer(os.path.join(work, home)).run("stop", check=False)
        if failed == 0:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work} for inspection", flush=True)
    print(f"{passed} passed, {failed} failed", flush=True)
    sys.exit(0 if failed == 0 else 1)


if __name__ == "__main__":
    main()
