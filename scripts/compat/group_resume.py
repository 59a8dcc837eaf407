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

confluent-kafka then runs the same story on the consumer group protocol
(KIP-848, `group.protocol=consumer`, ConsumerGroupHeartbeat), see
run_confluent_consumer_protocol.
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


CP_PARTITIONS = 4


class CpMember:
    """One confluent-kafka consumer on the consumer group protocol (KIP-848):
    it tracks its assignment through the rebalance callbacks (incremental on
    this protocol) and commits every record synchronously before the next
    poll, so a revoked partition is always committed up to what was read."""

    def __init__(self, name, bootstrap, group, topic, ledger):
        from confluent_kafka import Consumer

        self.name, self.topic, self.ledger = name, topic, ledger
        self.owned, self.assigned_calls, self.revoked_calls, self.lost_calls = set(), 0, 0, 0
        # session.timeout.ms, heartbeat.interval.ms and partition.assignment.strategy
        # are the broker's on this protocol; librdkafka refuses them here.
        self.c = Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        })
        self.c.subscribe([topic], on_assign=self._assign, on_revoke=self._revoke, on_lost=self._lost)

    def _assign(self, _c, parts):
        self.assigned_calls += 1
        self.owned |= {tp.partition for tp in parts}

    def _revoke(self, _c, parts):
        self.revoked_calls += 1
        self.owned -= {tp.partition for tp in parts}

    def _lost(self, _c, parts):
        self.lost_calls += 1
        self.owned -= {tp.partition for tp in parts}

    def poll(self):
        m = self.c.poll(0.2)
        if m is None:
            return
        if m.error():
            fail(f"{self.name}: consume error {m.error()}")
        if m.partition() not in self.owned:
            fail(f"{self.name}: record from partition {m.partition()} it does not own ({sorted(self.owned)})")
        key = (m.partition(), m.offset())
        if key in self.ledger:
            fail(f"partition {key[0]} offset {key[1]} consumed by {self.ledger[key]} and again by {self.name}")
        self.ledger[key] = self.name
        self.c.commit(message=m, asynchronous=False)

    def __repr__(self):
        return (f"{self.name}{{owns {sorted(self.owned)}, assigned/revoked/lost callbacks "
                f"{self.assigned_calls}/{self.revoked_calls}/{self.lost_calls}}}")


def wait_until(what, cond, members, show):
    end = time.time() + DEADLINE_S
    while not cond():
        if time.time() > end:
            fail(f"{what}: not within {DEADLINE_S}s: {show()}")
        for m in members:
            m.poll()


def run_confluent_consumer_protocol(bootstrap, tag):
    """Two consumers with group.protocol=consumer on a 4-partition topic:
    A alone owns all partitions; B joins and the broker moves some of A's
    partitions to B (revoked from A first, incrementally); B leaves and A gets
    them back; every record produced in three phases is consumed exactly once
    by the owner of its partition. Then a third consumer resumes at the
    committed offsets, and ConsumerGroupDescribe shows a consumer-type group."""
    from confluent_kafka import ConsumerGroupType, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, group = f"compat-group-cp-{tag}", f"compat-cp-{tag}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=CP_PARTITIONS, replication_factor=1)])[topic].result(timeout=30)
    prod = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    end = [0] * CP_PARTITIONS

    def produce(per, phase):
        for p in range(CP_PARTITIONS):
            for i in range(per):
                prod.produce(topic, partition=p, key=f"{phase}-{p}-{i}".encode(), value=phase.encode())
            end[p] += per
        if prod.flush(30) != 0:
            fail(f"producer did not deliver phase {phase}")

    def complete():
        return all((p, o) in ledger for p in range(CP_PARTITIONS) for o in range(end[p]))

    ledger = {}
    everything = set(range(CP_PARTITIONS))
    produce(30, "one")
    a = CpMember("A", bootstrap, group, topic, ledger)
    wait_until("A alone owns every partition and read phase one",
               lambda: a.owned == everything and complete(), [a], lambda: repr(a))

    b = CpMember("B", bootstrap, group, topic, ledger)
    wait_until("B joined: A and B split the partitions",
               lambda: a.owned and b.owned and not (a.owned & b.owned) and a.owned | b.owned == everything,
               [a, b], lambda: f"{a} {b}")
    if a.revoked_calls == 0:
        fail(f"A gave partitions to B without a revocation callback: {a}")
    a_owned, b_owned = set(a.owned), set(b.owned)
    produce(20, "two")
    wait_until("A and B read phase two", complete, [a, b], lambda: f"{a} {b}")
    for p in range(CP_PARTITIONS):
        owner = "B" if p in b_owned else "A"
        for o in range(end[p] - 20, end[p]):
            if ledger[(p, o)] != owner:
                fail(f"phase two: partition {p} offset {o} read by {ledger[(p, o)]}, owner {owner}")
    if (a.owned, b.owned) != (a_owned, b_owned):
        fail(f"assignment moved while nobody joined or left: {a} {b}")

    b.c.close()  # leaves the group (ConsumerGroupHeartbeat with member epoch -1)
    produce(20, "three")
    wait_until("B left: A owns every partition again and read phase three",
               lambda: a.owned == everything and complete(), [a], lambda: repr(a))
    for p in range(CP_PARTITIONS):
        for o in range(end[p] - 20, end[p]):
            if ledger[(p, o)] != "A":
                fail(f"phase three: partition {p} offset {o} read by {ledger[(p, o)]}, want A")
    if a.lost_calls or b.lost_calls:
        fail(f"partitions lost instead of revoked: {a} {b}")
    split = f"A {sorted(a_owned)} / B {sorted(b_owned)}"

    desc = admin.describe_consumer_groups([group])[group].result(timeout=30)
    if desc.type != ConsumerGroupType.CONSUMER or len(desc.members) != 1:
        fail(f"describe_consumer_groups: type {desc.type}, {len(desc.members)} members; want CONSUMER with A alone")
    a.c.close()

    produce(10, "four")
    ledger_before = len(ledger)
    c = CpMember("C", bootstrap, group, topic, ledger)
    wait_until("C resumed at the committed offsets and read phase four", complete, [c], lambda: repr(c))
    extra_end = time.time() + EXTRA_S
    while time.time() < extra_end:
        c.poll()
    if len(ledger) - ledger_before != 10 * CP_PARTITIONS:
        fail(f"C read {len(ledger) - ledger_before} records, want {10 * CP_PARTITIONS} (phase four only)")
    committed = c.c.committed([TopicPartition(topic, p) for p in range(CP_PARTITIONS)], timeout=10)
    if [tp.offset for tp in committed] != end:
        fail(f"committed offsets {[tp.offset for tp in committed]}, want the log end {end}")
    c.c.close()
    ok(f"group.protocol=consumer: split {split} on B's join (incremental revocation), A took all back on B's "
       f"leave, {sum(end)} records consumed exactly once, C resumed at the committed offsets = log end, "
       f"described as a {desc.type.name} group")


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
    if client == "confluent-kafka":
        run_confluent_consumer_protocol(bootstrap, tag)
    print(f"{client}: group commit and resume passed", flush=True)


if __name__ == "__main__":
    main()
