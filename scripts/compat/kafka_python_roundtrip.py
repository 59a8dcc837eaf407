#!/usr/bin/env python3
"""Round-trip checks against a running broker with kafka-python (pure Python client).

Usage: kafka_python_roundtrip.py BOOTSTRAP   (or FJORD_BOOTSTRAP in the environment)

Checks, each bounded by a deadline:
  * KafkaAdminClient.create_topics of a 3-partition topic, visible in metadata
  * KafkaProducer (acks='all', idempotence off) sends 500 keyed messages with headers
    and explicit timestamps; every future resolves to RecordMetadata
  * KafkaConsumer (group_id=None) with assign() + seek_to_beginning reads them back:
    keys/values/headers/timestamps equal, offsets equal to the RecordMetadata and
    contiguous from 0 per partition, one partition per key
  * beginning_offsets / end_offsets and offsets_for_times
  * a gzip round trip (gzip needs no extra library); snappy/lz4/zstd only when their
    Python libraries happen to be importable, otherwise reported as skipped
api_version is left to auto-detection (ApiVersions); KP_API_VERSION=2.8 forces one.
Exits 0 when every check passes, 1 otherwise (with the reasons on stderr).
"""

import logging
import os
import sys
import time
from collections import defaultdict

try:
    import kafka
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka import codec as kafka_codec
except ImportError as exc:  # pragma: no cover - environment problem
    print(f"kafka-python is not installed: {exc} (run scripts/install-test-deps)", file=sys.stderr)
    sys.exit(2)

MESSAGES = int(os.environ.get("KP_MESSAGES", "500"))
CODEC_MESSAGES = int(os.environ.get("KP_CODEC_MESSAGES", "200"))
PARTITIONS = 3
DISTINCT_KEYS = 23
STEP_TIMEOUT = float(os.environ.get("KP_STEP_TIMEOUT", "15"))
# Overall budget, kept below the runner's `timeout 120` so the summary still prints.
RUN_BUDGET = float(os.environ.get("KP_RUN_BUDGET", "100"))
STEP_MS = int(STEP_TIMEOUT * 1000)


def parse_api_version():
    raw = os.environ.get("KP_API_VERSION", "").strip()
    if not raw or raw == "auto":
        return None
    return tuple(int(x) for x in raw.split("."))


API_VERSION = parse_api_version()
KAFKA_PYTHON_MAJOR = int(kafka.__version__.split(".")[0])


from checks import CheckFailed, log, run_checks  # noqa: E402 (shared runner helpers)


def expect(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def has_codec(name):
    checker = {
        "gzip": kafka_codec.has_gzip,
        "snappy": kafka_codec.has_snappy,
        "lz4": kafka_codec.has_lz4,
        "zstd": kafka_codec.has_zstd,
    }[name]
    return bool(checker())


class Runner:
    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        self.suffix = f"{int(time.time())}-{os.getpid()}"

    def common(self):
        c = {
            "bootstrap_servers": bootstrap_list(self.bootstrap),
            "request_timeout_ms": STEP_MS,
            "client_id": "fjord-compat-kafka-python",
        }
        if API_VERSION is not None:
            c["api_version"] = API_VERSION
        return c

    # ------------------------------------------------------------------ helpers
    def create_topic(self, name, partitions):
        admin = KafkaAdminClient(**self.common())
        try:
            if KAFKA_PYTHON_MAJOR >= 3:
                # 3.x takes a dict; NewTopic objects are deprecated there.
                spec = {name: {"num_partitions": partitions, "replication_factor": 1}}
            else:
                from kafka.admin import NewTopic

                spec = [NewTopic(name=name, num_partitions=partitions, replication_factor=1)]
            try:
                admin.create_topics(spec, timeout_ms=STEP_MS)
            except Exception as exc:
                raise CheckFailed(f"create_topics({name}, {partitions} partitions) failed: {exc!r}")
            self.wait_for_partitions(admin, name, partitions)
        finally:
            admin.close()

    def wait_for_partitions(self, admin, name, partitions):
        deadline = time.monotonic() + STEP_TIMEOUT
        last = "no metadata yet"
        while True:
            try:
                topics = admin.describe_topics([name])
                t = next((t for t in topics if t.get("name", t.get("topic")) == name), None)
                if t is None:
                    last = "topic missing from metadata"
                elif t.get("error_code", 0) != 0:
                    last = f"topic error_code {t['error_code']}"
                else:
                    parts = t.get("partitions") or []
                    ids = sorted(p.get("partition_index", p.get("partition")) for p in parts)
                    leaders = [p.get("leader_id", p.get("leader", -1)) for p in parts]
                    if ids != list(range(partitions)):
                        last = f"partition ids {ids}"
                    elif any(lid is None or lid < 0 for lid in leaders):
                        last = f"leaders {leaders}"
                    else:
                        return
            except Exception as exc:
                last = repr(exc)
            if time.monotonic() >= deadline:
                raise CheckFailed(
                    f"{name} did not show {partitions} partitions with leaders within "
                    f"{STEP_TIMEOUT:.0f}s (last: {last})"
                )
            time.sleep(0.1)

    @staticmethod
    def make_messages(count, tag, base_ts):
        return [
            {
                "key": f"key-{i % DISTINCT_KEYS}".encode(),
                "value": f"{tag}-value-{i}-".encode() + b"w" * (i % 40),
                "headers": [("idx", str(i).encode()), ("src", tag.encode())],
                "timestamp": base_ts + i * 10,
            }
            for i in range(count)
        ]

    def produce(self, topic, messages, compression_type=None):
        conf = self.common()
        conf.update(
            acks="all",
            # kafka-python 3.x enables idempotence by default; Fjord does not
            # support InitProducerId yet.
            enable_idempotence=False,
            linger_ms=5,
            max_block_ms=STEP_MS,
            compression_type=compression_type,
        )
        producer = KafkaProducer(**conf)
        try:
            futures = [
                producer.send(
                    topic,
                    key=m["key"],
                    value=m["value"],
                    headers=m["headers"],
                    timestamp_ms=m["timestamp"],
                )
                for m in messages
            ]
            producer.flush(timeout=STEP_TIMEOUT)
            reports = []
            for i, f in enumerate(futures):
                try:
                    md = f.get(timeout=STEP_TIMEOUT)
                except Exception as exc:
                    raise CheckFailed(f"send of message {i} to {topic} failed: {exc!r}")
                expect(md.topic == topic, f"RecordMetadata topic {md.topic!r} != {topic!r}")
                reports.append((md.partition, md.offset))
            return reports
        finally:
            producer.close(timeout=STEP_TIMEOUT)

    def consumer(self):
        conf = self.common()
        conf.update(
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=100,
            consumer_timeout_ms=STEP_MS,
        )
        return KafkaConsumer(**conf)

    def consume_all(self, consumer, topic, partitions, expected_count):
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        got = []
        deadline = time.monotonic() + STEP_TIMEOUT * 2
        while len(got) < expected_count:
            if time.monotonic() >= deadline:
                raise CheckFailed(
                    f"consumer read {len(got)} of {expected_count} messages from {topic} "
                    f"within {STEP_TIMEOUT * 2:.0f}s"
                )
            batch = consumer.poll(timeout_ms=500, max_records=500)
            for _tp, records in batch.items():
                for r in records:
                    got.append(
                        {
                            "key": r.key,
                            "value": r.value,
                            "headers": [(k, v) for k, v in (r.headers or [])],
                            "timestamp": r.timestamp,
                            "timestamp_type": r.timestamp_type,
                            "partition": r.partition,
                            "offset": r.offset,
                        }
                    )
        extra = sum(len(v) for v in consumer.poll(timeout_ms=500).values())
        expect(extra == 0, f"consumer read {extra} unexpected extra messages from {topic}")
        return got

    @staticmethod
    def verify(topic, sent, reports, got):
        expect(len(got) == len(sent), f"{topic}: consumed {len(got)} messages, produced {len(sent)}")
        by_pos = {}
        for m in got:
            pos = (m["partition"], m["offset"])
            expect(pos not in by_pos, f"{topic}: partition {pos[0]} offset {pos[1]} read twice")
            by_pos[pos] = m
        for i, (m, pos) in enumerate(zip(sent, reports)):
            g = by_pos.get(pos)
            expect(g is not None, f"{topic}: message {i} acknowledged at {pos} but not consumed there")
            for field in ("key", "value", "headers"):
                expect(g[field] == m[field], f"{topic}: message {i} {field}: sent {m[field]!r}, got {g[field]!r}")
            expect(
                g["timestamp"] == m["timestamp"] and g["timestamp_type"] == 0,
                f"{topic}: message {i} timestamp: sent CreateTime {m['timestamp']}, "
                f"got {g['timestamp']} (type {g['timestamp_type']})",
            )
        per_part = defaultdict(list)
        for m in got:
            per_part[m["partition"]].append(m["offset"])
        for p, offs in sorted(per_part.items()):
            expect(
                offs == list(range(len(offs))),
                f"{topic}: partition {p} offsets not contiguous from 0 in read order: "
                f"first {offs[:10]} (count {len(offs)})",
            )
        key_parts = defaultdict(set)
        for m in got:
            key_parts[m["key"]].add(m["partition"])
        split = {k: sorted(v) for k, v in key_parts.items() if len(v) > 1}
        expect(not split, f"{topic}: keys spread over several partitions: {dict(list(split.items())[:5])}")
        return per_part

    # ------------------------------------------------------------------- checks
    def check_main(self):
        topic = f"fjord-kp-rt-{self.suffix}"
        self.create_topic(topic, PARTITIONS)
        log(f"ok: create_topics: {topic} has {PARTITIONS} partitions with leaders")

        base_ts = int(time.time() * 1000) - 60_000
        sent = self.make_messages(MESSAGES, "kp", base_ts)
        reports = self.produce(topic, sent)
        log(f"ok: produced {len(sent)} messages, all futures resolved to RecordMetadata")

        consumer = self.consumer()
        try:
            log(f"note: negotiated broker version {consumer.config.get('api_version')}")
            got = self.consume_all(consumer, topic, PARTITIONS, len(sent))
            per_part = self.verify(topic, sent, reports, got)
            used = sorted(p for p in per_part if per_part[p])
            log(f"ok: consumed {len(got)} messages via assign()+seek_to_beginning; "
                f"keys/values/headers/timestamps match; offsets contiguous; counts "
                f"{[len(per_part[p]) for p in range(PARTITIONS)]}")
            expect(len(used) >= 2, f"{DISTINCT_KEYS} keys landed in only partitions {used}")

            tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
            begin = consumer.beginning_offsets(tps, timeout_ms=STEP_MS)
            end = consumer.end_offsets(tps, timeout_ms=STEP_MS)
            for tp in tps:
                expect(begin.get(tp) == 0, f"beginning_offsets {tp}: {begin.get(tp)}, expected 0")
                n = len(per_part[tp.partition])
                expect(end.get(tp) == n, f"end_offsets {tp}: {end.get(tp)}, expected {n}")
            log("ok: beginning_offsets all 0, end_offsets match per-partition counts")

            mid = len(sent) // 2
            query_ts = sent[mid]["timestamp"]
            answer = consumer.offsets_for_times({tp: query_ts for tp in tps}, timeout_ms=STEP_MS)
            for tp in tps:
                cands = [
                    reports[i][1]
                    for i in range(len(sent))
                    if reports[i][0] == tp.partition and sent[i]["timestamp"] >= query_ts
                ]
                got_ot = answer.get(tp)
                if cands:
                    want = min(cands)
                    want_ts = min(
                        sent[i]["timestamp"]
                        for i in range(len(sent))
                        if reports[i] == (tp.partition, want)
                    )
                    expect(
                        got_ot is not None and got_ot.offset == want and got_ot.timestamp == want_ts,
                        f"offsets_for_times({tp}, {query_ts}) = {got_ot}, expected offset {want} ts {want_ts}",
                    )
                else:
                    expect(got_ot is None, f"offsets_for_times({tp}, {query_ts}) = {got_ot}, expected None")
            late = consumer.offsets_for_times(
                {tp: sent[-1]["timestamp"] + 1000 for tp in tps}, timeout_ms=STEP_MS
            )
            for tp in tps:
                expect(late.get(tp) is None, f"offsets_for_times({tp}, after last) = {late.get(tp)}, expected None")
            log("ok: offsets_for_times (middle timestamp and past the end)")
        finally:
            consumer.close()

    def check_codec(self, codec):
        topic = f"fjord-kp-{codec}-{self.suffix}"
        self.create_topic(topic, 1)
        sent = self.make_messages(CODEC_MESSAGES, f"kp-{codec}", int(time.time() * 1000) - 60_000)
        reports = self.produce(topic, sent, compression_type=codec)
        consumer = self.consumer()
        try:
            got = self.consume_all(consumer, topic, 1, len(sent))
        finally:
            consumer.close()
        self.verify(topic, sent, reports, got)
        log(f"ok: compression {codec}: {len(sent)} messages round-tripped through {topic}")


def bootstrap_list(bootstrap):
    return [b.strip() for b in bootstrap.split(",") if b.strip()]


def main():
    bootstrap = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("FJORD_BOOTSTRAP", "")
    if not bootstrap:
        print(f"usage: {sys.argv[0]} BOOTSTRAP", file=sys.stderr)
        return 2
    if os.environ.get("KP_DEBUG"):
        logging.basicConfig(level=logging.DEBUG)
    else:
        logging.basicConfig(level=logging.WARNING)
    log(f"kafka-python {kafka.__version__}, bootstrap {bootstrap}, "
        f"api_version {'auto' if API_VERSION is None else API_VERSION}")
    r = Runner(bootstrap)
    checks = [("roundtrip", r.check_main)]
    skipped = []
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        if has_codec(codec):
            checks.append((f"compression-{codec}", (lambda c=codec: r.check_codec(c))))
        else:
            skipped.append(codec)
    notes = [f"skipped codecs (Python codec library not installed): {', '.join(skipped)}"] if skipped else []
    return run_checks("kafka-python", checks, RUN_BUDGET, notes)


if __name__ == "__main__":
    sys.exit(main())
