"""Broker-side recompression (topic compression.type) with three clients.

A topic with compression.type=snappy is fed uncompressed batches by
confluent-kafka (librdkafka), kafka-python and aiokafka; the broker must
store them as snappy in the xerial framing Java and librdkafka read (magic,
big-endian version 1 / compatible version 1, length-prefixed blocks), and
each of the three clients must read every record back. A topic with
compression.type=uncompressed fed gzip batches must store them uncompressed,
and one with compression.type=producer must keep the producer's codec.

Usage: recompression.py BOOTSTRAP
Runs against Fjord and against Apache Kafka (scripts/compat/run --broker kafka).
"""
import asyncio
import os
import struct
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from batches import fetch_batches  # noqa: E402
from checks import CheckFailed, log, run_checks  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

BOOTSTRAP = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("FJORD_BOOTSTRAP", "")
SUFFIX = uuid.uuid4().hex[:8]
N = 30
XERIAL = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)


def create(topic, codec):
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    fut = admin.create_topics([NewTopic(topic, 1, 1, config={"compression.type": codec})])[topic]
    fut.result(timeout=20)


def values(client, i):
    return [f"{client}-{i}-{j}-{'v' * 40}".encode() for j in range(N)]


def produce_confluent(topic, codec):
    p = Producer({"bootstrap.servers": BOOTSTRAP, "compression.type": codec, "linger.ms": 50})
    for v in values("ck", 0):
        p.produce(topic, v, partition=0)
    if p.flush(20) != 0:
        raise CheckFailed("confluent-kafka: messages not delivered")


def produce_kafka_python(topic):
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=BOOTSTRAP, compression_type=None, linger_ms=50)
    for v in values("kp", 0):
        p.send(topic, v, partition=0)
    p.flush(20)
    p.close()


def produce_aiokafka(topic):
    from aiokafka import AIOKafkaProducer

    async def go():
        p = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, compression_type=None, linger_ms=50)
        await p.start()
        try:
            for v in values("ak", 0):
                await p.send(topic, v, partition=0)
            await p.flush()
        finally:
            await p.stop()

    asyncio.run(go())


def consume_confluent(topic, n):
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": f"recomp-{SUFFIX}", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    out, deadline = [], time.monotonic() + 20
    while len(out) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            raise CheckFailed(f"confluent-kafka consumer: {m.error()}")
        out.append(m.value())
    c.close()
    return out


def consume_kafka_python(topic, n):
    from kafka import KafkaConsumer, TopicPartition as KTP

    c = KafkaConsumer(bootstrap_servers=BOOTSTRAP, enable_auto_commit=False, consumer_timeout_ms=5000)
    tp = KTP(topic, 0)
    c.assign([tp])
    c.seek(tp, 0)
    out, deadline = [], time.monotonic() + 20
    while len(out) < n and time.monotonic() < deadline:
        for recs in c.poll(timeout_ms=500).values():
            out.extend(r.value for r in recs)
    c.close()
    return out


def consume_aiokafka(topic, n):
    from aiokafka import AIOKafkaConsumer, TopicPartition as ATP

    async def go():
        c = AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP, enable_auto_commit=False)
        await c.start()
        try:
            tp = ATP(topic, 0)
            c.assign([tp])
            c.seek(tp, 0)
            out, deadline = [], time.monotonic() + 20
            while len(out) < n and time.monotonic() < deadline:
                for recs in (await c.getmany(timeout_ms=500)).values():
                    out.extend(r.value for r in recs)
            return out
        finally:
            await c.stop()

    return asyncio.run(go())


def expect_codec(topic, codec, n):
    batches = fetch_batches(BOOTSTRAP, topic, 0)
    codecs = sorted({b.codec for b in batches})
    count = sum(b.records_count for b in batches)
    if count != n:
        raise CheckFailed(f"{topic}: {count} records stored in {len(batches)} batches, expected {n}")
    if codecs != [codec]:
        raise CheckFailed(f"{topic}: stored codecs {codecs}, expected only {codec}")
    return batches


SNAPPY_TOPIC = f"recomp-snappy-{SUFFIX}"
ALL = values("ck", 0) + values("kp", 0) + values("ak", 0)


def check_snappy_stored():
    create(SNAPPY_TOPIC, "snappy")
    produce_confluent(SNAPPY_TOPIC, "none")
    produce_kafka_python(SNAPPY_TOPIC)
    produce_aiokafka(SNAPPY_TOPIC)
    batches = expect_codec(SNAPPY_TOPIC, "snappy", len(ALL))
    bad = [b.base_offset for b in batches if not b.body.startswith(XERIAL)]
    if bad:
        raise CheckFailed(f"batches at {bad} lack the xerial snappy header")
    log(f"ok: {len(batches)} uncompressed batches from three producers stored as xerial snappy")


def reads_back(name, consume):
    def check():
        got = consume(SNAPPY_TOPIC, len(ALL))
        if got != ALL:
            raise CheckFailed(f"{name} read {len(got)} records, expected {len(ALL)} in order")
        log(f"ok: {name} reads the {len(got)} snappy-recompressed records")

    return check


def check_uncompressed_topic():
    topic = f"recomp-none-{SUFFIX}"
    create(topic, "uncompressed")
    produce_confluent(topic, "gzip")
    expect_codec(topic, "none", N)
    if consume_confluent(topic, N) != values("ck", 0):
        raise CheckFailed("records of the decompressed batches differ")
    log("ok: gzip batches stored uncompressed on a compression.type=uncompressed topic")


def check_producer_topic():
    topic = f"recomp-producer-{SUFFIX}"
    create(topic, "producer")
    produce_confluent(topic, "lz4")
    expect_codec(topic, "lz4", N)
    log("ok: compression.type=producer keeps the producer's lz4")


def main():
    if not BOOTSTRAP:
        print(__doc__, file=sys.stderr)
        return 2
    log(f"recompression: bootstrap {BOOTSTRAP}")
    return run_checks(
        "recompression",
        [
            ("snappy topic stores xerial snappy", check_snappy_stored),
            ("librdkafka reads them", reads_back("confluent-kafka", consume_confluent)),
            ("kafka-python reads them", reads_back("kafka-python", consume_kafka_python)),
            ("aiokafka reads them", reads_back("aiokafka", consume_aiokafka)),
            ("uncompressed topic", check_uncompressed_topic),
            ("producer topic", check_producer_topic),
        ],
        budget=100,
    )


if __name__ == "__main__":
    sys.exit(main())
