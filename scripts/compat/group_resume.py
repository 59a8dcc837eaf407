#!/usr/bin/env python3
"""Consumer-group round trip with one Python client against a running broker.

Usage: group_resume.py CLIENT BOOTSTRAP   (CLIENT: confluent-kafka | kafka-python | aiokafka)

1. Creates a 2-partition topic and produces 200 keyed records.
2. Consumer A joins a new group (subscribe), consumes 120 records, commits
   them synchronously and closes (LeaveGroup).
3. Consumer B joins the same group and must receive exactly the remaining
   80 records: nothing lost, nothing delivered twice.
4. The committed offsets read back through the client equal the log end.
Each client speaks its own protocol versions (JoinGroup, SyncGroup,
OffsetCommit, OffsetFetch), which is the point of running all three.
Exits non-zero with a message on the first failure.
"""
import asyncio
import sys
import time
import uuid

N = 200
FIRST = 120
DEADLINE_S = 60
# How long to wait for a record that must not come (a re-delivery).
EXTRA_S = 3


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def ok(msg):
    print(f"ok: {msg}", flush=True)


def setup(bootstrap, topic):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic]
    fut.result(timeout=30)
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": False, "acks": "all"})
    for i in range(N):
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    if p.flush(30) != 0:
        fail("producer did not deliver every record")
    ok(f"produced {N} records to {topic}")


def check(first, second, committed_total):
    seen = first + second
    if len(first) != FIRST:
        fail(f"consumer A read {len(first)} records, expected {FIRST}")
    dups = {v for v in seen if seen.count(v) > 1}
    if dups:
        fail(f"re-delivered after resume: {sorted(dups)[:5]}...")
    missing = {f"v{i}" for i in range(N)} - set(seen)
    if missing:
        fail(f"lost after resume: {sorted(missing)[:5]}...")
    if committed_total != N:
        fail(f"committed offsets sum to {committed_total}, expected {N}")
    ok(f"A read {len(first)}, B resumed with exactly the other {len(second)}; committed offsets = log end")


def run_confluent(bootstrap, topic, group):
    from confluent_kafka import Consumer, TopicPartition

    def consumer():
        return Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 10000,
        })

    def consume(c, want, wait=DEADLINE_S):
        out, end = [], time.time() + wait
        while len(out) < want and time.time() < end:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            out.append(m.value().decode())
        return out

    a = consumer()
    a.subscribe([topic])
    first = consume(a, FIRST)
    a.commit(asynchronous=False)
    a.close()
    b = consumer()
    b.subscribe([topic])
    second = consume(b, N - FIRST)
    # Give the broker a chance to show any extra record (there must be none).
    extra = consume(b, 1, EXTRA_S) if len(second) == N - FIRST else []
    b.commit(asynchronous=False)
    committed = b.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)
    b.close()
    check(first, second + extra, sum(tp.offset for tp in committed))


def run_kafka_python(bootstrap, topic, group):
    from kafka import KafkaConsumer, TopicPartition

    def consumer():
        return KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=10000,
            consumer_timeout_ms=1000,
        )

    def consume(c, want, wait=DEADLINE_S):
        out, end = [], time.time() + wait
        while len(out) < want and time.time() < end:
            for recs in c.poll(timeout_ms=500, max_records=want - len(out)).values():
                out.extend(r.value.decode() for r in recs)
        return out

    a = consumer()
    a.subscribe([topic])
    first = consume(a, FIRST)
    a.commit()
    a.close()
    b = consumer()
    b.subscribe([topic])
    second = consume(b, N - FIRST)
    extra = consume(b, 1, EXTRA_S) if len(second) == N - FIRST else []
    b.commit()
    committed = sum((b.committed(TopicPartition(topic, p)) or 0) for p in (0, 1))
    b.close()
    check(first, second + extra, committed)


def run_aiokafka(bootstrap, topic, group):
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def main():
        def consumer():
            return AIOKafkaConsumer(
                topic,
                bootstrap_servers=bootstrap,
                group_id=group,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                session_timeout_ms=10000,
            )

        async def consume(c, want, wait=DEADLINE_S):
            out, end = [], time.time() + wait
            while len(out) < want and time.time() < end:
                batch = await c.getmany(timeout_ms=500, max_records=want - len(out))
                for recs in batch.values():
                    out.extend(r.value.decode() for r in recs)
            return out

        a = consumer()
        await a.start()
        first = await consume(a, FIRST)
        await a.commit()
        await a.stop()
        b = consumer()
        await b.start()
        second = await consume(b, N - FIRST)
        extra = await consume(b, 1, EXTRA_S) if len(second) == N - FIRST else []
        await b.commit()
        committed = 0
        for p in (0, 1):
            committed += (await b.committed(TopicPartition(topic, p))) or 0
        await b.stop()
        check(first, second + extra, committed)

    asyncio.run(main())


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    client, bootstrap = sys.argv[1], sys.argv[2]
    tag = uuid.uuid4().hex[:8]
    topic, group = f"compat-group-{client}-{tag}", f"compat-{client}-{tag}"
    setup(bootstrap, topic)
    runners = {"confluent-kafka": run_confluent, "kafka-python": run_kafka_python, "aiokafka": run_aiokafka}
    if client not in runners:
        fail(f"unknown client {client}")
    runners[client](bootstrap, topic, group)
    print(f"{client}: group commit and resume passed", flush=True)


if __name__ == "__main__":
    main()
