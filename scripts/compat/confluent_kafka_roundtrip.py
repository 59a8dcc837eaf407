#!/usr/bin/env python3
"""Round-trip checks against a running broker with confluent-kafka (librdkafka).

Usage: confluent_kafka_roundtrip.py BOOTSTRAP   (or FJORD_BOOTSTRAP in the environment)

Checks, each bounded by a deadline:
  * AdminClient.create_topics of a 3-partition topic; list_topics shows 3 partitions
  * Producer (acks=all, idempotence off) sends 1,000 keyed messages with headers and
    explicit CreateTime timestamps; every delivery report succeeds
  * Consumer with assign() at OFFSET_BEGINNING (no subscribe, no commits) reads them
    back: keys/values/headers/timestamps equal, offsets contiguous from 0 per
    partition and equal to the delivery reports, one partition per key
  * get_watermark_offsets and offsets_for_times
  * a produce+consume round trip for each compression codec
Exits 0 when every check passes, 1 otherwise (with the reasons on stderr).
"""

import os
import sys
import time
from collections import defaultdict

try:
    import confluent_kafka
    from confluent_kafka import (
        OFFSET_BEGINNING,
        TIMESTAMP_CREATE_TIME,
        Consumer,
        KafkaError,
        Producer,
        TopicPartition,
    )
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError as exc:  # pragma: no cover - environment problem
    print(f"confluent-kafka is not installed: {exc} (run scripts/install-test-deps)", file=sys.stderr)
    sys.exit(2)

MESSAGES = int(os.environ.get("CK_MESSAGES", "1000"))
CODEC_MESSAGES = int(os.environ.get("CK_CODEC_MESSAGES", "200"))
PARTITIONS = 3
DISTINCT_KEYS = 37
STEP_TIMEOUT = float(os.environ.get("CK_STEP_TIMEOUT", "15"))
# Overall budget, kept below the runner's `timeout 120` so the summary still prints.
RUN_BUDGET = float(os.environ.get("CK_RUN_BUDGET", "100"))
CODECS = ("gzip", "snappy", "lz4", "zstd")


from checks import CheckFailed, log, run_checks  # noqa: E402 (shared runner helpers)


def expect(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def client_errors_cb(label, sink):
    def on_error(err):
        # Connection hiccups are reported here too; fatal ones fail the run.
        sink.append(f"{label}: {err}")
        print(f"  [{label} error_cb] {err}", file=sys.stderr, flush=True)

    return on_error


class Runner:
    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        self.suffix = f"{int(time.time())}-{os.getpid()}"
        self.client_errors = []
        self.base = {
            "bootstrap.servers": bootstrap,
            "socket.timeout.ms": 10000,
            "topic.metadata.refresh.interval.ms": 1000,
        }

    # ------------------------------------------------------------------ helpers
    def conf(self, label, **extra):
        c = dict(self.base)
        c["error_cb"] = client_errors_cb(label, self.client_errors)
        c.update(extra)
        return c

    def admin(self):
        return AdminClient(self.conf("admin"))

    def create_topic(self, admin, name, partitions):
        futures = admin.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=1)],
            operation_timeout=STEP_TIMEOUT,
            request_timeout=STEP_TIMEOUT,
        )
        expect(set(futures) == {name}, f"create_topics returned futures for {sorted(futures)}")
        try:
            futures[name].result(timeout=STEP_TIMEOUT + 5)
        except Exception as exc:  # KafkaException or timeout
            raise CheckFailed(f"create_topics({name}, {partitions} partitions) failed: {exc!r}")
        self.wait_for_partitions(admin, name, partitions)

    def wait_for_partitions(self, admin, name, partitions):
        """Poll list_topics until the topic shows `partitions` partitions with leaders."""
        deadline = time.monotonic() + STEP_TIMEOUT
        last = "no metadata yet"
        while True:
            try:
                md = admin.list_topics(topic=name, timeout=10)
                t = md.topics.get(name)
                if t is None:
                    last = "topic missing from metadata"
                elif t.error is not None:
                    last = f"topic error {t.error}"
                elif len(t.partitions) != partitions:
                    last = f"{len(t.partitions)} partitions"
                elif any(p.error is not None or p.leader < 0 for p in t.partitions.values()):
                    last = "partition without leader: " + ", ".join(
                        f"p{p.id} leader={p.leader} err={p.error}" for p in t.partitions.values()
                    )
                else:
                    expect(
                        sorted(t.partitions) == list(range(partitions)),
                        f"partition ids are {sorted(t.partitions)}, expected 0..{partitions - 1}",
                    )
                    expect(len(md.brokers) >= 1, "metadata lists no brokers")
                    return md
            except CheckFailed:
                raise
            except Exception as exc:
                last = repr(exc)
            if time.monotonic() >= deadline:
                raise CheckFailed(
                    f"list_topics: {name} did not show {partitions} partitions with leaders "
                    f"within {STEP_TIMEOUT:.0f}s (last: {last})"
                )
            time.sleep(0.1)

    def produce(self, topic, messages, **producer_conf):
        """messages: list of dicts with key, value, headers, timestamp.
        Returns list of (partition, offset) per message, from delivery reports."""
        conf = self.conf(
            "producer",
            **{
                "acks": "all",
                "enable.idempotence": False,
                "linger.ms": 5,
                "message.timeout.ms": int(STEP_TIMEOUT * 1000),
            },
        )
        conf.update(producer_conf)
        p = Producer(conf)
        reports = [None] * len(messages)
        errors = []

        def on_delivery_for(i):
            def cb(err, msg):
                if err is not None:
                    errors.append(f"message {i}: {err}")
                else:
                    reports[i] = (msg.partition(), msg.offset())

            return cb

        for i, m in enumerate(messages):
            while True:
                try:
                    p.produce(
                        topic,
                        key=m["key"],
                        value=m["value"],
                        headers=m["headers"],
                        timestamp=m["timestamp"],
                        on_delivery=on_delivery_for(i),
                    )
                    break
                except BufferError:
                    p.poll(0.1)
            p.poll(0)
        remaining = p.flush(STEP_TIMEOUT)
        expect(remaining == 0, f"producer flush left {remaining} messages undelivered after {STEP_TIMEOUT:.0f}s")
        expect(not errors, f"{len(errors)} delivery failures, first: {errors[:3]}")
        missing = [i for i, r in enumerate(reports) if r is None]
        expect(not missing, f"no delivery report for {len(missing)} messages (first {missing[:5]})")
        return reports

    def consumer(self):
        return Consumer(
            self.conf(
                "consumer",
                **{
                    # group.id is set but no group API is used: assign() only, no commits.
                    "group.id": f"fjord-compat-unused-{self.suffix}",
                    "enable.auto.commit": False,
                    "enable.auto.offset.store": False,
                    "auto.offset.reset": "earliest",
                    "fetch.wait.max.ms": 100,
                },
            )
        )

    def consume_all(self, topic, partitions, expected_count):
        c = self.consumer()
        try:
            c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
            got = []
            deadline = time.monotonic() + STEP_TIMEOUT * 2
            while len(got) < expected_count:
                if time.monotonic() >= deadline:
                    raise CheckFailed(
                        f"consumer read {len(got)} of {expected_count} messages from {topic} "
                        f"within {STEP_TIMEOUT * 2:.0f}s"
                    )
                for msg in c.consume(num_messages=500, timeout=0.5):
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            continue
                        raise CheckFailed(f"consumer error on {topic}: {err}")
                    got.append(
                        {
                            "key": msg.key(),
                            "value": msg.value(),
                            "headers": msg.headers() or [],
                            "timestamp": msg.timestamp(),
                            "partition": msg.partition(),
                            "offset": msg.offset(),
                        }
                    )
            # Nothing beyond the expected messages may show up.
            extra = [m for m in c.consume(num_messages=100, timeout=0.5) if m.error() is None]
            expect(not extra, f"consumer read {len(extra)} unexpected extra messages from {topic}")
            return got, c
        except BaseException:
            c.close()
            raise

    @staticmethod
    def make_messages(count, tag, base_ts):
        msgs = []
        for i in range(count):
            msgs.append(
                {
                    "key": f"key-{i % DISTINCT_KEYS}".encode(),
                    "value": f"{tag}-value-{i}-".encode() + b"v" * (i % 50),
                    "headers": [("idx", str(i).encode()), ("src", tag.encode()), ("empty", b"")],
                    "timestamp": base_ts + i * 10,
                }
            )
        return msgs

    def verify(self, topic, sent, reports, got):
        """Compare consumed messages with what was sent and acknowledged."""
        expect(len(got) == len(sent), f"{topic}: consumed {len(got)} messages, produced {len(sent)}")
        by_pos = {}
        for m in got:
            pos = (m["partition"], m["offset"])
            expect(pos not in by_pos, f"{topic}: message at partition {pos[0]} offset {pos[1]} read twice")
            by_pos[pos] = m
        for i, (m, pos) in enumerate(zip(sent, reports)):
            g = by_pos.get(pos)
            expect(g is not None, f"{topic}: message {i} acknowledged at {pos} but not consumed there")
            for field in ("key", "value"):
                expect(g[field] == m[field], f"{topic}: message {i} {field}: sent {m[field]!r}, got {g[field]!r}")
            expect(
                list(g["headers"]) == list(m["headers"]),
                f"{topic}: message {i} headers: sent {m['headers']!r}, got {g['headers']!r}",
            )
            expect(
                g["timestamp"] == (TIMESTAMP_CREATE_TIME, m["timestamp"]),
                f"{topic}: message {i} timestamp: sent CreateTime {m['timestamp']}, got {g['timestamp']!r}",
            )
        # Offsets contiguous from 0 in every partition, in consumption order.
        per_part = defaultdict(list)
        for m in got:
            per_part[m["partition"]].append(m["offset"])
        for p, offs in sorted(per_part.items()):
            expect(
                offs == list(range(len(offs))),
                f"{topic}: partition {p} offsets not contiguous from 0 in read order: "
                f"first {offs[:10]} ... (count {len(offs)})",
            )
        # Same key -> same partition.
        key_parts = defaultdict(set)
        for m in got:
            key_parts[m["key"]].add(m["partition"])
        split = {k: sorted(v) for k, v in key_parts.items() if len(v) > 1}
        expect(not split, f"{topic}: keys spread over several partitions: {dict(list(split.items())[:5])}")
        return per_part

    # ------------------------------------------------------------------- checks
    def check_main(self):
        topic = f"fjord-ck-rt-{self.suffix}"
        admin = self.admin()
        self.create_topic(admin, topic, PARTITIONS)
        md = self.wait_for_partitions(admin, topic, PARTITIONS)
        log(f"ok: create_topics + list_topics: {topic} has {PARTITIONS} partitions, "
            f"{len(md.brokers)} broker(s): {', '.join(f'{b.id}@{b.host}:{b.port}' for b in md.brokers.values())}")

        base_ts = int(time.time() * 1000) - 60_000
        sent = self.make_messages(MESSAGES, "ck", base_ts)
        reports = self.produce(topic, sent)
        log(f"ok: produced {len(sent)} messages with delivery reports (acks=all)")

        got, consumer = self.consume_all(topic, PARTITIONS, len(sent))
        try:
            per_part = self.verify(topic, sent, reports, got)
            used = sorted(p for p in per_part if per_part[p])
            log(f"ok: consumed {len(got)} messages via assign(); keys/values/headers/timestamps match; "
                f"offsets contiguous; partitions used {used} with counts "
                f"{[len(per_part[p]) for p in range(PARTITIONS)]}")
            expect(len(used) >= 2, f"{DISTINCT_KEYS} keys landed in only partitions {used}")

            # Watermarks: low 0, high = messages in the partition.
            for p in range(PARTITIONS):
                lo, hi = consumer.get_watermark_offsets(
                    TopicPartition(topic, p), timeout=STEP_TIMEOUT, cached=False
                )
                expect(
                    (lo, hi) == (0, len(per_part[p])),
                    f"get_watermark_offsets({topic}/{p}) = ({lo}, {hi}), expected (0, {len(per_part[p])})",
                )
            log("ok: get_watermark_offsets matches per-partition counts")

            # offsets_for_times: for a timestamp in the middle, each partition must
            # answer the first offset whose timestamp >= the query.
            mid = len(sent) // 2
            query_ts = sent[mid]["timestamp"]
            expected = {}
            for p in range(PARTITIONS):
                cands = [
                    reports[i][1]
                    for i in range(len(sent))
                    if reports[i][0] == p and sent[i]["timestamp"] >= query_ts
                ]
                expected[p] = min(cands) if cands else -1
            answer = consumer.offsets_for_times(
                [TopicPartition(topic, p, query_ts) for p in range(PARTITIONS)], timeout=STEP_TIMEOUT
            )
            for tp in answer:
                expect(tp.error is None, f"offsets_for_times {topic}/{tp.partition}: error {tp.error}")
                expect(
                    tp.offset == expected[tp.partition],
                    f"offsets_for_times({topic}/{tp.partition}, ts={query_ts}) = {tp.offset}, "
                    f"expected {expected[tp.partition]}",
                )
            # Before the first message -> offset 0; after the last -> -1 (end).
            early = consumer.offsets_for_times(
                [TopicPartition(topic, p, base_ts - 1000) for p in range(PARTITIONS)], timeout=STEP_TIMEOUT
            )
            for tp in early:
                want = 0 if per_part[tp.partition] else -1
                expect(tp.offset == want,
                       f"offsets_for_times({topic}/{tp.partition}, before first) = {tp.offset}, expected {want}")
            late = consumer.offsets_for_times(
                [TopicPartition(topic, p, sent[-1]["timestamp"] + 1000) for p in range(PARTITIONS)],
                timeout=STEP_TIMEOUT,
            )
            for tp in late:
                expect(tp.offset == -1,
                       f"offsets_for_times({topic}/{tp.partition}, after last) = {tp.offset}, expected -1")
            log(f"ok: offsets_for_times (middle -> {expected}, before first -> 0, after last -> -1)")
        finally:
            consumer.close()

    def check_codec(self, codec):
        topic = f"fjord-ck-{codec}-{self.suffix}"
        admin = self.admin()
        self.create_topic(admin, topic, 1)
        base_ts = int(time.time() * 1000) - 60_000
        sent = self.make_messages(CODEC_MESSAGES, f"ck-{codec}", base_ts)
        # Larger linger so several records share one compressed batch.
        reports = self.produce(topic, sent, **{"compression.type": codec, "linger.ms": 50})
        got, consumer = self.consume_all(topic, 1, len(sent))
        consumer.close()
        self.verify(topic, sent, reports, got)
        log(f"ok: compression {codec}: {len(sent)} messages round-tripped through {topic}")


def main():
    bootstrap = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("FJORD_BOOTSTRAP", "")
    if not bootstrap:
        print(f"usage: {sys.argv[0]} BOOTSTRAP", file=sys.stderr)
        return 2
    log(f"confluent-kafka {confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]}), "
        f"bootstrap {bootstrap}")
    r = Runner(bootstrap)
    checks = [("roundtrip", r.check_main)] + [
        (f"compression-{c}", (lambda c=c: r.check_codec(c))) for c in CODECS
    ]
    notes = [f"note: {len(r.client_errors)} client error callback(s), first: {r.client_errors[:3]}"] if r.client_errors else []
    return run_checks("confluent-kafka", checks, RUN_BUDGET, notes)


if __name__ == "__main__":
    sys.exit(main())
