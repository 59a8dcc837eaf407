#!/usr/bin/env python3
"""Transactions (KIP-98) against a running broker with confluent-kafka (librdkafka).

Usage: confluent_kafka_transactions.py BOOTSTRAP   (or FJORD_BOOTSTRAP in the environment)

Checks, each bounded by a deadline:
  * commit / abort: three transactions (commit, abort, commit) over two
    partitions; a read_committed consumer reads exactly the committed records
    in order per partition, a read_uncommitted one reads all of them
  * send_offsets_to_transaction: a group consumer and a transactional producer
    consume-transform-produce; the group's committed offsets move with a
    committed transaction and stay put with an aborted one, and the output
    shows only the committed transformed records
  * fencing: a second producer with the same transactional.id aborts the
    first one's open transaction; the first one's commit fails with a fatal
    error; the second one commits normally

"Read everything" never waits for silence: a consumer is done when its
position (which librdkafka also moves past control records and skipped
aborted records) reaches the partition's end: the high watermark, read with
read_uncommitted before it starts (no transaction is open at that point, so
that is also the last stable offset).
Exits 0 when every check passes, 1 otherwise (with the reasons on stderr).
"""

import os
import sys
import time

try:
    import confluent_kafka
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError as exc:  # pragma: no cover - environment problem
    print(f"confluent-kafka is not installed: {exc} (run scripts/install-test-deps)", file=sys.stderr)
    sys.exit(2)

STEP_TIMEOUT = float(os.environ.get("CK_STEP_TIMEOUT", "30"))
# Overall budget, kept below the runner's `timeout 120` so the summary still prints.
RUN_BUDGET = float(os.environ.get("CK_RUN_BUDGET", "100"))


from checks import CheckFailed, log, run_checks  # noqa: E402 (shared runner helpers)


def expect(cond, msg):
    if not cond:
        raise CheckFailed(msg)


class Runner:
    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        self.suffix = f"{int(time.time())}-{os.getpid()}"
        self.client_errors = []

    # ------------------------------------------------------------------ helpers
    def conf(self, label, **extra):
        def on_error(err):
            self.client_errors.append(f"{label}: {err}")
            print(f"  [{label} error_cb] {err}", file=sys.stderr, flush=True)

        c = {
            "bootstrap.servers": self.bootstrap,
            "socket.timeout.ms": 10000,
            "topic.metadata.refresh.interval.ms": 1000,
            "error_cb": on_error,
        }
        c.update(extra)
        return c

    def create_topic(self, name, partitions):
        admin = AdminClient(self.conf("admin"))
        futures = admin.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=1)],
            operation_timeout=STEP_TIMEOUT,
            request_timeout=STEP_TIMEOUT,
        )
        try:
            futures[name].result(timeout=STEP_TIMEOUT + 5)
        except Exception as exc:
            raise CheckFailed(f"create_topics({name}, {partitions} partitions) failed: {exc!r}")
        deadline = time.monotonic() + STEP_TIMEOUT
        while True:
            md = admin.list_topics(topic=name, timeout=10)
            t = md.topics.get(name)
            if (
                t is not None
                and t.error is None
                and len(t.partitions) == partitions
                and all(p.leader >= 0 for p in t.partitions.values())
            ):
                return
            if time.monotonic() >= deadline:
                raise CheckFailed(f"{name}: no metadata with {partitions} led partitions within {STEP_TIMEOUT:.0f}s")
            time.sleep(0.1)

    def txn_producer(self, txn_id):
        return Producer(
            self.conf(
                f"producer {txn_id}",
                **{
                    "transactional.id": txn_id,
                    "transaction.timeout.ms": 60000,
                    "linger.ms": 5,
                    "message.timeout.ms": int(STEP_TIMEOUT * 1000),
                },
            )
        )

    def produce(self, producer, topic, records):
        """records: list of (partition, value). Waits for every delivery report."""
        errors = []

        def on_delivery(err, msg):
            if err is not None:
                errors.append(f"{msg.value()!r}: {err}")

        for p, v in records:
            while True:
                try:
                    producer.produce(topic, value=v.encode(), partition=p, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.1)
        remaining = producer.flush(STEP_TIMEOUT)
        expect(remaining == 0, f"flush left {remaining} records undelivered after {STEP_TIMEOUT:.0f}s")
        expect(not errors, f"{len(errors)} delivery failures, first: {errors[:3]}")

    def high_watermarks(self, topic, partitions):
        c = Consumer(
            self.conf(
                "watermarks",
                **{"group.id": f"fjord-ck-txn-wm-{self.suffix}", "isolation.level": "read_uncommitted"},
            )
        )
        try:
            return {
                p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=STEP_TIMEOUT, cached=False)[1]
                for p in range(partitions)
            }
        finally:
            c.close()

    def read_all(self, topic, partitions, isolation):
        """Reads `topic` from the beginning until the consumer's position is at
        the high watermark of every partition. Returns {partition: [values]}."""
        ends = self.high_watermarks(topic, partitions)
        c = Consumer(
            self.conf(
                f"{isolation} consumer",
                **{
                    "group.id": f"fjord-ck-txn-view-{self.suffix}",
                    "enable.auto.commit": False,
                    "enable.auto.offset.store": False,
                    "auto.offset.reset": "earliest",
                    "fetch.wait.max.ms": 100,
                    "isolation.level": isolation,
                },
            )
        )
        tps = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)]
        got = {p: [] for p in range(partitions)}
        try:
            c.assign(tps)
            deadline = time.monotonic() + STEP_TIMEOUT
            while True:
                for msg in c.consume(num_messages=500, timeout=0.2):
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            continue
                        raise CheckFailed(f"{isolation} consumer of {topic}: {err}")
                    got[msg.partition()].append(msg.value().decode())
                pos = {tp.partition: tp.offset for tp in c.position([TopicPartition(topic, p) for p in ends])}
                # A partition with nothing in it keeps an invalid position.
                if all(max(pos[p], 0) >= ends[p] for p in ends):
                    return got
                if time.monotonic() >= deadline:
                    raise CheckFailed(
                        f"{isolation} consumer of {topic} did not reach the end within {STEP_TIMEOUT:.0f}s: "
                        f"positions {pos}, ends {ends}, read {sum(len(v) for v in got.values())} records"
                    )
        finally:
            c.close()

    @staticmethod
    def records(tag, count, partitions):
        return [(i % partitions, f"{tag}-{i}") for i in range(count)]

    @staticmethod
    def by_partition(records, partitions):
        out = {p: [] for p in range(partitions)}
        for p, v in records:
            out[p].append(v)
        return out

    # ------------------------------------------------------------------- checks
    def check_commit_abort(self):
        topic = f"fjord-ck-txn-{self.suffix}"
        self.create_topic(topic, 2)
        p = self.txn_producer(f"ck-txn-commit-{self.suffix}")
        p.init_transactions(STEP_TIMEOUT)
        first, aborted, second = (self.records(t, 50, 2) for t in ("c1", "ab", "c2"))
        p.begin_transaction()
        self.produce(p, topic, first)
        p.commit_transaction(STEP_TIMEOUT)
        p.begin_transaction()
        # Flushed, so the aborted records are in the log before the abort.
        self.produce(p, topic, aborted)
        p.abort_transaction(STEP_TIMEOUT)
        p.begin_transaction()
        self.produce(p, topic, second)
        p.commit_transaction(STEP_TIMEOUT)
        log("ok: three transactions (commit, abort, commit) of 50 records each")

        hw = self.high_watermarks(topic, 2)
        expect(hw == {0: 78, 1: 78}, f"high watermarks {hw}, expected 75 records + 3 markers per partition")
        rc = self.read_all(topic, 2, "read_committed")
        want = self.by_partition(first + second, 2)
        leaked = [v for vs in rc.values() for v in vs if v.startswith("ab-")]
        expect(not leaked, f"read_committed read {len(leaked)} aborted records, first {leaked[:5]}")
        expect(rc == want, f"read_committed read {rc}, expected {want}")
        log("ok: read_committed reads exactly the committed records, in order per partition")
        ru = self.read_all(topic, 2, "read_uncommitted")
        want = self.by_partition(first + aborted + second, 2)
        expect(ru == want, f"read_uncommitted read {ru}, expected {want}")
        log("ok: read_uncommitted reads the aborted records too")

    def check_send_offsets(self):
        src, dst = f"fjord-ck-txn-in-{self.suffix}", f"fjord-ck-txn-out-{self.suffix}"
        group = f"fjord-ck-txn-group-{self.suffix}"
        self.create_topic(src, 2)
        self.create_topic(dst, 2)
        plain = Producer(self.conf("plain producer", **{"acks": "all", "enable.idempotence": False}))
        self.produce(plain, src, self.records("v", 60, 2))

        consumer = Consumer(
            self.conf(
                "group consumer",
                **{
                    "group.id": group,
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                    "isolation.level": "read_committed",
                    "fetch.wait.max.ms": 100,
                },
            )
        )
        producer = self.txn_producer(f"ck-txn-ctp-{self.suffix}")
        producer.init_transactions(STEP_TIMEOUT)
        try:
            consumer.subscribe([src])

            def consume(n):
                out = []
                deadline = time.monotonic() + STEP_TIMEOUT * 2
                while len(out) < n:
                    if time.monotonic() >= deadline:
                        raise CheckFailed(f"group consumer read {len(out)} of {n} records")
                    msg = consumer.poll(0.2)
                    if msg is None:
                        continue
                    if msg.error() is not None:
                        raise CheckFailed(f"group consumer: {msg.error()}")
                    out.append((msg.partition(), msg.value().decode()))
                return out

            def positions():
                return {
                    tp.partition: tp.offset
                    for tp in consumer.position(consumer.assignment())
                    if tp.offset >= 0
                }

            def committed():
                tps = [TopicPartition(src, p) for p in range(2)]
                return {tp.partition: tp.offset for tp in consumer.committed(tps, timeout=STEP_TIMEOUT)}

            def round_trip(n, commit):
                got = consume(n)
                pos = positions()
                producer.begin_transaction()
                out = [(p, f"T({v})") for p, v in got]
                self.produce(producer, dst, out)
                producer.send_offsets_to_transaction(
                    [TopicPartition(src, p, o) for p, o in pos.items()],
                    consumer.consumer_group_metadata(),
                    STEP_TIMEOUT,
                )
                if commit:
                    producer.commit_transaction(STEP_TIMEOUT)
                else:
                    producer.abort_transaction(STEP_TIMEOUT)
                return out, pos

            out1, pos1 = round_trip(40, True)
            want = {p: pos1.get(p, -1001) for p in range(2)}
            got = committed()
            expect(got == want, f"committed offsets after the committed transaction: {got}, expected {want}")
            log(f"ok: send_offsets_to_transaction + commit: group offsets {got}")

            _, pos2 = round_trip(20, False)
            expect(pos2 != pos1, f"positions did not move in the aborted round: {pos2}")
            got = committed()
            expect(got == want, f"committed offsets after the aborted transaction: {got}, expected {want}")
            log(f"ok: offsets sent in an aborted transaction are not committed (still {got})")
        finally:
            consumer.close()

        rc = self.read_all(dst, 2, "read_committed")
        want = self.by_partition(out1, 2)
        expect(rc == want, f"read_committed output {rc}, expected the committed round only {want}")
        ru = self.read_all(dst, 2, "read_uncommitted")
        expect(sum(len(v) for v in ru.values()) == 60, f"read_uncommitted output has {ru}")
        log("ok: the output shows exactly the committed round to read_committed")

    def check_fencing(self):
        topic = f"fjord-ck-txn-fence-{self.suffix}"
        txn_id = f"ck-txn-fence-{self.suffix}"
        self.create_topic(topic, 1)
        a = self.txn_producer(txn_id)
        a.init_transactions(STEP_TIMEOUT)
        a.begin_transaction()
        self.produce(a, topic, self.records("a", 5, 1))
        b = self.txn_producer(txn_id)
        b.init_transactions(STEP_TIMEOUT)
        log("ok: a second producer with the same transactional.id initialised")
        try:
            a.commit_transaction(STEP_TIMEOUT)
            raise CheckFailed("the fenced producer's commit succeeded")
        except KafkaException as exc:
            err = exc.args[0]
            expect(
                err.fatal() and err.code() == KafkaError._FENCED,
                f"the fenced producer's commit failed with {err!r} (fatal={err.fatal()}), expected fatal _FENCED",
            )
            log(f"ok: the fenced producer's commit fails: {err.str()}")
        b.begin_transaction()
        self.produce(b, topic, self.records("b", 5, 1))
        b.commit_transaction(STEP_TIMEOUT)
        rc = self.read_all(topic, 1, "read_committed")
        expect(rc == {0: [f"b-{i}" for i in range(5)]}, f"read_committed read {rc}, expected b-0..b-4 only")
        ru = self.read_all(topic, 1, "read_uncommitted")
        expect(len(ru[0]) == 10, f"read_uncommitted read {ru}, expected a-* and b-*")
        log("ok: the fenced producer's transaction was aborted; the new producer's commit is visible")


def main():
    bootstrap = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("FJORD_BOOTSTRAP", "")
    if not bootstrap:
        print(f"usage: {sys.argv[0]} BOOTSTRAP", file=sys.stderr)
        return 2
    log(f"confluent-kafka {confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]}), "
        f"bootstrap {bootstrap}")
    r = Runner(bootstrap)
    checks = [
        ("commit-abort", r.check_commit_abort),
        ("send-offsets", r.check_send_offsets),
        ("fencing", r.check_fencing),
    ]
    notes = [f"note: {len(r.client_errors)} client error callback(s), first: {r.client_errors[:3]}"] if r.client_errors else []
    return run_checks("confluent-kafka transactions", checks, RUN_BUDGET, notes)


if __name__ == "__main__":
    sys.exit(main())
