#!/usr/bin/env python3
"""Drives one broker with confluent-kafka (librdkafka) through as many APIs
as it speaks, for the fuzz seed capture (capture.sh): admin calls (topics,
partitions, configs, records, offsets, groups, leaders, ACLs and SCRAM,
which Fjord does not serve), plain/compressed/idempotent/transactional
produce (one transaction aborted, for a .txnindex), a compacted topic with
keys and a tombstone, a consumer group that commits.

Usage: drive_clients.py BOOTSTRAP [--small]
Every step is tried once; a failure is printed and the next step runs.
"""

import sys
import time
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions,
    NewTopic, ResourceType,
)

B = sys.argv[1]
SMALL = "--small" in sys.argv[2:]
RUN = uuid.uuid4().hex[:6]
T = f"seed-{RUN}"
TC = f"seed-compact-{RUN}"
G = f"seed-group-{RUN}"


def step(name, f):
    try:
        f()
        print(f"ok   {name}")
    except Exception as e:  # noqa: BLE001 - any failure: go on
        print(f"fail {name}: {e}")


def wait(futures):
    for f in futures.values():
        try:
            f.result(timeout=20)
        except Exception as e:  # noqa: BLE001
            print(f"     {e}")


admin = AdminClient({"bootstrap.servers": B})


def create():
    wait(admin.create_topics([NewTopic(T, 3, 1)], operation_timeout=20))
    wait(admin.create_topics(
        [NewTopic(TC, 1, 1, config={"cleanup.policy": "compact", "segment.bytes": "4096",
                                    "min.cleanable.dirty.ratio": "0.01", "segment.ms": "100"})],
        operation_timeout=20))


def produce(conf, topic, n, keys=False, tombstone=False):
    p = Producer({"bootstrap.servers": B, "linger.ms": 5, **conf})
    for i in range(n):
        p.produce(topic, key=(f"k{i % 5}".encode() if keys else None),
                  value=f"v{i}-{RUN}".encode(), headers=[("h", b"x")])
    if tombstone:
        p.produce(topic, key=b"k1", value=None)
    p.flush(20)


def txn():
    p = Producer({"bootstrap.servers": B, "transactional.id": f"seed-txn-{RUN}"})
    p.init_transactions(20)
    p.begin_transaction()
    p.produce(T, value=b"committed")
    p.commit_transaction(20)
    p.begin_transaction()
    p.produce(T, value=b"aborted")
    p.abort_transaction(20)
    c = Consumer({"bootstrap.servers": B, "group.id": G + "-txn", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([T])
    end = time.time() + 10
    msg = None
    while time.time() < end and msg is None:
        msg = c.poll(0.5)
    p.begin_transaction()
    p.produce(T, value=b"with offsets")
    if msg is not None and not msg.error():
        p.send_offsets_to_transaction([TopicPartition(T, msg.partition(), msg.offset() + 1)],
                                      c.consumer_group_metadata(), 20)
    p.commit_transaction(20)
    c.close()


def consume():
    c = Consumer({"bootstrap.servers": B, "group.id": G, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    c.subscribe([T])
    end, got = time.time() + 15, 0
    while time.time() < end and got < 20:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got += 1
    c.commit(asynchronous=False)
    c.committed([TopicPartition(T, 0)], 10)
    c.offsets_for_times([TopicPartition(T, 0, int(time.time() * 1000) - 60_000)], 10)
    c.get_watermark_offsets(TopicPartition(T, 0), 10)
    c.close()


def admin_calls():
    wait(admin.describe_configs([ConfigResource(ResourceType.TOPIC, T),
                                 ConfigResource(ResourceType.BROKER, "1")]))
    wait(admin.alter_configs([ConfigResource(ResourceType.TOPIC, T, set_config={"retention.ms": "86400000"})]))
    wait(admin.incremental_alter_configs([ConfigResource(
        ResourceType.TOPIC, T,
        incremental_configs=[ConfigEntry("retention.bytes", "1048576",
                                         incremental_operation=AlterConfigOpType.SET)])]))
    wait(admin.create_partitions([NewPartitions(T, 4)], operation_timeout=20))
    admin.list_topics(timeout=10)
    step("describe_cluster", lambda: admin.describe_cluster().result(timeout=10))
    step("describe_topics", lambda: wait(admin.describe_topics(
        __import__("confluent_kafka").TopicCollection([T]))))
    step("list_groups", lambda: admin.list_consumer_groups().result(timeout=10))
    step("describe_groups", lambda: wait(admin.describe_consumer_groups([G])))
    from confluent_kafka import ConsumerGroupTopicPartitions
    step("list_group_offsets", lambda: wait(admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(G)])))
    step("alter_group_offsets", lambda: wait(admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(G, [TopicPartition(T, 0, 0)])])))
    from confluent_kafka.admin import OffsetSpec
    step("list_offsets", lambda: wait(admin.list_offsets(
        {TopicPartition(T, 0): OffsetSpec.latest(), TopicPartition(T, 1): OffsetSpec.earliest(),
         TopicPartition(T, 2): OffsetSpec.max_timestamp()})))
    step("delete_records", lambda: wait(admin.delete_records([TopicPartition(T, 0, 2)])))
    from confluent_kafka import ElectionType
    step("elect_leaders", lambda: admin.elect_leaders(
        ElectionType.PREFERRED, [TopicPartition(T, 0)]).result(timeout=10))
    from confluent_kafka.admin import AclBinding, AclBindingFilter, AclOperation, AclPermissionType
    from confluent_kafka.admin import ResourcePatternType
    step("describe_acls (not served)", lambda: admin.describe_acls(AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
        AclPermissionType.ANY)).result(timeout=10))
    step("scram (not served)", lambda: admin.describe_user_scram_credentials().result(timeout=10))
    step("delete_group", lambda: wait(admin.delete_consumer_groups([G + "-txn"], request_timeout=10)))


step("create topics", create)
step("produce plain", lambda: produce({"acks": "all", "enable.idempotence": False}, T, 30))
if not SMALL:
    for codec in ["gzip", "snappy", "lz4", "zstd"]:
        step(f"produce {codec}", lambda c=codec: produce({"compression.codec": c}, T, 30))
    step("produce idempotent", lambda: produce({"enable.idempotence": True}, T, 30))
    step("produce acks=0", lambda: produce({"acks": 0}, T, 5))
    step("produce compacted", lambda: produce({}, TC, 200, keys=True, tombstone=True))
    step("transactions", txn)
step("consume", consume)
if not SMALL:
    step("admin", admin_calls)
    time.sleep(3)
    step("produce compacted again", lambda: produce({}, TC, 200, keys=True))
    time.sleep(3)
step("create and delete a topic", lambda: (
    wait(admin.create_topics([NewTopic(f"seed-gone-{RUN}", 2, 1)], operation_timeout=20)),
    wait(admin.delete_topics([f"seed-gone-{RUN}"], operation_timeout=20))))
