"""A three-node cluster with real clients: Fjord, then Apache Kafka 4.4.

Starts its own three combined broker+controller nodes (KRaft keys, one
cluster id, static controller.quorum.voters) and checks, with confluent-kafka
and kafka-python:
  * Metadata from each node: the three brokers at their addresses, one
    cluster id, a controller id among the nodes (what each node itself
    answers, and what each client bootstrapped to that node alone sees)
  * a topic with 6 partitions and RF 3: three replicas each, all in the ISR,
    every broker leading two partitions, the same on every node
  * producing through a bootstrap list of one node reaches every leader, and
    consumers bootstrapped to another node read everything back
  * admin requests (CreateTopics, CreatePartitions, IncrementalAlterConfigs,
    AlterConfigs, DescribeConfigs, DeleteTopics) sent to a node that is not
    the active controller, visible on every node
  * kafka-reassign-partitions --execute then --verify moves a partition with
    records to two other brokers; the old broker deletes its copy
The same checks run against a three-node Apache Kafka 4.4 cluster
(scripts/peers/kafka, one home per node): a check that fails there is a wrong
check. The active controller is Metadata's controller id on Fjord; Kafka's
Metadata names a random broker there, so on Kafka it is DescribeQuorum's
leader (kafka-metadata-quorum).

Usage: cluster.py [fjord] [kafka]   (default both; FJORD_BIN: the broker
binary, default target/debug/fjord). Prints `ok:` and `FAIL:` lines and ends
with "N passed, N failed".
"""

import base64
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from collections import Counter, defaultdict

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ConfigSource, NewPartitions, NewTopic, ResourceType)
import confluent_kafka
import kafka
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTopicPartition
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType as KpConfigResourceType

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PEER = os.path.join(ROOT, "scripts", "peers", "kafka")
FJORD_BIN = os.path.abspath(os.environ.get("FJORD_BIN", os.path.join(ROOT, "target", "debug", "fjord")))
NODES = (1, 2, 3)
PARTITIONS = 6
PER_PARTITION = 20
STEP = float(os.environ.get("CLUSTER_STEP_TIMEOUT", "30"))

passed = 0
failed = 0


def log(msg):
    print(msg, flush=True)


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
        log(f"ok: {what}")
    else:
        failed += 1
        log(f"FAIL: {what}{': ' + detail if detail else ''}")
    return cond


class Failed(Exception):
    """A step saw the cluster behave other than it should."""


def poll(what, fn, timeout=STEP):
    """Calls fn() until it returns a true value; raises Failed with the last
    value (or exception) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            v = fn()
            if v:
                return v
            last = v
        except Exception as exc:  # noqa: BLE001 (a node may be between states)
            last = f"{type(exc).__name__}: {exc}"
        if time.monotonic() >= deadline:
            raise Failed(f"{what}: not within {timeout:.0f}s (last: {last})")
        time.sleep(0.2)


def run_check(name, fn):
    try:
        fn()
        check(True, name)
    except Failed as exc:
        check(False, name, str(exc))
    except Exception as exc:  # noqa: BLE001 (a client exception fails the check)
        check(False, name, f"unexpected {type(exc).__name__}: {exc}")


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
        return low if low > 21000 else 32768
    except (OSError, ValueError, IndexError):
        return 32768


_NEXT_PORT = [None]


def free_port():
    """A loopback port below the kernel's ephemeral range that nothing
    listens on now. Outgoing connections take their local ports from the
    ephemeral range, so a killed node's port could be taken by one while it
    is down; ports below it are never, so a restarted node gets its own."""
    low, span = 20000, _ephemeral_low() - 20000
    if _NEXT_PORT[0] is None:
        _NEXT_PORT[0] = (os.getpid() * 7919) % span
    for _ in range(span):
        port = low + _NEXT_PORT[0] % span
        _NEXT_PORT[0] += 1
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError("no free port below the ephemeral range")


def kafka_uuid():
    """A random id as Kafka prints it (22 base64url characters, not starting
    with '-')."""
    while True:
        s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not s.startswith("-"):
            return s


# --- Metadata as one node answers it (a raw v4 request) -------------------


def _string(buf, pos):
    (n,) = struct.unpack_from(">h", buf, pos)
    pos += 2
    if n < 0:
        return None, pos
    return buf[pos:pos + n].decode(), pos + n


def node_metadata(addr, topics=None):
    """Metadata v4 from the broker at `addr` itself: (brokers {id: addr},
    cluster id, controller id, {topic: (error, {partition: (error, leader,
    replicas, isr)})})."""
    body = b""
    if topics is None:
        body += struct.pack(">i", -1)
    else:
        body += struct.pack(">i", len(topics))
        for t in topics:
            body += struct.pack(">h", len(t)) + t.encode()
    body += b"\x00"  # allow_auto_topic_creation
    client = b"cluster-compat"
    header = struct.pack(">hhih", 3, 4, 7, len(client)) + client
    frame = header + body
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        size = b""
        while len(size) < 4:
            chunk = s.recv(4 - len(size))
            if not chunk:
                raise ConnectionError("closed")
            size += chunk
        (n,) = struct.unpack(">i", size)
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
    pos = 4  # correlation id
    pos += 4  # throttle_time_ms
    (nb,) = struct.unpack_from(">i", buf, pos)
    pos += 4
    brokers = {}
    for _ in range(nb):
        (bid,) = struct.unpack_from(">i", buf, pos)
        pos += 4
        bhost, pos = _string(buf, pos)
        (bport,) = struct.unpack_from(">i", buf, pos)
        pos += 4
        _, pos = _string(buf, pos)  # rack
        brokers[bid] = f"{bhost}:{bport}"
    cluster_id, pos = _string(buf, pos)
    (controller,) = struct.unpack_from(">i", buf, pos)
    pos += 4
    (nt,) = struct.unpack_from(">i", buf, pos)
    pos += 4
    out = {}
    for _ in range(nt):
        (terr,) = struct.unpack_from(">h", buf, pos)
        pos += 2
        name, pos = _string(buf, pos)
        pos += 1  # is_internal
        (np_,) = struct.unpack_from(">i", buf, pos)
        pos += 4
        parts = {}
        for _ in range(np_):
            perr, pidx, leader = struct.unpack_from(">hii", buf, pos)
            pos += 10
            lists = []
            for _ in range(2):
                (k,) = struct.unpack_from(">i", buf, pos)
                pos += 4
                lists.append(list(struct.unpack_from(f">{k}i", buf, pos)))
                pos += 4 * k
            parts[pidx] = (perr, leader, lists[0], lists[1])
        out[name] = (terr, parts)
    return brokers, cluster_id, controller, out


# --- clusters ---------------------------------------------------------------


class FjordCluster:
    kind = "fjord"

    def __init__(self, work):
        self.work = os.path.join(work, "fjord")
        self.cluster_id = None
        self.ports = {n: (free_port(), free_port()) for n in NODES}
        self.procs = {}

    def bootstrap(self, n):
        return f"127.0.0.1:{self.ports[n][0]}"

    def log_path(self, n):
        return os.path.join(self.work, f"n{n}", "fjord.log")

    def data_dir(self, n):
        return os.path.join(self.work, f"n{n}", "data")

    def start(self):
        out = subprocess.run([FJORD_BIN, "random-uuid"], check=True, capture_output=True, text=True)
        self.cluster_id = out.stdout.strip()
        voters = ",".join(f"{n}@127.0.0.1:{self.ports[n][1]}" for n in NODES)
        for n in NODES:
            d = os.path.join(self.work, f"n{n}")
            os.makedirs(os.path.join(d, "data"), exist_ok=True)
            props = os.path.join(d, "server.properties")
            with open(props, "w") as f:
                f.write("process.roles=broker,controller\n"
                        f"node.id={n}\n"
                        f"controller.quorum.voters={voters}\n"
                        f"listeners=PLAINTEXT://127.0.0.1:{self.ports[n][0]},"
                        f"CONTROLLER://127.0.0.1:{self.ports[n][1]}\n"
                        "controller.listener.names=CONTROLLER\n"
                        "inter.broker.listener.name=PLAINTEXT\n"
                        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n"
                        f"log.dirs={os.path.join(d, 'data')}\n")
            subprocess.run([FJORD_BIN, "format", "--config", props, "--cluster-id", self.cluster_id],
                           check=True, capture_output=True)
        for n in NODES:
            props = os.path.join(self.work, f"n{n}", "server.properties")
            logf = open(self.log_path(n), "ab")
            self.procs[n] = subprocess.Popen([FJORD_BIN, "serve", "--config", props, "--shards", "1"],
                                             stdout=logf, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL)
        for n in NODES:
            deadline = time.monotonic() + 60
            while True:
                with open(self.log_path(n), errors="replace") as f:
                    if f"listening on {self.bootstrap(n)}" in f.read():
                        break
                if self.procs[n].poll() is not None:
                    raise RuntimeError(f"fjord node {n} exited ({self.procs[n].returncode}); see {self.log_path(n)}")
                if time.monotonic() >= deadline:
                    raise RuntimeError(f"fjord node {n} did not start; see {self.log_path(n)}")
                time.sleep(0.1)

    def kill9(self, n):
        self.procs[n].kill()
        self.procs[n].wait()

    def restart(self, n):
        """Starts node `n` again with its command and waits until it serves."""
        with open(self.log_path(n), errors="replace") as f:
            before = f.read().count(f"listening on {self.bootstrap(n)}")
        props = os.path.join(self.work, f"n{n}", "server.properties")
        logf = open(self.log_path(n), "ab")
        self.procs[n] = subprocess.Popen([FJORD_BIN, "serve", "--config", props, "--shards", "1"],
                                         stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

        def serving():
            with open(self.log_path(n), errors="replace") as f:
                return f.read().count(f"listening on {self.bootstrap(n)}") > before
        poll(f"fjord node {n} serving again", serving, timeout=60)

    def active_controller(self):
        """Metadata's controller id, once every node names the same one."""
        def agreed():
            seen = {node_metadata(self.bootstrap(n), [])[2] for n in NODES}
            return seen.pop() if len(seen) == 1 and min(seen | {0}) >= 0 else None
        return poll("one controller named by every node", agreed)

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        ok = True
        for n, p in self.procs.items():
            try:
                rc = p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                rc = "killed after 60 s"
            if rc not in (0, -signal.SIGTERM):
                ok = False
                log(f"fjord node {n} exit status {rc}; the last lines of its log:")
                with open(self.log_path(n), errors="replace") as f:
                    for line in f.read().splitlines()[-40:]:
                        log(f"    node {n}| {line}")
        self.procs = {}
        return ok


class KafkaCluster:
    kind = "kafka"

    def __init__(self, work):
        self.work = os.path.join(work, "kafka")
        self.cluster_id = kafka_uuid()
        self.ports = {n: (free_port(), free_port()) for n in NODES}

    def bootstrap(self, n):
        return f"127.0.0.1:{self.ports[n][0]}"

    def data_dir(self, n):
        return os.path.join(self.work, f"n{n}", "data")

    def env(self, n):
        return dict(os.environ,
                    KAFKA_PEER_HOME=os.path.join(self.work, f"n{n}"),
                    KAFKA_PEER_PORT=str(self.ports[n][0]),
                    KAFKA_PEER_CONTROLLER_PORT=str(self.ports[n][1]),
                    KAFKA_PEER_CLUSTER_ID=self.cluster_id,
                    KAFKA_HEAP_OPTS=os.environ.get("KAFKA_HEAP_OPTS", "-Xmx512m -Xms512m"))

    def start(self):
        voters = ",".join(f"{n}@127.0.0.1:{self.ports[n][1]}" for n in NODES)
        # Together: a node serves only once a quorum of voters runs.
        procs = {n: subprocess.Popen([PEER, "start", f"node.id={n}", f"controller.quorum.voters={voters}"],
                                     env=self.env(n), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
                 for n in NODES}
        errors = []
        for n, p in procs.items():
            out, err = p.communicate(timeout=300)
            if p.returncode != 0 or out.strip() != self.bootstrap(n):
                errors.append(f"node {n}: {out.strip()} {err.strip()[-2000:]}")
        if errors:
            raise RuntimeError("Kafka did not start: " + "; ".join(errors))

    def kill9(self, n):
        subprocess.run([PEER, "kill"], env=self.env(n), capture_output=True, timeout=120, check=True)

    def restart(self, n):
        """Starts node `n` again with its earlier settings; returns once it serves."""
        subprocess.run([PEER, "restart"], env=self.env(n), capture_output=True, timeout=300, check=True)

    def active_controller(self):
        """DescribeQuorum's leader (Kafka's Metadata names a random broker)."""
        def leader():
            out = subprocess.run([PEER, "tool", "kafka-metadata-quorum", "--bootstrap-server",
                                  self.bootstrap(NODES[0]), "describe", "--status"],
                                 env=self.env(NODES[0]), capture_output=True, text=True, timeout=60)
            m = re.search(r"LeaderId:\s+(\d+)", out.stdout)
            return int(m.group(1)) if m else None
        return poll("the quorum leader from kafka-metadata-quorum", leader, timeout=90)

    def stop(self):
        procs = [subprocess.Popen([PEER, "stop"], env=self.env(n), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL) for n in NODES]
        for p in procs:
            p.wait(timeout=180)
        return True


# --- checks -------------------------------------------------------------------


class Checks:
    def __init__(self, cluster):
        self.c = cluster
        self.kind = cluster.kind
        self.suffix = f"{int(time.time())}-{os.getpid()}"
        self.topic = f"cluster-rf3-{self.suffix}"

    def name(self, what):
        return f"{self.kind}: {what}"

    def all_addrs(self):
        return {n: self.c.bootstrap(n) for n in NODES}

    # Metadata -------------------------------------------------------------

    def metadata_from_each_node(self):
        ids = set()
        for n in NODES:
            brokers, cid, controller, _ = node_metadata(self.c.bootstrap(n), [])
            if brokers != self.all_addrs():
                raise Failed(f"node {n} lists brokers {brokers}")
            if controller not in NODES:
                raise Failed(f"node {n} names controller {controller}")
            ids.add(cid)
        if ids != {self.c.cluster_id}:
            raise Failed(f"cluster ids {ids}, formatted {self.c.cluster_id}")

    def confluent_metadata_through_each_node(self):
        for n in NODES:
            a = AdminClient({"bootstrap.servers": self.c.bootstrap(n)})
            md = a.list_topics(timeout=STEP)
            brokers = {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}
            if brokers != self.all_addrs():
                raise Failed(f"through node {n}: brokers {brokers}")
            if md.cluster_id != self.c.cluster_id:
                raise Failed(f"through node {n}: cluster id {md.cluster_id}")
            if md.controller_id not in NODES:
                raise Failed(f"through node {n}: controller id {md.controller_id}")

    def kafka_python_metadata_through_each_node(self):
        for n in NODES:
            a = KafkaAdminClient(bootstrap_servers=[self.c.bootstrap(n)], request_timeout_ms=int(STEP * 1000))
            try:
                d = a.describe_cluster()
            finally:
                a.close()
            brokers = {b["broker_id"]: f"{b['host']}:{b['port']}" for b in d["brokers"]}
            if brokers != self.all_addrs():
                raise Failed(f"through node {n}: brokers {brokers}")
            if d.get("cluster_id") != self.c.cluster_id:
                raise Failed(f"through node {n}: cluster id {d.get('cluster_id')}")
            if d.get("controller_id") not in NODES:
                raise Failed(f"through node {n}: controller id {d.get('controller_id')}")

    # Topics ---------------------------------------------------------------

    def layout_everywhere(self, topic, partitions, rf):
        """Waits until every node shows `topic` with `partitions` led
        partitions of `rf` replicas; gives {partition: (leader, replicas, isr)}."""
        def same():
            seen = []
            for n in NODES:
                _, _, _, topics = node_metadata(self.c.bootstrap(n), [topic])
                terr, parts = topics.get(topic, (-1, {}))
                if terr != 0 or sorted(parts) != list(range(partitions)):
                    return None
                lay = {p: (v[1], v[2], v[3]) for p, v in parts.items()}
                if any(v[0] != 0 or v[1] < 0 or len(v[2]) != rf for v in parts.values()):
                    return None
                seen.append(lay)
            return seen[0] if all(s == seen[0] for s in seen) else None
        return poll(f"{topic}: {partitions} partitions, RF {rf}, on every node", same)

    def gone_everywhere(self, topic):
        def gone():
            for n in NODES:
                _, _, _, topics = node_metadata(self.c.bootstrap(n), [topic])
                if topic in topics and topics[topic][0] == 0:
                    return False
            return True
        poll(f"{topic} gone on every node", gone)

    def create_rf3_topic(self):
        a = AdminClient({"bootstrap.servers": self.c.bootstrap(2)})
        fs = a.create_topics([NewTopic(self.topic, PARTITIONS, 3)], operation_timeout=STEP)
        fs[self.topic].result(STEP)
        lay = self.layout_everywhere(self.topic, PARTITIONS, 3)
        for p, (leader, replicas, isr) in lay.items():
            if sorted(replicas) != list(NODES) or sorted(isr) != list(NODES):
                raise Failed(f"partition {p}: replicas {replicas}, ISR {isr}")
            if leader != replicas[0]:
                raise Failed(f"partition {p}: leader {leader}, replicas {replicas}")
        counts = Counter(v[0] for v in lay.values())
        if dict(counts) != {n: PARTITIONS // len(NODES) for n in NODES}:
            raise Failed(f"leaders per broker {dict(counts)}")
        self.layout = lay

    # Produce and consume ----------------------------------------------------

    def values(self, client, p):
        return [f"{client}-{p}-{i}".encode() for i in range(PER_PARTITION)]

    def confluent_produce_through_one_node(self):
        p = Producer({"bootstrap.servers": self.c.bootstrap(1), "linger.ms": 5,
                      "message.timeout.ms": int(STEP * 1000)})
        reports = []

        def done(err, msg):
            reports.append((err, msg.partition() if msg else None, msg.offset() if msg else None))
        for part in range(PARTITIONS):
            for v in self.values("ck", part):
                p.produce(self.topic, value=v, partition=part, on_delivery=done)
        left = p.flush(STEP)
        if left:
            raise Failed(f"{left} records not delivered")
        errors = [r for r in reports if r[0] is not None]
        if errors:
            raise Failed(f"{len(errors)} failed deliveries, first: {errors[0]}")
        per = defaultdict(list)
        for _, part, off in reports:
            per[part].append(off)
        for part in range(PARTITIONS):
            if sorted(per[part]) != list(range(PER_PARTITION)):
                raise Failed(f"partition {part} (leader {self.layout[part][0]}): offsets {sorted(per[part])}")

    def kafka_python_produce_through_one_node(self):
        p = KafkaProducer(bootstrap_servers=[self.c.bootstrap(2)], acks="all", linger_ms=5,
                          enable_idempotence=False, request_timeout_ms=int(STEP * 1000),
                          max_block_ms=int(STEP * 1000))
        try:
            futures = [(part, p.send(self.topic, value=v, partition=part))
                       for part in range(PARTITIONS) for v in self.values("kp", part)]
            p.flush(timeout=STEP)
            per = defaultdict(list)
            for part, f in futures:
                md = f.get(timeout=STEP)
                if md.partition != part:
                    raise Failed(f"record for {part} went to {md.partition}")
                per[part].append(md.offset)
        finally:
            p.close(timeout=STEP)
        for part in range(PARTITIONS):
            if sorted(per[part]) != list(range(PER_PARTITION, 2 * PER_PARTITION)):
                raise Failed(f"partition {part}: offsets {sorted(per[part])}")

    def expected(self):
        return {part: self.values("ck", part) + self.values("kp", part) for part in range(PARTITIONS)}

    def confluent_consume_through_another_node(self):
        c = Consumer({"bootstrap.servers": self.c.bootstrap(3), "group.id": f"unused-{self.suffix}",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        try:
            c.assign([TopicPartition(self.topic, part, 0) for part in range(PARTITIONS)])
            got = defaultdict(list)
            total = PARTITIONS * 2 * PER_PARTITION
            deadline = time.monotonic() + STEP
            n = 0
            while n < total and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is None:
                    continue
                if m.error():
                    raise Failed(f"consumer error: {m.error()}")
                got[m.partition()].append((m.offset(), m.value()))
                n += 1
        finally:
            c.close()
        for part, vals in self.expected().items():
            want = list(enumerate(vals))
            if got[part] != want:
                raise Failed(f"partition {part}: read {len(got[part])} records, first {got[part][:2]}")

    def kafka_python_consume_through_another_node(self):
        c = KafkaConsumer(bootstrap_servers=[self.c.bootstrap(1)], group_id=None,
                          enable_auto_commit=False, auto_offset_reset="earliest",
                          request_timeout_ms=int(STEP * 1000) + 5000, fetch_max_wait_ms=100)
        try:
            tps = [KpTopicPartition(self.topic, part) for part in range(PARTITIONS)]
            c.assign(tps)
            c.seek_to_beginning(*tps)
            got = defaultdict(list)
            total = PARTITIONS * 2 * PER_PARTITION
            deadline = time.monotonic() + STEP
            n = 0
            while n < total and time.monotonic() < deadline:
                for tp, msgs in c.poll(timeout_ms=500).items():
                    for m in msgs:
                        got[tp.partition].append((m.offset, m.value))
                        n += 1
        finally:
            c.close()
        for part, vals in self.expected().items():
            if got[part] != list(enumerate(vals)):
                raise Failed(f"partition {part}: read {len(got[part])} records, first {got[part][:2]}")

    # Admin through a node that is not the active controller -------------------

    def configs_everywhere(self, topic, want):
        """Waits until DescribeConfigs through each node (kafka-python, sent
        to that node) shows `want` among the topic's configs."""
        def seen():
            for n in NODES:
                a = KafkaAdminClient(bootstrap_servers=[self.c.bootstrap(n)],
                                     request_timeout_ms=int(STEP * 1000))
                try:
                    r = a.describe_configs([KpConfigResource(KpConfigResourceType.TOPIC, topic)])
                finally:
                    a.close()
                got = {k: v.get("value") for k, v in r["topic"][topic].items()}
                if any(got.get(k) != v for k, v in want.items()):
                    return None
            return True
        poll(f"configs {want} of {topic} on every node", seen)

    def kafka_python_admin_through_non_controller(self):
        controller = self.c.active_controller()
        nc = next(n for n in NODES if n != controller)
        log(f"    {self.kind}: active controller {controller}; admin requests to node {nc}")
        t = f"cluster-admin-kp-{self.suffix}"
        a = KafkaAdminClient(bootstrap_servers=[self.c.bootstrap(nc)], request_timeout_ms=int(STEP * 1000))
        # kafka-python sends controller requests to Metadata's controller id;
        # pin them to the chosen node instead, which must forward them.
        a._controller_id = nc
        try:
            a.create_topics({t: {"num_partitions": 3, "replication_factor": 3,
                                 "configs": {"cleanup.policy": "compact"}}}, timeout_ms=int(STEP * 1000))
            self.layout_everywhere(t, 3, 3)
            a.create_partitions({t: 5}, timeout_ms=int(STEP * 1000))
            self.layout_everywhere(t, 5, 3)
            r = a.alter_configs([KpConfigResource(KpConfigResourceType.TOPIC, t, configs={"retention.ms": "3600000"})],
                                incremental=True)
            if r["topic"][t] != "OK":
                raise Failed(f"IncrementalAlterConfigs: {r}")
            self.configs_everywhere(t, {"retention.ms": "3600000", "cleanup.policy": "compact"})
            a.delete_topics([t], timeout_ms=int(STEP * 1000))
            self.gone_everywhere(t)
        finally:
            a.close()

    def confluent_admin_through_non_controller(self):
        controller = self.c.active_controller()
        nc = next(n for n in reversed(NODES) if n != controller)
        t = f"cluster-admin-ck-{self.suffix}"
        a = AdminClient({"bootstrap.servers": self.c.bootstrap(nc)})
        a.create_topics([NewTopic(t, 2, 3)], operation_timeout=STEP)[t].result(STEP)
        self.layout_everywhere(t, 2, 3)
        a.create_partitions([NewPartitions(t, 4)], operation_timeout=STEP)[t].result(STEP)
        self.layout_everywhere(t, 4, 3)
        res = ConfigResource(ResourceType.TOPIC, t, incremental_configs=[
            ConfigEntry("retention.bytes", "1048576", incremental_operation=AlterConfigOpType.SET)])
        for f in a.incremental_alter_configs([res]).values():
            f.result(STEP)
        self.configs_everywhere(t, {"retention.bytes": "1048576"})
        # Non-incremental AlterConfigs replaces the topic's dynamic configs.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            fs = a.alter_configs([ConfigResource(ResourceType.TOPIC, t, set_config={"segment.ms": "3600000"})])
        for f in fs.values():
            f.result(STEP)
        self.configs_everywhere(t, {"segment.ms": "3600000"})
        desc = list(a.describe_configs([ConfigResource(ResourceType.TOPIC, t)]).values())[0].result(STEP)
        entry = desc.get("segment.ms")
        if entry is None or entry.value != "3600000" or entry.source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value:
            raise Failed(f"DescribeConfigs segment.ms: {entry!r}")
        rb = desc.get("retention.bytes")
        if rb is not None and rb.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value:
            raise Failed(f"retention.bytes still set after AlterConfigs: {rb!r}")
        a.delete_topics([t], operation_timeout=STEP)[t].result(STEP)
        self.gone_everywhere(t)

    # Replication ----------------------------------------------------------

    def partition_on(self, nodes, topic):
        """(leader, ISR) of `topic`-0 once every node of `nodes` shows the same."""
        seen = set()
        for n in nodes:
            try:
                _, _, _, topics = node_metadata(self.c.bootstrap(n), [topic])
            except OSError:
                return None
            terr, parts = topics.get(topic, (-1, {}))
            if terr != 0 or 0 not in parts or parts[0][0] != 0:
                return None
            seen.add((parts[0][1], tuple(sorted(parts[0][3]))))
        return seen.pop() if len(seen) == 1 else None

    def wait_partition(self, nodes, topic, want, what, timeout=STEP):
        """(leader, ISR) of `topic`-0 once `nodes` agree on one that `want` accepts."""
        def ok():
            v = self.partition_on(nodes, topic)
            return v if v and want(*v) else None
        return poll(what, ok, timeout)

    def acks_all_survives_the_leader_killed(self):
        """RF 3, min.insync.replicas=2, an idempotent acks=all producer: the
        leader is killed with SIGKILL mid-stream; every acknowledged record
        is read back once, at its offset; the killed broker restarts and
        rejoins the ISR."""
        t = f"durable-{self.suffix}"
        boot = ",".join(self.all_addrs().values())
        a = AdminClient({"bootstrap.servers": boot})
        a.create_topics([NewTopic(t, 1, 3, config={"min.insync.replicas": "2"})],
                        operation_timeout=STEP)[t].result(STEP)
        full = tuple(NODES)
        leader, _ = self.wait_partition(NODES, t, lambda ldr, isr: isr == full and ldr in NODES,
                                        f"{t}-0 with a full ISR")
        p = Producer({"bootstrap.servers": boot, "acks": "all", "enable.idempotence": True,
                      "linger.ms": 5, "message.timeout.ms": 120000})
        acked, failed = {}, []

        def done(err, msg):
            if err is not None:
                failed.append(str(err))
            else:
                acked[msg.value()] = msg.offset()
        for i in range(300):
            p.produce(t, value=f"before-{i:04d}".encode(), partition=0, on_delivery=done)
        p.flush(STEP)
        self.c.kill9(leader)
        for i in range(300):
            p.produce(t, value=f"after-{i:04d}".encode(), partition=0, on_delivery=done)
            p.poll(0)
        left = p.flush(150)
        if left or failed:
            raise Failed(f"{left} records undelivered, {len(failed)} failed: {failed[:3]}")
        survivors = [n for n in NODES if n != leader]
        new_leader, _ = self.wait_partition(survivors, t, lambda ldr, isr: ldr in survivors,
                                            "a new leader on the survivors", timeout=120)
        self.c.restart(leader)
        self.wait_partition(NODES, t, lambda ldr, isr: isr == full,
                            f"broker {leader} back in the ISR", timeout=120)
        c = Consumer({"bootstrap.servers": boot, "group.id": f"unused-{self.suffix}",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        try:
            c.assign([TopicPartition(t, 0, 0)])
            got = {}
            deadline = time.monotonic() + STEP * 2
            while len(got) < len(acked) and time.monotonic() < deadline:
                m = c.poll(1.0)
                if m is None or m.error():
                    continue
                if m.value() in got:
                    raise Failed(f"{m.value()!r} read twice")
                got[m.value()] = m.offset()
        finally:
            c.close()
        missing = [v for v in acked if got.get(v) != acked[v]]
        if missing:
            raise Failed(f"{len(missing)} of {len(acked)} acknowledged records missing or moved, "
                         f"first {missing[0]!r} (leader {leader} killed, then {new_leader})")

    def reassign_with_the_kafka_tool(self):
        """A partition with records on broker 1 alone moves to brokers 2 and
        3 with `kafka-reassign-partitions --execute`; `--verify` reports it
        completed, every node shows replicas [2, 3] with both in the ISR,
        broker 1 deleted its copy and every record reads back."""
        t = f"moved-{self.suffix}"
        boot = ",".join(self.all_addrs().values())
        a = AdminClient({"bootstrap.servers": boot})
        a.create_topics([NewTopic(t, num_partitions=1, replica_assignment=[[1]])], operation_timeout=STEP)[t].result(STEP)
        self.wait_partition(NODES, t, lambda ldr, isr: ldr == 1, f"{t}-0 led by broker 1")
        p = Producer({"bootstrap.servers": boot, "acks": "all", "linger.ms": 5})
        values = [f"moved-{i:04d}".encode() for i in range(200)]
        for v in values:
            p.produce(t, value=v, partition=0)
        if p.flush(STEP):
            raise Failed("records undelivered")
        plan = os.path.join(tempfile.mkdtemp(prefix="reassign-"), "move.json")
        with open(plan, "w") as f:
            f.write('{"version":1,"partitions":[{"topic":"%s","partition":0,"replicas":[2,3]}]}' % t)

        def tool(action):
            return subprocess.run([PEER, "tool", "kafka-reassign-partitions", "--bootstrap-server",
                                   self.c.bootstrap(2), "--reassignment-json-file", plan, action],
                                  capture_output=True, text=True, timeout=120)
        out = tool("--execute")
        if out.returncode != 0 or "Successfully started partition reassignment" not in out.stdout:
            raise Failed(f"--execute: {out.stdout[-500:]} {out.stderr[-500:]}")

        def verified():
            out = tool("--verify")
            return out.returncode == 0 and f"Reassignment of partition {t}-0 is completed" in out.stdout
        poll(f"--verify reports {t}-0 completed", verified, timeout=STEP * 2)

        def assigned():
            for n in NODES:
                _, _, _, topics = node_metadata(self.c.bootstrap(n), [t])
                err, parts = topics.get(t, (-1, {}))
                if err != 0 or 0 not in parts:
                    return None
                _, leader, replicas, isr = parts[0]
                if list(replicas) != [2, 3] or sorted(isr) != [2, 3] or leader not in (2, 3):
                    return None
            return True
        poll(f"{t}-0 on brokers [2, 3] on every node", assigned)
        old = os.path.join(self.c.data_dir(1), f"{t}-0")
        poll(f"{old} deleted", lambda: not os.path.exists(old) or None, timeout=STEP * 2)
        c = Consumer({"bootstrap.servers": boot, "group.id": f"unused-{self.suffix}",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        try:
            c.assign([TopicPartition(t, 0, 0)])
            got = []
            deadline = time.monotonic() + STEP
            while len(got) < len(values) and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is None or m.error():
                    continue
                got.append(m.value())
        finally:
            c.close()
        if got != values:
            raise Failed(f"read {len(got)} of {len(values)} records back, first {got[:2]}")

    def run(self):
        steps = [
            ("Metadata from each node: 3 brokers, one cluster id, a controller", self.metadata_from_each_node),
            ("confluent-kafka bootstrapped to each node alone sees the cluster",
             self.confluent_metadata_through_each_node),
            ("kafka-python bootstrapped to each node alone sees the cluster",
             self.kafka_python_metadata_through_each_node),
            ("6 partitions RF 3: 3 replicas each, full ISR, 2 leaders per broker, same on every node",
             self.create_rf3_topic),
            ("confluent-kafka produces through node 1 alone to every leader",
             self.confluent_produce_through_one_node),
            ("kafka-python produces (acks=all) through node 2 alone to every leader",
             self.kafka_python_produce_through_one_node),
            ("confluent-kafka consumes everything through node 3 alone",
             self.confluent_consume_through_another_node),
            ("kafka-python consumes everything through node 1 alone",
             self.kafka_python_consume_through_another_node),
            ("kafka-python admin requests to a non-controller node are forwarded",
             self.kafka_python_admin_through_non_controller),
            ("confluent-kafka admin bootstrapped to a non-controller node",
             self.confluent_admin_through_non_controller),
            ("acks=all RF 3 min.insync 2: the leader killed mid-stream, every acked record read back, "
             "the broker rejoins the ISR", self.acks_all_survives_the_leader_killed),
            ("kafka-reassign-partitions moves a partition with records from broker 1 to brokers 2 and 3 "
             "(--execute, --verify), broker 1 deletes its copy", self.reassign_with_the_kafka_tool),
        ]
        needs_topic = {self.confluent_produce_through_one_node, self.kafka_python_produce_through_one_node,
                       self.confluent_consume_through_another_node,
                       self.kafka_python_consume_through_another_node}
        for what, fn in steps:
            if fn in needs_topic and not hasattr(self, "layout"):
                check(False, self.name(what), "not run: the RF 3 topic was not created")
                continue
            run_check(self.name(what), fn)


def run_against(cls, work):
    c = cls(work)
    log(f"=== {cls.kind}: starting 3 nodes")
    try:
        c.start()
        # Serving is not registered yet: wait until every node lists all.
        want = {n: c.bootstrap(n) for n in NODES}
        poll("every node to list the 3 brokers",
             lambda: all(node_metadata(c.bootstrap(n), [])[0] == want for n in NODES), timeout=60)
    except Exception as exc:  # noqa: BLE001
        check(False, f"{cls.kind}: 3 nodes start", str(exc))
        c.stop()
        return
    check(True, f"{cls.kind}: 3 nodes start ({', '.join(c.bootstrap(n) for n in NODES)})")
    try:
        Checks(c).run()
    finally:
        check(c.stop(), f"{cls.kind}: 3 nodes stop cleanly on SIGTERM")


def main():
    which = sys.argv[1:] or ["fjord", "kafka"]
    unknown = set(which) - {"fjord", "kafka"}
    if unknown:
        print(f"usage: {sys.argv[0]} [fjord] [kafka]", file=sys.stderr)
        sys.exit(2)
    ck = confluent_kafka.version()
    log(f"confluent-kafka {ck if isinstance(ck, str) else ck[0]}, kafka-python {kafka.__version__}")
    work = tempfile.mkdtemp(prefix="fjord-cluster-compat-")
    try:
        for kind in which:
            run_against({"fjord": FjordCluster, "kafka": KafkaCluster}[kind], work)
    finally:
        if failed == 0:
            shutil.rmtree(work, ignore_errors=True)
        else:
            log(f"kept {work} for inspection")
    log(f"{passed} passed, {failed} failed")
    sys.exit(0 if failed == 0 else 1)


if __name__ == "__main__":
    main()
