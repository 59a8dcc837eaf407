#!/usr/bin/env python3
"""Apache Kafka 4.4's own command-line tools against a running broker.

Usage: kafka_tools.py BOOTSTRAP   (run by scripts/compat/kafka_tools.sh)
Environment: COMPAT_BROKER=fjord|kafka (where the log directory is: Fjord's
is $FJORD_DATA_DIR, Kafka's is `scripts/peers/kafka logdir` under
$KAFKA_PEER_HOME); KT_TOOL_TIMEOUT (seconds per tool run, default 60).

Every tool runs through `scripts/peers/kafka tool NAME ARGS`, one JVM each
(about 1.5 s), so the runner keeps to 36 tool runs. What each one checks is
in its check's `ok:` line; the outputs are parsed, not just the exit codes.
The transactional and idempotent records that kafka-transactions and
kafka-dump-log look at are written in process with confluent-kafka, which
also lets a transaction stay open while the tools describe it.

Checks that Fjord is known to fail are listed in KNOWN_DIFFERENCES with their
FINDINGS.md entry: against Fjord they are still evaluated, but a failure
prints `KNOWN DIFFERENCE: ...` instead of failing the run. Against Kafka
every check counts.
"""

import hashlib
import json
import os
import shutil
import re
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checks import CheckFailed, log, run_checks  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PEER = ROOT / "scripts" / "peers" / "kafka"
BROKER = os.environ.get("COMPAT_BROKER", "fjord")
TOOL_TIMEOUT = float(os.environ.get("KT_TOOL_TIMEOUT", "60"))
STEP_TIMEOUT = 30.0
# Below scripts/compat/run's 120 s per runner, so the summary still prints.
RUN_BUDGET = float(os.environ.get("KT_RUN_BUDGET", "105"))

# Check name -> what differs (see scripts/compat/FINDINGS.md, "Kafka command-line tools 4.4").
KNOWN_DIFFERENCES = {}


def expect(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def known_difference(name, passed, detail):
    """For a check in KNOWN_DIFFERENCES: against Fjord, report instead of failing."""
    if BROKER == "fjord" and name in KNOWN_DIFFERENCES:
        if passed:
            log(f"note: {name} now passes against Fjord; remove it from KNOWN_DIFFERENCES and FINDINGS.md")
            return True
        log(f"KNOWN DIFFERENCE: {KNOWN_DIFFERENCES[name]}: {detail} (FINDINGS.md)")
        return False
    expect(passed, detail)
    return True


def log_dir():
    if BROKER == "kafka":
        out = subprocess.run([str(PEER), "logdir"], capture_output=True, text=True, check=True)
        return Path(out.stdout.strip())
    d = os.environ.get("FJORD_DATA_DIR")
    if not d:
        raise CheckFailed("FJORD_DATA_DIR is not set (scripts/compat/run exports it)")
    return Path(d)


class Tool:
    """Kafka's tools, one JVM each. The first run records the classes it loads in an AppCDS
    archive (target/compat-kafka-tools-<key>.jsa, JDK 13+); the later runs map it, which halves a
    tool's start-up CPU time. KT_CDS=0 turns that off; a stale or foreign archive is ignored
    by the JVM."""

    runs = 0
    times = []  # (seconds, tool name)

    @staticmethod
    def archive_path():
        """One archive per Kafka class path and JVM, so a new version records a new one."""
        jars = sorted(str(j) for j in (ROOT / "target" / "peers").glob("kafka-*/libs/*.jar"))
        java = os.path.realpath(shutil.which(os.environ.get("JAVA", "java")) or "java")
        key = hashlib.sha1("\n".join(jars + [java]).encode()).hexdigest()[:12]
        return ROOT / "target" / f"compat-kafka-tools-{key}.jsa"

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        self.CDS = self.archive_path()

    def env(self):
        env = dict(os.environ)
        if os.environ.get("KT_CDS", "1") != "1":
            return env, None
        quiet = "-Xlog:disable -Xlog:all=error:stderr"
        if self.CDS.exists():
            env["JAVA_TOOL_OPTIONS"] = f"{quiet} -XX:SharedArchiveFile={self.CDS}"
            return env, None
        tmp = self.CDS.with_name(f"{self.CDS.name}.{os.getpid()}.tmp")
        env["JAVA_TOOL_OPTIONS"] = f"{quiet} -XX:ArchiveClassesAtExit={tmp}"
        return env, tmp

    def run(self, name, *args, stdin=None, bootstrap=True, ok_rc=(0,)):
        """Runs one of Kafka's tools; gives (stdout, stderr). A non-zero exit fails the check."""
        argv = [str(PEER), "tool", name]
        if bootstrap:
            argv += ["--bootstrap-server", self.bootstrap]
        argv += list(args)
        Tool.runs += 1
        started = time.monotonic()
        env, archive = self.env()
        try:
            p = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=TOOL_TIMEOUT, env=env)
            if archive is not None and archive.exists():
                os.replace(archive, self.CDS)
        except subprocess.TimeoutExpired:
            raise CheckFailed(f"{name} {' '.join(args)}: no exit within {TOOL_TIMEOUT:.0f}s")
        finally:
            Tool.times.append((time.monotonic() - started, f"{name} {args[0] if args else ''}"))
            if os.environ.get("KT_VERBOSE") == "1":
                print(f"  [{Tool.times[-1][0]:.1f}s] {name} {' '.join(args)[:100]}", file=sys.stderr, flush=True)
        stderr = "".join(line for line in p.stderr.splitlines(keepends=True)
                         if not line.startswith("Picked up JAVA_TOOL_OPTIONS:"))
        if p.returncode not in ok_rc:
            raise CheckFailed(
                f"{name} {' '.join(args)} exited {p.returncode}\n  stdout: {p.stdout[-1500:]}\n  stderr: {stderr[-1500:]}"
            )
        return p.stdout, stderr


def no_errors(name, text):
    bad = [
        line
        for line in text.splitlines()
        if re.search(r"error|exception|mismatch|corrupt|out of order", line, re.I)
        and "isvalid: true" not in line
    ]
    expect(not bad, f"{name} printed errors: {bad[:5]}")


def kv_pairs(line):
    """`a: 1 b: x c: 2` -> {'a': '1', 'b': 'x', 'c': '2'} (values without spaces)."""
    return dict(re.findall(r"(\w+): (\S*)", line))


def split_dump(text):
    """kafka-dump-log output for several files -> {path: [lines]}."""
    out, cur = {}, None
    for line in text.splitlines():
        if line.startswith("Dumping "):
            cur = line[len("Dumping "):].strip()
            out[cur] = []
        elif cur is not None:
            out[cur].append(line)
    return out


def parse_log_dump(lines):
    """Deep-iteration dump lines -> list of batches, each with its records."""
    batches = []
    for line in lines:
        if line.startswith("baseOffset:"):
            b = kv_pairs(line)
            batches.append(
                {
                    "base": int(b["baseOffset"]),
                    "last": int(b["lastOffset"]),
                    "count": int(b["count"]),
                    "pid": int(b["producerId"]),
                    "txn": b["isTransactional"] == "true",
                    "control": b["isControl"] == "true",
                    "pos": int(b["position"]),
                    "size": int(b["size"]),
                    "maxts": int(b.get("CreateTime", b.get("LogAppendTime", "-1"))),
                    "valid": b.get("isvalid") == "true",
                    "records": [],
                }
            )
        elif line.startswith("| offset:"):
            head, _, payload = line.partition(" payload: ")
            r = kv_pairs(head)
            rec = {"offset": int(r["offset"]), "ts": int(r["CreateTime"]), "key": None, "value": None}
            if "endTxnMarker" in r:
                rec["marker"] = r["endTxnMarker"]
            else:
                _, has_key, key = head.partition(" key: ")
                rec["key"] = key if has_key else None
                rec["value"] = payload
            batches[-1]["records"].append(rec)
    return batches


def records_of(batches):
    return [r for b in batches for r in b["records"]]


def parse_console(out):
    """Console consumer lines `CreateTime:T|Partition:P|Offset:O|KEY|VALUE`."""
    recs = []
    for line in out.splitlines():
        m = re.fullmatch(r"CreateTime:(\d+)\|Partition:(\d+)\|Offset:(\d+)\|([^|]*)\|(.*)", line)
        if m:
            recs.append(
                {"ts": int(m[1]), "p": int(m[2]), "offset": int(m[3]), "key": m[4], "value": m[5]}
            )
    return recs


def parse_table(out):
    """Whitespace-separated table with a header row -> list of dicts (header names as keys)."""
    rows, header = [], None
    for line in out.splitlines():
        cells = line.split()
        if not cells:
            continue
        if header is None or cells == header:
            if cells[0] in ("GROUP", "TransactionalId", "CoordinatorId", "ProducerId"):
                header = cells
            continue
        if len(cells) == len(header):
            rows.append(dict(zip(header, cells)))
    return rows


def parse_tsv(out):
    """kafka-transactions' tab-separated tables (cells padded with spaces)."""
    lines = [line for line in out.splitlines() if "\t" in line]
    if not lines:
        return []
    header = [c.strip() for c in lines[0].split("\t")]
    return [dict(zip(header, (c.strip() for c in line.split("\t")))) for line in lines[1:]]


def now_ms():
    return int(time.time() * 1000)


class Runner:
    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        self.tool = Tool(bootstrap)
        suffix = f"{int(time.time())}-{os.getpid()}"
        self.topic = f"kt-tools-{suffix}"  # keyed records, 3 partitions, then 5
        self.dump_topic = f"kt-dump-{suffix}"  # transactions + roll, 1 partition
        self.group = f"kt-group-{suffix}"
        self.txn_id = f"kt-txn-{suffix}"
        self.dir = log_dir()
        self.produced = []  # (key, value) in order, first console producer
        self.consumed = []  # console consumer records
        self.leo = {}  # partition -> log end offset of self.topic
        self.dump_values = {}  # offset -> value prefix, self.dump_topic

    def conf(self, **extra):
        c = {"bootstrap.servers": self.bootstrap, "socket.timeout.ms": 10000, "message.timeout.ms": 30000}
        c.update(extra)
        return c

    # ------------------------------------------------------------ kafka-topics
    def check_topics_create_list_describe(self):
        t = self.tool
        out, _ = t.run(
            "kafka-topics", "--create", "--topic", self.topic, "--partitions", "3",
            "--replication-factor", "1", "--config", "retention.ms=86400000", "--config", "segment.ms=3600000",
        )
        expect(f"Created topic {self.topic}." in out, f"create: {out!r}")
        out, _ = t.run("kafka-topics", "--list")
        expect(self.topic in out.split(), f"--list does not show {self.topic}: {out!r}")
        self.expect_described(3, {"retention.ms": "86400000", "segment.ms": "3600000"})
        log(f"ok: kafka-topics --create (3 partitions, 2 configs), --list, --describe ({self.topic})")

    def expect_described(self, partitions, configs):
        out, _ = self.tool.run("kafka-topics", "--describe", "--topic", self.topic)
        head = [line for line in out.splitlines() if line.startswith(f"Topic: {self.topic}\tTopicId:")]
        expect(len(head) == 1, f"--describe: no topic line: {out!r}")
        h = head[0]
        expect(f"PartitionCount: {partitions}\t" in h, f"--describe: want PartitionCount {partitions}: {h!r}")
        expect("ReplicationFactor: 1\t" in h, f"--describe: want ReplicationFactor 1: {h!r}")
        got = dict(kv.split("=", 1) for kv in h.split("Configs: ", 1)[1].strip().split(",") if "=" in kv)
        for k, v in configs.items():
            expect(got.get(k) == v, f"--describe: want {k}={v} in Configs: {h!r}")
        parts = sorted(
            int(m[1])
            for m in re.finditer(r"^\tTopic: \S+\tPartition: (\d+)\tLeader: 1\tReplicas: 1\tIsr: 1\b", out, re.M)
        )
        expect(parts == list(range(partitions)), f"--describe: partitions led by broker 1 {parts}: {out!r}")

    def check_topics_alter_partitions(self):
        self.tool.run("kafka-topics", "--alter", "--topic", self.topic, "--partitions", "5")
        self.expect_described(5, {"retention.ms": "999999"})
        log("ok: kafka-topics --alter --partitions 5, then --describe shows 5 partitions led by broker 1")

    def check_topics_delete(self):
        self.tool.run("kafka-topics", "--delete", "--topic", self.topic)
        # Deletion is asynchronous on Kafka; --list is asked again (bounded) until it has caught up.
        for _ in range(5):
            out, _ = self.tool.run("kafka-topics", "--list")
            if self.topic not in out.split():
                log(f"ok: kafka-topics --delete, then --list no longer shows {self.topic}")
                return
        raise CheckFailed(f"{self.topic} is still listed after --delete")

    # ----------------------------------------------------------- kafka-configs
    def check_configs_topic(self):
        t = self.tool
        out, _ = t.run(
            "kafka-configs", "--entity-type", "topics", "--entity-name", self.topic, "--alter",
            "--add-config", "retention.ms=999999,max.message.bytes=200000", "--delete-config", "segment.ms",
        )
        expect(f"Completed updating config for topic {self.topic}." in out, f"alter: {out!r}")
        out, _ = t.run("kafka-configs", "--entity-type", "topics", "--entity-name", self.topic, "--describe")
        dyn = dict(re.findall(r"^  (\S+?)=(\S*) sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:\1=\2[,}]", out, re.M))
        lines = [line for line in out.splitlines() if line.startswith("  ")]
        expect(
            dyn == {"retention.ms": "999999", "max.message.bytes": "200000"} and len(lines) == 2,
            f"dynamic topic configs after alter: {out!r}",
        )
        out, _ = t.run("kafka-configs", "--entity-type", "topics", "--entity-name", self.topic, "--describe", "--all")
        allc = dict(re.findall(r"^  (\S+?)=(\S*) sensitive=", out, re.M))
        want = {
            "retention.ms": "999999",
            "max.message.bytes": "200000",
            "segment.ms": "604800000",
            "segment.bytes": "1073741824",
            "cleanup.policy": "delete",
            "min.insync.replicas": "1",
            "message.timestamp.type": "CreateTime",
            "retention.bytes": "-1",
        }
        wrong = {k: allc.get(k) for k, v in want.items() if allc.get(k) != v}
        expect(not wrong, f"--describe --all: want {want}, differs at {wrong}")
        syn = dict(re.findall(r"^  (\S+?)=\S* sensitive=false synonyms=\{(.*)\}$", out, re.M))
        expect("DYNAMIC_TOPIC_CONFIG" not in syn.get("segment.ms", "DYNAMIC_TOPIC_CONFIG"),
               f"segment.ms should have no topic override after --delete-config: {syn.get('segment.ms')}")
        log("ok: kafka-configs topic --alter (--add-config 2, --delete-config 1), --describe (exactly the 2 "
            "dynamic configs), --describe --all (defaults back)")
        self.synonyms = syn

    def check_configs_synonyms(self):
        want = {
            "retention.ms": "DYNAMIC_TOPIC_CONFIG:retention.ms=999999",
            "segment.ms": "",
            "cleanup.policy": "DEFAULT_CONFIG:log.cleanup.policy=delete",
            "segment.bytes": "DEFAULT_CONFIG:log.segment.bytes=1073741824",
            "max.message.bytes": "DYNAMIC_TOPIC_CONFIG:max.message.bytes=200000, DEFAULT_CONFIG:message.max.bytes=1048588",
        }
        got = {k: self.synonyms.get(k) for k in want}
        if known_difference(
            "configs-topic-synonyms", got == want,
            f"--describe --all synonyms {got}; Kafka gives {want} (log.retention.ms and log.roll.ms have no "
            "default of their own in Kafka: the hours keys carry it)",
        ):
            log("ok: kafka-configs --describe --all synonyms as Kafka lists them (retention.ms, segment.ms, "
                "cleanup.policy, segment.bytes, max.message.bytes)")

    def check_configs_broker(self):
        out, _ = self.tool.run("kafka-configs", "--entity-type", "brokers", "--entity-name", "1", "--describe", "--all")
        expect("All configs for broker 1 are:" in out, f"broker configs: {out[:300]!r}")
        allc = dict(re.findall(r"^  (\S+?)=(\S*) sensitive=", out, re.M))
        want = {
            "log.dirs": str(self.dir),
            "node.id": "1",
            "num.partitions": "1",
            "message.max.bytes": "1048588",
            "log.segment.bytes": "1073741824",
            "auto.create.topics.enable": "true",
        }
        wrong = {k: allc.get(k) for k, v in want.items() if allc.get(k) != v}
        expect(not wrong, f"broker 1 --describe --all: want {want}, differs at {wrong}")
        log(f"ok: kafka-configs broker 1 --describe --all ({len(allc)} configs; log.dirs, node.id, defaults)")

    # ------------------------------------------- console producer and consumer
    def check_console_produce_consume(self):
        self.produced = [(f"k{i:02d}", f"v{i:02d}") for i in range(30)]
        data = "".join(f"{k}|{v}\n" for k, v in self.produced)
        _, err = self.tool.run(
            "kafka-console-producer", "--topic", self.topic, "--reader-property", "parse.key=true",
            "--reader-property", "key.separator=|", stdin=data,
        )
        no_errors("kafka-console-producer", err)
        out, err = self.consume(30, from_beginning=True)
        recs = parse_console(out)
        expect(f"Processed a total of 30 messages" in out + err, f"console consumer: {err[-500:]!r}")
        expect(sorted((r["key"], r["value"]) for r in recs) == self.produced,
               f"consumed key/values differ: {[(r['key'], r['value']) for r in recs]}")
        by_p = {}
        for r in recs:
            by_p.setdefault(r["p"], []).append(r)
        keys_at = {}
        for p, rs in by_p.items():
            rs.sort(key=lambda r: r["offset"])
            expect([r["offset"] for r in rs] == list(range(len(rs))), f"partition {p} offsets {[r['offset'] for r in rs]}")
            expect([r["key"] for r in rs] == sorted(r["key"] for r in rs), f"partition {p} out of produce order")
            for r in rs:
                keys_at[r["key"]] = p
        expect(set(by_p) <= {0, 1, 2}, f"partitions {sorted(by_p)}")
        self.consumed = recs
        self.key_partition = keys_at
        self.phase1 = {p: len(by_p.get(p, [])) for p in range(3)}
        log(f"ok: kafka-console-producer (parse.key) 30 keyed records; kafka-console-consumer --from-beginning "
            f"--group read them with keys/offsets/partitions, offsets contiguous per partition {self.phase1}")

    def consume(self, n, from_beginning):
        args = [
            "kafka-console-consumer", "--topic", self.topic, "--group", self.group, "--max-messages", str(n),
            "--timeout-ms", "20000",
        ]
        if from_beginning:
            args.append("--from-beginning")
        for prop in ("print.timestamp=true", "print.partition=true", "print.offset=true", "print.key=true",
                     "key.separator=|"):
            args += ["--formatter-property", prop]
        return self.tool.run(*args)

    def produce_more(self):
        """Six more records, keys k00..k05 again, on the partitions those keys went to."""
        p = Producer(self.conf(**{"enable.idempotence": False, "linger.ms": 0}))
        errors = []
        more = [(f"k{i:02d}", f"w{i:02d}") for i in range(6)]

        def on_delivery(err, msg):
            if err is not None:
                errors.append(str(err))
            else:
                self.consumed.append({"ts": msg.timestamp()[1], "p": msg.partition(), "offset": msg.offset(),
                                      "key": msg.key().decode(), "value": msg.value().decode(), "later": True})

        for k, v in more:
            p.produce(self.topic, key=k.encode(), value=v.encode(), partition=self.key_partition[k],
                      on_delivery=on_delivery)
        left = p.flush(STEP_TIMEOUT)
        expect(not errors and left == 0, f"producing 6 more records: {errors}, {left} left")
        self.leo = dict(self.phase1)
        for k, _ in more:
            self.leo[self.key_partition[k]] += 1

    # -------------------------------------------------- kafka-consumer-groups
    def check_groups_list_describe(self):
        self.produce_more()
        out, _ = self.tool.run("kafka-consumer-groups", "--list")
        expect(self.group in out.split(), f"--list does not show {self.group}: {out!r}")
        out, err = self.tool.run("kafka-consumer-groups", "--describe", "--group", self.group)
        rows = {int(r["PARTITION"]): r for r in parse_table(out) if r.get("TOPIC") == self.topic}
        want = {
            p: (str(self.phase1[p]), str(self.leo[p]), str(self.leo[p] - self.phase1[p])) for p in range(3)
        }
        got = {p: (r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"]) for p, r in rows.items()}
        expect(got == want, f"--describe (current, log-end, lag) per partition: got {got}, want {want}\n{out}")
        expect(f"Consumer group '{self.group}' has no active members." in out + err,
               f"--describe: {out!r} {err!r}")
        log(f"ok: kafka-consumer-groups --list, --describe: committed offsets, log-end offsets and lag {want}")

    def reset(self, *how):
        out, _ = self.tool.run("kafka-consumer-groups", "--group", self.group, "--reset-offsets", *how, "--execute")
        return {int(r["PARTITION"]): int(r["NEW-OFFSET"]) for r in parse_table(out) if r.get("TOPIC") == self.topic}

    def check_groups_reset(self):
        got = self.reset("--to-earliest", "--topic", self.topic)
        expect(got == {0: 0, 1: 0, 2: 0}, f"--to-earliest: {got}")
        to = min(1, self.leo[0])
        got = self.reset("--to-offset", str(to), "--topic", f"{self.topic}:0")
        expect(got == {0: to}, f"--to-offset {to} on partition 0: {got}")
        got = self.reset("--shift-by", "1", "--topic", self.topic)
        want = {p: min(self.leo[p], (to if p == 0 else 0) + 1) for p in range(3)}
        expect(got == want, f"--shift-by 1: {got}, want {want}")
        self.reset_to = want
        log(f"ok: kafka-consumer-groups --reset-offsets --to-earliest, --to-offset {to} (partition 0), "
            f"--shift-by 1 --execute: new offsets {want}")

    def check_consume_from_committed(self):
        want = {(r["p"], r["offset"]): (r["key"], r["value"]) for r in self.consumed
                if r["offset"] >= self.reset_to[r["p"]]}
        out, err = self.consume(len(want), from_beginning=False)
        got = {(r["p"], r["offset"]): (r["key"], r["value"]) for r in parse_console(out)}
        expect(got == want, f"resumed at the reset offsets: got {sorted(got)}, want {sorted(want)}\n{err[-500:]}")
        log(f"ok: kafka-console-consumer --group resumed at the reset offsets: {len(want)} records, none missing, "
            "none repeated")

    def check_groups_delete(self):
        out, _ = self.tool.run("kafka-consumer-groups", "--delete", "--group", self.group)
        expect(f"Deletion of requested consumer groups ('{self.group}') was successful." in out, f"--delete: {out!r}")
        out, _ = self.tool.run("kafka-consumer-groups", "--list")
        expect(self.group not in out.split(), f"--list still shows {self.group}")
        log("ok: kafka-consumer-groups --delete, then --list no longer shows the group")

    # ------------------------------------------ kafka-get-offsets, delete-records
    def get_offsets(self, time_arg):
        out, _ = self.tool.run("kafka-get-offsets", "--topic", self.topic, "--time", str(time_arg))
        got = {}
        for line in out.splitlines():
            m = re.fullmatch(re.escape(self.topic) + r":(\d+):(-?\d+)", line.strip())
            if m:
                got[int(m[1])] = int(m[2])
        return got

    def check_get_offsets(self):
        got = self.get_offsets(-1)
        expect(got == self.leo, f"--time -1 (latest): {got}, want {self.leo}")
        recs = [(r["p"], r["offset"], r["ts"]) for r in self.consumed]
        # By timestamp: the first record at or after the median timestamp, per partition.
        target = sorted(ts for _, _, ts in recs)[len(recs) // 2]
        want = {}
        for p in range(3):
            offs = [o for (pp, o, ts) in recs if pp == p and ts >= target]
            if offs:
                want[p] = min(offs)
        got = self.get_offsets(target)
        expect(got == want, f"--time {target}: {got}, want {want}")
        # Max timestamp (-3): the first record with the partition's largest timestamp.
        want_max = {}
        for p in range(3):
            rs = [(ts, o) for (pp, o, ts) in recs if pp == p]
            if rs:
                mts = max(ts for ts, _ in rs)
                want_max[p] = min(o for ts, o in rs if ts == mts)
        got_max = self.get_offsets(-3)
        expect(got_max == want_max, f"--time -3 (max timestamp): {got_max}, want {want_max}")
        log(f"ok: kafka-get-offsets --time -1 {self.leo}, --time <median timestamp> {want}, --time -3 {want_max}")

    def check_delete_records(self):
        spec = {"version": 1, "partitions": [
            {"topic": self.topic, "partition": 0, "offset": 1},
            {"topic": self.topic, "partition": 1, "offset": -1},
        ]}
        path = Path(os.environ.get("TMPDIR", "/tmp")) / f"{self.topic}-delete.json"
        path.write_text(json.dumps(spec))
        try:
            out, _ = self.tool.run("kafka-delete-records", "--offset-json-file", str(path))
        finally:
            path.unlink()
        got = {int(m[1]): int(m[2]) for m in re.finditer(re.escape(self.topic) + r"-(\d+)\tlow_watermark: (\d+)", out)}
        want = {0: min(1, self.leo[0]), 1: self.leo[1]}
        expect(got == want, f"kafka-delete-records low watermarks: {got}, want {want}\n{out}")
        got = self.get_offsets(-2)
        want = {0: want[0], 1: want[1], 2: 0}
        expect(got == want, f"--time -2 (earliest) after delete-records: {got}, want {want}")
        log(f"ok: kafka-delete-records (offset 1, offset -1 = high watermark) low watermarks; "
            f"kafka-get-offsets --time -2 then {got}")

    # ---------------------------------------------------------- transactions
    def check_transactions(self):
        admin = AdminClient(self.conf())
        fut = admin.create_topics(
            [NewTopic(self.dump_topic, 1, 1, config={"segment.bytes": "1048576"})], operation_timeout=STEP_TIMEOUT
        )
        fut[self.dump_topic].result(STEP_TIMEOUT)
        delivered, errors = {}, []

        def on_delivery(err, msg):
            if err is not None:
                errors.append(str(err))
            else:
                delivered[msg.offset()] = msg.value()[:6].decode()

        # One record per batch, so the batch boundaries (and where the segment rolls) do not
        # depend on timing.
        common = self.conf(**{"linger.ms": 0, "batch.num.messages": 1})
        tp = Producer(dict(common, **{"transactional.id": self.txn_id, "transaction.timeout.ms": 60000}))
        tp.init_transactions(STEP_TIMEOUT)
        tp.begin_transaction()
        for i in range(5):
            tp.produce(self.dump_topic, value=f"c{i}".encode(), partition=0, on_delivery=on_delivery)
        tp.flush(STEP_TIMEOUT)
        tp.commit_transaction(STEP_TIMEOUT)
        before = now_ms()
        tp.begin_transaction()
        for i in range(3):
            tp.produce(self.dump_topic, value=f"a{i}".encode(), partition=0, on_delivery=on_delivery)
        tp.flush(STEP_TIMEOUT)
        expect(not errors and len(delivered) == 8, f"transactional records: {errors}, {len(delivered)} delivered")
        first_open = min(o for o, v in delivered.items() if v.startswith("a"))

        # The transaction is open now.
        t = self.tool
        out, _ = t.run("kafka-transactions", "list")
        rows = [r for r in parse_tsv(out) if r.get("TransactionalId") == self.txn_id]
        expect(len(rows) == 1 and rows[0]["TransactionState"] == "Ongoing", f"list (open): {out!r}")
        pid = rows[0]["ProducerId"]
        out, _ = t.run("kafka-transactions", "describe", "--transactional-id", self.txn_id)
        d = parse_tsv(out)
        after = now_ms()
        expect(len(d) == 1, f"describe (open): {out!r}")
        d = d[0]
        expect(
            d["TransactionState"] == "Ongoing" and d["ProducerId"] == pid and d["ProducerEpoch"] == "0"
            and d["TransactionTimeoutMs"] == "60000" and d["TopicPartitions"] == f"{self.dump_topic}-0",
            f"describe (open): {d}",
        )
        start = d["CurrentTransactionStartTimeMs"]
        expect(start.isdigit() and before <= int(start) <= after, f"describe (open): start time {start} not in [{before}, {after}]")
        out, _ = t.run("kafka-transactions", "describe-producers", "--topic", self.dump_topic, "--partition", "0")
        prods = parse_tsv(out)
        expect(
            len(prods) == 1 and prods[0]["ProducerId"] == pid and prods[0]["LastSequence"] == "7"
            and prods[0]["CurrentTransactionStartOffset"] == str(first_open),
            f"describe-producers (open): {prods}, want producer {pid}, last sequence 7, start offset {first_open}",
        )
        log(f"ok: kafka-transactions list / describe / describe-producers on an open transaction: Ongoing, "
            f"producer {pid}, {self.dump_topic}-0, start offset {first_open}")

        tp.abort_transaction(STEP_TIMEOUT)
        # Then enough records from an idempotent producer to roll the 1 MiB segment.
        ip = Producer(dict(common, **{"enable.idempotence": True, "acks": "all"}))
        for i in range(1100):
            while True:
                try:
                    ip.produce(self.dump_topic, value=(f"f{i:05d}" + "x" * 994).encode(), partition=0,
                               on_delivery=on_delivery)
                    break
                except BufferError:
                    ip.poll(0.05)
            ip.poll(0)
        left = ip.flush(STEP_TIMEOUT)
        expect(not errors and left == 0 and len(delivered) == 1108, f"filler: {errors}, {left} left")
        self.dump_values = delivered
        self.txn_pid = int(pid)
        self.abort_window = (before, after)

    def check_transactions_describe_ended(self):
        out, _ = self.tool.run("kafka-transactions", "describe", "--transactional-id", self.txn_id)
        d = parse_tsv(out)
        expect(len(d) == 1 and d[0]["TransactionState"] == "CompleteAbort" and d[0]["TopicPartitions"] == "",
               f"describe (aborted): {out!r}")
        start = d[0]["CurrentTransactionStartTimeMs"]
        before, after = self.abort_window
        start_ok = known_difference(
            "transactions-describe-ended",
            start.isdigit() and before <= int(start) <= after,
            f"describe after the abort gives CurrentTransactionStartTimeMs {start}; Kafka keeps the aborted "
            f"transaction's start (in [{before}, {after}])",
        )
        log("ok: kafka-transactions describe after the abort: CompleteAbort, no partitions"
            + (", the aborted transaction's start time" if start_ok else ""))

    # ------------------------------------------------------------- log dirs
    def check_log_dirs(self):
        out, _ = self.tool.run("kafka-log-dirs", "--describe", "--topic-list", f"{self.topic},{self.dump_topic}")
        line = [line for line in out.splitlines() if line.startswith("{")]
        expect(len(line) == 1, f"kafka-log-dirs: {out!r}")
        doc = json.loads(line[0])
        brokers = doc["brokers"]
        expect(len(brokers) == 1 and brokers[0]["broker"] == 1, f"brokers: {brokers}")
        dirs = brokers[0]["logDirs"]
        expect(len(dirs) == 1 and dirs[0]["logDir"] == str(self.dir) and dirs[0]["error"] is None, f"logDirs: {dirs}")
        got = {p["partition"]: p["size"] for p in dirs[0]["partitions"]}
        want = {}
        for name in [f"{self.topic}-{i}" for i in range(5)] + [f"{self.dump_topic}-0"]:
            want[name] = sum(f.stat().st_size for f in (self.dir / name).glob("*.log"))
        expect(got == want, f"partition sizes: {got}, want the .log file sizes {want}")
        log(f"ok: kafka-log-dirs --describe: one log dir {self.dir}, 6 partitions, sizes equal the .log files")

    # ---------------------------------------------------- broker-api-versions
    def check_api_versions(self):
        out, _ = self.tool.run("kafka-broker-api-versions")
        expect(re.search(rf"^{re.escape(self.bootstrap)} \(id: 1 rack: null isFenced: false\) -> \(", out, re.M),
               f"broker line: {out[:200]!r}")
        apis = dict(re.findall(r"^\t(\w+)\(\d+\): (.*?),?$", out, re.M))
        needed = [
            "Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit", "OffsetFetch", "FindCoordinator",
            "JoinGroup", "Heartbeat", "LeaveGroup", "SyncGroup", "DescribeGroups", "ListGroups", "ApiVersions",
            "CreateTopics", "DeleteTopics", "DeleteRecords", "InitProducerId", "AddPartitionsToTxn",
            "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit", "DescribeConfigs", "AlterConfigs", "DescribeLogDirs",
            "CreatePartitions", "DeleteGroups", "IncrementalAlterConfigs", "OffsetDelete", "DescribeCluster",
            "DescribeProducers", "DescribeTransactions", "ListTransactions",
        ]
        bad = {}
        for name in needed:
            m = re.fullmatch(r"(\d+)(?: to (\d+))? \[usable: (\d+)\]", apis.get(name, ""))
            if not m or int(m[3]) != int(m[2] or m[1]):
                bad[name] = apis.get(name)
        expect(not bad, f"APIs the tools use, not usable at the broker's highest version: {bad}")
        log(f"ok: kafka-broker-api-versions: broker 1, {len(needed)} APIs the tools use are usable at the "
            f"broker's highest version")

    # --------------------------------------------------------- kafka-dump-log
    def segments(self, topic_dir):
        return sorted(topic_dir.glob("*.log"))

    def check_dump_log(self):
        d = self.dir / f"{self.dump_topic}-0"
        segs = self.segments(d)
        expect(len(segs) == 2, f"{d}: want 2 segments after producing 1.1 MB with segment.bytes=1048576, got {segs}")
        t0 = self.dir / f"{self.topic}-0"
        t0_segs = self.segments(t0)
        files = [str(s) for s in t0_segs + segs]
        out, err = self.tool.run("kafka-dump-log", "--deep-iteration", "--print-data-log", "--files", ",".join(files),
                                 bootstrap=False)
        no_errors("kafka-dump-log --deep-iteration", err)
        dumps = split_dump(out)
        # The console-produced topic, partition 0: exactly the records that were consumed.
        batches = [b for s in t0_segs for b in parse_log_dump(dumps.get(str(s), []))]
        expect(all(b["valid"] for b in batches), f"{t0}: a batch is not valid")
        got = [(r["offset"], r["key"], r["value"]) for r in records_of(batches)]
        want = sorted((r["offset"], r["key"], r["value"]) for r in self.consumed if r["p"] == 0)
        expect(got == want, f"{t0} dump: {got}, want {want}")
        expect(all(b["count"] == len(b["records"]) for b in batches), f"{t0}: batch counts differ from records")

        # The transactional topic: every offset once, values as delivered, markers where they belong.
        seg_batches = [parse_log_dump(dumps.get(str(s), [])) for s in segs]
        recs = [r for bs in seg_batches for r in records_of(bs)]
        offsets = [r["offset"] for r in recs]
        expect(offsets == list(range(len(recs))) and len(recs) == 1110, f"{d}: offsets 0..1109 once each, got "
               f"{len(recs)} records, first {offsets[:12]}")
        values = {r["offset"]: r["value"][:6] for r in recs if "marker" not in r}
        expect(values == self.dump_values, f"{d}: values differ from the delivery reports at "
               f"{[o for o in values if values[o] != self.dump_values.get(o)][:10]}")
        markers = {r["offset"]: r["marker"] for r in recs if "marker" in r}
        expect(markers == {5: "COMMIT", 9: "ABORT"}, f"{d}: markers {markers}")
        txn_batches = [b for b in seg_batches[0] if b["txn"]]
        expect([b["base"] for b in txn_batches] == list(range(10)) and all(b["pid"] == self.txn_pid for b in txn_batches),
               f"{d}: transactional batches {[(b['base'], b['pid']) for b in txn_batches]}")
        expect(all(b["valid"] and b["count"] == len(b["records"]) for bs in seg_batches for b in bs),
               f"{d}: a batch is invalid or its count differs from its records")
        second_base = int(segs[1].stem)
        expect(seg_batches[1][0]["base"] == second_base and seg_batches[0][-1]["last"] == second_base - 1,
               f"{d}: segment {segs[1].name} starts at {seg_batches[1][0]['base']}")
        self.seg0 = seg_batches[0]
        self.second_base = second_base
        log(f"ok: kafka-dump-log --deep-iteration --print-data-log on {len(files)} .log files: offsets, keys, "
            f"values, batch counts as produced; {self.dump_topic}-0 has 1108 records + COMMIT/ABORT markers "
            f"over 2 segments (roll at {second_base})")

    def expected_indexes(self, batches):
        """Kafka's LogSegment.append rule: an offset index entry (and a time index entry if the
        largest timestamp grew) before a batch once more than index.interval.bytes (4096) were
        appended since the last one; a last time index entry when the segment is rolled."""
        idx, tidx = [], []
        since, max_ts, max_batch = 0, -1, None
        for b in batches:
            if b["maxts"] > max_ts:
                max_ts, max_batch = b["maxts"], b
            if since > 4096:
                idx.append((b["last"], b["pos"]))
                if max_ts > (tidx[-1][0] if tidx else -1):
                    tidx.append((max_ts, max_batch))
                since = 0
            since += b["size"]
        if max_ts > (tidx[-1][0] if tidx else -1):
            tidx.append((max_ts, max_batch))
        return idx, tidx

    def check_dump_indexes(self):
        d = self.dir / f"{self.dump_topic}-0"
        base = d / "00000000000000000000"
        # Kafka writes the snapshot when the segment rolls; Fjord does so in the background.
        deadline = time.monotonic() + STEP_TIMEOUT
        while not list(d.glob("*.snapshot")):
            expect(time.monotonic() < deadline, f"{d}: no .snapshot within {STEP_TIMEOUT:.0f}s of the roll")
            time.sleep(0.1)
        snaps = sorted(d.glob("*.snapshot"))
        files = [f"{base}.index", f"{base}.timeindex", f"{base}.txnindex"] + [str(s) for s in snaps]
        out, err = self.tool.run("kafka-dump-log", "--files", ",".join(files), bootstrap=False)
        no_errors("kafka-dump-log (indexes)", out + err)
        dumps = split_dump(out)
        want_idx, want_tidx = self.expected_indexes(self.seg0)
        idx = [(int(p["offset"]), int(p["position"])) for p in map(kv_pairs, dumps.get(f"{base}.index", []))
               if "position" in p]
        expect(idx == want_idx, f".index: {len(idx)} entries, first {idx[:4]}; Kafka's rule gives {len(want_idx)}, "
               f"first {want_idx[:4]}")
        tidx = [(int(p["timestamp"]), int(p["offset"])) for p in map(kv_pairs, dumps.get(f"{base}.timeindex", []))
                if "timestamp" in p]
        ok = len(tidx) == len(want_tidx) and all(
            ts == wts and wb["base"] <= off <= wb["last"] for (ts, off), (wts, wb) in zip(tidx, want_tidx)
        )
        expect(ok, f".timeindex: {tidx}; Kafka's rule gives {[(ts, b['last']) for ts, b in want_tidx]}")
        log(f"ok: kafka-dump-log .index ({len(idx)} entries) and .timeindex ({len(tidx)} entries) of the rolled "
            "segment are exactly what Kafka's index.interval.bytes rule gives for its batches")

        txn = [kv_pairs(line) for line in dumps.get(f"{base}.txnindex", []) if "producerId" in line]
        marker = next(r["offset"] for b in self.seg0 for r in b["records"] if r.get("marker") == "ABORT")
        want = [{"version": "0", "producerId": str(self.txn_pid), "firstOffset": "6", "lastOffset": str(marker),
                 "lastStableOffset": str(marker + 1)}]
        expect(txn == want, f".txnindex: {txn}, want {want}")
        log(f"ok: kafka-dump-log .txnindex: the aborted transaction (producer {self.txn_pid}, offsets 6..{marker}, "
            f"LSO {marker + 1})")

        expect(len(snaps) == 1, f"snapshots: {[s.name for s in snaps]}")
        snap_off = int(snaps[0].stem)
        entries = {int(p["producerId"]): p for p in map(kv_pairs, dumps.get(str(snaps[0]), [])) if "producerId" in p}
        expect(self.txn_pid in entries and len(entries) == 2, f"{snaps[0].name}: producers {sorted(entries)}")
        tx = entries.pop(self.txn_pid)
        (idem_pid, idem), = entries.items()
        abort_ts = next(r["ts"] for b in self.seg0 for r in b["records"] if r.get("marker") == "ABORT")
        want_tx = {"producerEpoch": "0", "coordinatorEpoch": "0", "currentTxnFirstOffset": "OptionalLong.empty",
                   "lastSequence": "7", "lastOffset": "8", "lastTimestamp": str(abort_ts)}
        want_idem = {"producerEpoch": "0", "coordinatorEpoch": "-1", "currentTxnFirstOffset": "OptionalLong.empty",
                     "lastOffset": str(snap_off - 1), "lastSequence": str(snap_off - 1 - 10)}
        expect({k: tx.get(k) for k in want_tx} == want_tx, f"{snaps[0].name} transactional producer: {tx}, want {want_tx}")
        expect({k: idem.get(k) for k in want_idem} == want_idem, f"{snaps[0].name} idempotent producer: {idem}, "
               f"want {want_idem}")
        log(f"ok: kafka-dump-log {snaps[0].name}: 2 producers, the transactional one ended (last sequence 7, "
            f"offset 8, the ABORT marker's timestamp), the idempotent one up to offset {snap_off - 1}")
        self.snapshot_offset = snap_off

    def check_snapshot_name(self):
        if known_difference(
            "dump-log-snapshot-name",
            self.snapshot_offset == self.second_base,
            f"the snapshot written at the roll is {self.snapshot_offset:020d}.snapshot; Kafka names it after the "
            f"new segment's base offset, {self.second_base:020d}.snapshot",
        ):
            log("ok: the producer-state snapshot of the roll is named after the new segment's base offset")

    def check_verify_and_sanity(self):
        d = self.dir / f"{self.dump_topic}-0"
        base = d / "00000000000000000000"
        files = [f"{base}.index", f"{base}.timeindex"]
        out, err = self.tool.run("kafka-dump-log", "--verify-index-only", "--files", ",".join(files), bootstrap=False)
        extra = [line for line in out.splitlines() if not line.startswith("Dumping ")]
        expect(not extra, f"--verify-index-only printed: {extra[:10]}")
        no_errors("kafka-dump-log --verify-index-only", err)
        out, err = self.tool.run("kafka-dump-log", "--index-sanity-check", "--files", ",".join(files), bootstrap=False)
        for f in files:
            expect(f"{f} passed sanity check." in out, f"--index-sanity-check {f}: {out!r} {err[-500:]!r}")
        no_errors("kafka-dump-log --index-sanity-check", err)
        log("ok: kafka-dump-log --verify-index-only (no mismatch) and --index-sanity-check (passed) on the rolled "
            "segment's .index and .timeindex")


def main():
    if len(sys.argv) < 2 and not os.environ.get("FJORD_BOOTSTRAP"):
        print("usage: kafka_tools.py BOOTSTRAP", file=sys.stderr)
        return 2
    bootstrap = sys.argv[1] if len(sys.argv) > 1 else os.environ["FJORD_BOOTSTRAP"]
    r = Runner(bootstrap)
    started = time.monotonic()
    checks = [
        ("topics-create-list-describe", r.check_topics_create_list_describe),
        ("configs-topic", r.check_configs_topic),
        ("configs-topic-synonyms", r.check_configs_synonyms),
        ("configs-broker", r.check_configs_broker),
        ("console-produce-consume", r.check_console_produce_consume),
        ("groups-list-describe", r.check_groups_list_describe),
        ("groups-reset-offsets", r.check_groups_reset),
        ("console-consume-from-committed", r.check_consume_from_committed),
        ("get-offsets", r.check_get_offsets),
        ("delete-records", r.check_delete_records),
        ("topics-alter-partitions", r.check_topics_alter_partitions),
        ("transactions-open", r.check_transactions),
        ("transactions-describe-ended", r.check_transactions_describe_ended),
        ("log-dirs", r.check_log_dirs),
        ("broker-api-versions", r.check_api_versions),
        ("dump-log-segments", r.check_dump_log),
        ("dump-log-indexes", r.check_dump_indexes),
        ("dump-log-snapshot-name", r.check_snapshot_name),
        ("dump-log-verify", r.check_verify_and_sanity),
        ("groups-delete", r.check_groups_delete),
        ("topics-delete", r.check_topics_delete),
    ]
    rc = run_checks(f"kafka-tools ({BROKER})", checks, RUN_BUDGET)
    slow = ", ".join(f"{name} {secs:.1f}s" for secs, name in sorted(Tool.times, reverse=True)[:4])
    log(f"{Tool.runs} tool runs, {sum(t for t, _ in Tool.times):.0f}s of {time.monotonic() - started:.0f}s "
        f"(slowest: {slow})")
    return rc


if __name__ == "__main__":
    sys.exit(main())
