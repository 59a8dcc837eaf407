package dev.fjord.compat;

import static dev.fjord.compat.Support.check;
import static dev.fjord.compat.Support.eq;
import static dev.fjord.compat.Support.get;
import static dev.fjord.compat.Support.partitions;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TopicListing;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

import dev.fjord.compat.Support.CheckFailed;
import dev.fjord.compat.Support.Ctx;

/** Check 6: the Admin client. */
final class AdminChecks {
    private AdminChecks() {}

    static final Duration WAIT = Duration.ofSeconds(20);

    /** The topic that admin-topics creates (with configs) and admin-delete-topics deletes. */
    private static String mainTopic;

    static synchronized String mainTopic(Ctx ctx) {
        if (mainTopic == null) {
            String t = ctx.name("admin");
            ctx.createTopic(t, 3, Map.of("retention.ms", "86400000", "cleanup.policy", "delete",
                    "max.message.bytes", "500000"));
            mainTopic = t;
        }
        return mainTopic;
    }

    static TopicDescription describeTopic(Admin admin, String topic) {
        return get(admin.describeTopics(List.of(topic)).allTopicNames(), "describeTopics " + topic).get(topic);
    }

    static String topics(Ctx ctx) {
        Admin admin = ctx.admin();
        String t = mainTopic(ctx);
        Map<String, TopicListing> listed = get(admin.listTopics().namesToListings(), "listTopics");
        check(listed.containsKey(t), "listTopics does not list %s", t);
        check(!listed.get(t).isInternal(), "%s listed as internal", t);
        Uuid listedId = listed.get(t).topicId();

        TopicDescription d = describeTopic(admin, t);
        eq(3, d.partitions().size(), "partitions of " + t);
        check(!Uuid.ZERO_UUID.equals(d.topicId()), "describeTopics gives no topic id");
        eq(listedId, d.topicId(), "topic id in listTopics and describeTopics");
        for (var p : d.partitions()) {
            check(p.leader() != null && !p.leader().isEmpty(), "partition %d has no leader", p.partition());
            eq(1, p.replicas().size(), "replicas of partition " + p.partition());
            eq(1, p.isr().size(), "ISR of partition " + p.partition());
        }
        // Creating it again: TopicExistsException.
        Throwable again = Support.failureOf(admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic(t, 3,
                (short) 1))).all(), "createTopics of an existing topic");
        check(again instanceof org.apache.kafka.common.errors.TopicExistsException, "createTopics of an existing topic: %s",
                Support.describe(again));

        get(admin.createPartitions(Map.of(t, NewPartitions.increaseTo(5))).all(), "createPartitions to 5");
        Support.waitUntil("describeTopics shows 5 partitions", WAIT, () -> describeTopic(admin, t).partitions().size() == 5);
        Throwable shrink = Support.failureOf(admin.createPartitions(Map.of(t, NewPartitions.increaseTo(2))).all(),
                "createPartitions to fewer");
        check(shrink instanceof org.apache.kafka.common.errors.InvalidPartitionsException,
                "createPartitions to fewer: %s", Support.describe(shrink));
        // The new partitions take records.
        try (KafkaProducer<String, String> p = ctx.producer(Map.of())) {
            RecordMetadata m = get(p.send(new ProducerRecord<>(t, 4, "k", "to-new-partition")), "send to partition 4");
            eq(0L, m.offset(), "offset of the first record in the new partition 4");
        }
        return "createTopics with configs, listTopics, describeTopics, TopicExists, "
                + "createPartitions 3 -> 5 (and refused to shrink), new partition writable";
    }

    /** describeTopics(TopicCollection.ofTopicIds(…)): Metadata by topic id (v10+). */
    static String describeTopicsById(Ctx ctx) {
        Admin admin = ctx.admin();
        String t = mainTopic(ctx);
        TopicDescription byName = describeTopic(admin, t);
        Uuid unknown = Uuid.randomUuid();
        Map<Uuid, TopicDescription> byId = get(admin.describeTopics(
                org.apache.kafka.common.TopicCollection.ofTopicIds(List.of(byName.topicId()))).allTopicIds(),
                "describeTopics by id");
        TopicDescription d = byId.get(byName.topicId());
        check(d != null, "describeTopics by id %s gave %s", byName.topicId(), byId);
        eq(t, d.name(), "name of the topic described by id");
        eq(byName.partitions().size(), d.partitions().size(), "partitions of the topic described by id");
        Throwable missing = Support.failureOf(admin.describeTopics(
                org.apache.kafka.common.TopicCollection.ofTopicIds(List.of(unknown))).allTopicIds(),
                "describeTopics of an unknown id");
        check(missing instanceof org.apache.kafka.common.errors.UnknownTopicIdException,
                "describeTopics of an unknown id: %s", Support.describe(missing));
        return "describeTopics by id gives the name and partitions; an unknown id gives UnknownTopicIdException";
    }

    static Config describeTopicConfig(Admin admin, String topic) {
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        return get(admin.describeConfigs(List.of(r)).all(), "describeConfigs " + topic).get(r);
    }

    static String configs(Ctx ctx) {
        Admin admin = ctx.admin();
        String t = mainTopic(ctx);
        Config c = describeTopicConfig(admin, t);
        ConfigEntry retention = c.get("retention.ms");
        eq("86400000", retention.value(), "retention.ms set at creation");
        eq(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, retention.source(), "source of retention.ms");
        eq("500000", c.get("max.message.bytes").value(), "max.message.bytes set at creation");
        ConfigEntry segment = c.get("segment.bytes");
        check(segment != null && segment.value() != null, "segment.bytes is not described");
        eq(ConfigEntry.ConfigSource.DEFAULT_CONFIG, segment.source(), "source of segment.bytes (a default)");
        check(!c.get("retention.ms").isReadOnly(), "retention.ms is read-only");

        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, t);
        get(admin.incrementalAlterConfigs(Map.of(r, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("max.message.bytes", null), AlterConfigOp.OpType.DELETE),
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND)))).all(),
                "incrementalAlterConfigs");
        Support.waitUntil("describeConfigs shows the altered configs", WAIT, () -> {
            Config now = describeTopicConfig(admin, t);
            return "3600000".equals(now.get("retention.ms").value())
                    && now.get("max.message.bytes").source() == ConfigEntry.ConfigSource.DEFAULT_CONFIG
                    && "delete,compact".equals(now.get("cleanup.policy").value());
        }, () -> {
            Config now = describeTopicConfig(admin, t);
            return now.get("retention.ms") + " " + now.get("max.message.bytes") + " " + now.get("cleanup.policy");
        });
        Config now = describeTopicConfig(admin, t);
        eq("1048588", now.get("max.message.bytes").value(), "max.message.bytes back at the default");

        // validateOnly with a bad value: InvalidConfigurationException, nothing changed.
        Throwable bad = Support.failureOf(admin.incrementalAlterConfigs(Map.of(r, List.of(new AlterConfigOp(
                new ConfigEntry("retention.ms", "not-a-number"), AlterConfigOp.OpType.SET)))).all(),
                "incrementalAlterConfigs with a bad value");
        check(bad instanceof org.apache.kafka.common.errors.InvalidConfigurationException
                || bad instanceof org.apache.kafka.common.errors.InvalidRequestException,
                "a bad retention.ms value: %s", Support.describe(bad));
        eq("3600000", describeTopicConfig(admin, t).get("retention.ms").value(), "retention.ms after a refused change");
        return "describeConfigs (values and sources), incrementalAlterConfigs SET/DELETE/APPEND, a bad value refused";
    }

    /** A one-partition topic with 10 records; record 5 has the largest timestamp. */
    private static String offsetsTopic;
    private static long offsetsBase;

    private static RuntimeException offsetsTopicFailure;

    static synchronized String offsetsTopic(Ctx ctx) {
        if (offsetsTopicFailure != null) {
            throw new CheckFailed("the shared offsets topic could not be set up: " + offsetsTopicFailure.getMessage());
        }
        if (offsetsTopic == null) {
            try {
                String t = ctx.name("admin-offsets");
                ctx.createTopic(t, 1, null);
                long b = System.currentTimeMillis() - 600_000;
                try (KafkaProducer<String, String> p = ctx.producer(Map.of())) {
                    List<Future<RecordMetadata>> fs = new ArrayList<>();
                    for (int i = 0; i < 10; i++) {
                        long ts = i == 5 ? b + 100_000 : b + i * 1000;
                        fs.add(p.send(new ProducerRecord<>(t, 0, ts, "k" + i, "v" + i)));
                    }
                    p.flush();
                    for (Future<RecordMetadata> f : fs) {
                        get(f, "send to " + t);
                    }
                }
                offsetsTopic = t;
                offsetsBase = b;
            } catch (RuntimeException e) {
                offsetsTopicFailure = e;
                throw e;
            }
        }
        return offsetsTopic;
    }

    static ListOffsetsResultInfo listOffset(Admin admin, TopicPartition tp, OffsetSpec spec) {
        return get(admin.listOffsets(Map.of(tp, spec)).partitionResult(tp), "listOffsets " + tp);
    }

    static String listOffsets(Ctx ctx) {
        Admin admin = ctx.admin();
        TopicPartition tp = new TopicPartition(offsetsTopic(ctx), 0);
        long b = offsetsBase;
        eq(0L, listOffset(admin, tp, OffsetSpec.earliest()).offset(), "earliest");
        eq(10L, listOffset(admin, tp, OffsetSpec.latest()).offset(), "latest");
        ListOffsetsResultInfo at3 = listOffset(admin, tp, OffsetSpec.forTimestamp(b + 2500));
        eq(3L, at3.offset(), "forTimestamp between records 2 and 3");
        eq(b + 3000, at3.timestamp(), "timestamp of the record found");
        // Record 5 (b + 100 s) is the first at or after b + 6.5 s.
        eq(5L, listOffset(admin, tp, OffsetSpec.forTimestamp(b + 6500)).offset(), "forTimestamp after record 6");
        eq(-1L, listOffset(admin, tp, OffsetSpec.forTimestamp(b + 200_000)).offset(), "forTimestamp after every record");
        ListOffsetsResultInfo max = listOffset(admin, tp, OffsetSpec.maxTimestamp());
        eq(5L, max.offset(), "maxTimestamp offset");
        eq(b + 100_000, max.timestamp(), "maxTimestamp timestamp");
        // Several partitions and specs in one call.
        Map<TopicPartition, ListOffsetsResultInfo> both = get(admin.listOffsets(Map.of(tp, OffsetSpec.latest(),
                new TopicPartition(mainTopic(ctx), 0), OffsetSpec.earliest())).all(), "listOffsets of two topics");
        eq(10L, both.get(tp).offset(), "latest in a two-topic listOffsets");
        eq(0L, both.get(new TopicPartition(mainTopic(ctx), 0)).offset(), "earliest of the other topic");
        return "listOffsets earliest 0, latest 10, forTimestamp (between, after the last: -1), maxTimestamp offset 5";
    }

    static String deleteRecords(Ctx ctx) {
        Admin admin = ctx.admin();
        TopicPartition tp = new TopicPartition(offsetsTopic(ctx), 0);
        long low = get(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(4))).lowWatermarks().get(tp),
                "deleteRecords before 4").lowWatermark();
        eq(4L, low, "low watermark after deleteRecords before 4");
        eq(4L, listOffset(admin, tp, OffsetSpec.earliest()).offset(), "earliest after deleteRecords");
        eq(10L, listOffset(admin, tp, OffsetSpec.latest()).offset(), "latest after deleteRecords");
        try (KafkaConsumer<String, String> c = ctx.consumer(null, Map.of())) {
            eq(4L, c.beginningOffsets(List.of(tp)).get(tp), "consumer beginningOffsets after deleteRecords");
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            eq(4L, OffsetChecks.firstRecord(c, tp).offset(), "first record read after deleteRecords");
        }
        // Up to the high watermark (-1): everything.
        long all = get(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(-1))).lowWatermarks().get(tp),
                "deleteRecords before -1 (the high watermark)").lowWatermark();
        eq(10L, all, "low watermark after deleting everything");
        Throwable beyond = Support.failureOf(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(50)))
                .lowWatermarks().get(tp), "deleteRecords beyond the high watermark");
        check(beyond instanceof org.apache.kafka.common.errors.OffsetOutOfRangeException,
                "deleteRecords beyond the high watermark: %s", Support.describe(beyond));
        return "deleteRecords before 4 (low watermark 4, earliest 4, consumer starts at 4), before -1 (10), beyond the "
                + "end refused";
    }

    static Collection<GroupListing> listConsumerGroups(Admin admin) {
        return get(admin.listGroups(ListGroupsOptions.forConsumerGroups()).all(), "listGroups (consumer groups)");
    }

    static GroupListing listed(Admin admin, String group) {
        for (GroupListing g : listConsumerGroups(admin)) {
            if (g.groupId().equals(group)) {
                return g;
            }
        }
        return null;
    }

    static String groups(Ctx ctx) {
        Admin admin = ctx.admin();
        String t = ctx.name("admin-groups");
        String group = ctx.name("admin-groups");
        ctx.createTopic(t, 2, null);
        TopicPartition p0 = new TopicPartition(t, 0);
        TopicPartition p1 = new TopicPartition(t, 1);
        GroupChecks.produce(ctx, t, 2, 10, "g");

        GroupChecks.Member m = new GroupChecks.Member("m", ctx.consumer(group, Map.of()));
        try {
            m.subscribe(t);
            Support.waitUntil("the member consumed all 20 records", WAIT, () -> {
                m.poll();
                return m.consumed.size() >= 20;
            }, m::toString);

            // An active member: listed Stable, described with its assignment.
            Support.waitUntil("listGroups shows the group Stable", WAIT, () -> {
                GroupListing g = listed(admin, group);
                return g != null && g.groupState().orElse(null) == GroupState.STABLE;
            }, () -> String.valueOf(listed(admin, group)));
            GroupListing g = listed(admin, group);
            eq(GroupType.CLASSIC, g.type().orElse(null), "type of the listed group");
            eq("consumer", g.protocol(), "protocol type of the listed group");
            ConsumerGroupDescription d = GroupChecks.describeGroup(ctx, group);
            eq(GroupState.STABLE, d.groupState(), "described state with a member");
            eq(GroupType.CLASSIC, d.type(), "described group type");
            eq("range", d.partitionAssignor(), "assignor of the group (the first in the default list)");
            eq(1, d.members().size(), "members described");
            MemberDescription md = d.members().iterator().next();
            eq(m.memberId(), md.consumerId(), "member id described");
            eq("java-compat-consumer", md.clientId(), "client id described");
            eq(Set.of(p0, p1), md.assignment().topicPartitions(), "assignment described");
            check(d.coordinator() != null && !d.coordinator().isEmpty(), "no coordinator in the description");

            Throwable busy = Support.failureOf(admin.deleteConsumerGroups(List.of(group)).all(),
                    "deleteConsumerGroups of a group with a member");
            check(busy instanceof GroupNotEmptyException, "deleting a group with a member: %s", Support.describe(busy));
            Throwable subscribed = Support.failureOf(admin.deleteConsumerGroupOffsets(group, Set.of(p0)).all(),
                    "deleteConsumerGroupOffsets of a subscribed topic");
            check(subscribed instanceof org.apache.kafka.common.errors.GroupSubscribedToTopicException,
                    "deleting offsets of a subscribed topic: %s", Support.describe(subscribed));
        } finally {
            m.close();
        }
        Support.waitUntil("the group is Empty after its member left", WAIT,
                () -> GroupChecks.describeGroup(ctx, group).groupState() == GroupState.EMPTY);
        eq(GroupState.EMPTY, listed(admin, group).groupState().orElse(null), "listed state after the member left");

        Map<TopicPartition, OffsetAndMetadata> offsets = get(admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata(), "listConsumerGroupOffsets");
        eq(Map.of(p0, 10L, p1, 10L), offsetsOnly(offsets), "listConsumerGroupOffsets");

        get(admin.alterConsumerGroupOffsets(group, Map.of(p0, new OffsetAndMetadata(3, "altered"),
                p1, new OffsetAndMetadata(7))).all(), "alterConsumerGroupOffsets");
        offsets = get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata(), "listConsumerGroupOffsets");
        eq(Map.of(p0, 3L, p1, 7L), offsetsOnly(offsets), "offsets after alterConsumerGroupOffsets");
        eq("altered", offsets.get(p0).metadata(), "metadata after alterConsumerGroupOffsets");
        // A consumer of the group starts at the altered offset.
        try (KafkaConsumer<String, String> c = ctx.consumer(group, Map.of())) {
            c.assign(List.of(p0));
            eq(3L, c.position(p0), "position of a consumer after alterConsumerGroupOffsets");
        }

        get(admin.deleteConsumerGroupOffsets(group, Set.of(p0)).all(), "deleteConsumerGroupOffsets p0");
        offsets = get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata(), "listConsumerGroupOffsets");
        eq(Map.of(p1, 7L), offsetsOnly(offsets), "offsets after deleteConsumerGroupOffsets of p0");

        get(admin.deleteConsumerGroups(List.of(group)).all(), "deleteConsumerGroups");
        check(listed(admin, group) == null, "the deleted group is still listed");
        Throwable gone = Support.failureOf(admin.deleteConsumerGroups(List.of(group)).all(),
                "deleteConsumerGroups of a deleted group");
        check(gone instanceof GroupIdNotFoundException, "deleting a deleted group: %s", Support.describe(gone));
        offsets = get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata(), "listConsumerGroupOffsets");
        eq(Map.of(), offsetsOnly(offsets), "offsets of the deleted group");
        return "listGroups (Stable, then Empty), describeConsumerGroups (member, assignment, assignor), "
                + "listConsumerGroupOffsets, alterConsumerGroupOffsets, deleteConsumerGroupOffsets (refused while "
                + "subscribed), deleteConsumerGroups (refused while active, then gone)";
    }

    static Map<TopicPartition, Long> offsetsOnly(Map<TopicPartition, OffsetAndMetadata> m) {
        Map<TopicPartition, Long> out = new HashMap<>();
        m.forEach((tp, om) -> {
            if (om != null) {
                out.put(tp, om.offset());
            }
        });
        return out;
    }

    static String producersAndTransactions(Ctx ctx) {
        Admin admin = ctx.admin();
        String t = ctx.name("admin-txn");
        String tid = ctx.name("admin-txn");
        ctx.createTopic(t, 2, null);
        TopicPartition p0 = new TopicPartition(t, 0);
        TopicPartition p1 = new TopicPartition(t, 1);
        long openStart;
        long producerId;
        try (KafkaProducer<String, String> p = TxnChecks.txnProducer(ctx, tid)) {
            p.initTransactions();
            p.beginTransaction();
            get(p.send(new ProducerRecord<>(t, 0, "k", "a")), "send");
            openStart = get(p.send(new ProducerRecord<>(t, 0, "k", "b")), "send").offset() - 1;
            p.flush();

            // An open transaction: DescribeProducers shows where it started.
            PartitionProducerState st = get(admin.describeProducers(List.of(p0)).partitionResult(p0), "describeProducers");
            eq(1, st.activeProducers().size(), "active producers on p0 " + st.activeProducers());
            ProducerState ps = st.activeProducers().get(0);
            producerId = ps.producerId();
            eq(1, ps.lastSequence(), "last sequence on p0");
            eq(openStart, ps.currentTransactionStartOffset().orElse(-1), "open transaction's first offset");

            TransactionDescription open = get(admin.describeTransactions(List.of(tid)).description(tid),
                    "describeTransactions (open)");
            eq(TransactionState.ONGOING, open.state(), "state of the open transaction");
            eq(producerId, open.producerId(), "producer id of the transaction");
            eq(Set.of(p0), open.topicPartitions(), "partitions of the open transaction");
            eq(30000L, open.transactionTimeoutMs(), "transaction timeout");
            check(open.transactionStartTimeMs().isPresent(), "no start time for the open transaction");

            Collection<TransactionListing> listings = get(admin.listTransactions().all(), "listTransactions");
            TransactionListing mine = listings.stream().filter(l -> l.transactionalId().equals(tid)).findFirst()
                    .orElseThrow(() -> new CheckFailed("listTransactions does not list " + tid + ": " + listings));
            eq(TransactionState.ONGOING, mine.state(), "listed state of the open transaction");
            eq(producerId, mine.producerId(), "listed producer id");
            Collection<TransactionListing> ongoing = get(admin.listTransactions(
                    new org.apache.kafka.clients.admin.ListTransactionsOptions().filterStates(Set.of(TransactionState.ONGOING)))
                    .all(), "listTransactions (Ongoing)");
            check(ongoing.stream().anyMatch(l -> l.transactionalId().equals(tid)), "not listed as Ongoing: %s", ongoing);

            p.send(new ProducerRecord<>(t, 1, "k", "c"));
            p.commitTransaction();
        }
        Support.waitUntil("describeTransactions shows the transaction complete", WAIT, () -> {
            TransactionDescription done = get(admin.describeTransactions(List.of(tid)).description(tid),
                    "describeTransactions (committed)");
            return done.state() == TransactionState.COMPLETE_COMMIT && done.topicPartitions().isEmpty();
        }, () -> get(admin.describeTransactions(List.of(tid)).description(tid), "describeTransactions").toString());
        Map<TopicPartition, PartitionProducerState> after = get(admin.describeProducers(List.of(p0, p1)).all(),
                "describeProducers after the commit");
        for (TopicPartition tp : List.of(p0, p1)) {
            List<ProducerState> active = after.get(tp).activeProducers();
            eq(1, active.size(), "producers on " + tp + " after the commit");
            eq(producerId, active.get(0).producerId(), "producer id on " + tp);
            check(active.get(0).currentTransactionStartOffset().isEmpty(), "%s still has an open transaction: %s", tp,
                    active.get(0));
        }
        Throwable unknown = Support.failureOf(admin.describeTransactions(List.of(ctx.name("no-such-txn")))
                .description(ctx.name("no-such-txn")), "describeTransactions of an unknown id");
        check(unknown instanceof org.apache.kafka.common.errors.TransactionalIdNotFoundException,
                "describeTransactions of an unknown id: %s", Support.describe(unknown));
        return "describeProducers (open transaction start " + openStart + "), describeTransactions Ongoing -> "
                + "CompleteCommit, listTransactions (also filtered by state), unknown id refused";
    }

    static String clusterAndLogDirs(Ctx ctx) {
        Admin admin = ctx.admin();
        DescribeClusterResult cluster = admin.describeCluster();
        Collection<Node> nodes = get(cluster.nodes(), "describeCluster nodes");
        String clusterId = get(cluster.clusterId(), "describeCluster clusterId");
        Node controller = get(cluster.controller(), "describeCluster controller");
        eq(1, nodes.size(), "brokers in the cluster " + nodes);
        Node broker = nodes.iterator().next();
        check(clusterId != null && !clusterId.isEmpty(), "no cluster id");
        check(controller != null && !controller.isEmpty(), "no controller");
        eq("127.0.0.1", broker.host(), "broker host");
        eq(ctx.bootstrap, broker.host() + ":" + broker.port(), "broker address");

        String t = ctx.name("admin-logdirs");
        ctx.createTopic(t, 2, null);
        try (KafkaProducer<String, String> p = ctx.producer(Map.of())) {
            get(p.send(new ProducerRecord<>(t, 0, "k", "x".repeat(1000))), "send");
        }
        TopicPartition tp0 = new TopicPartition(t, 0);
        TopicPartition tp1 = new TopicPartition(t, 1);
        java.util.concurrent.atomic.AtomicReference<Map<Integer, Map<String, LogDirDescription>>> seen =
                new java.util.concurrent.atomic.AtomicReference<>();
        // Kafka lists a new partition once the broker has applied its creation: ask until both are there.
        Support.waitUntil("describeLogDirs lists both partitions of " + t, WAIT, () -> {
            Map<Integer, Map<String, LogDirDescription>> dirs = get(admin.describeLogDirs(List.of(broker.id()))
                    .allDescriptions(), "describeLogDirs");
            seen.set(dirs);
            Map<String, LogDirDescription> m = dirs.get(broker.id());
            return m != null && m.values().stream().anyMatch(d -> d.replicaInfos().containsKey(tp0)
                    && d.replicaInfos().containsKey(tp1) && d.replicaInfos().get(tp0).size() > 0);
        }, () -> String.valueOf(seen.get() == null ? null : seen.get().get(broker.id()).values().stream()
                .map(d -> d.replicaInfos().keySet().stream().filter(tp -> tp.topic().equals(t)).toList()).toList()));
        Map<String, LogDirDescription> mine = seen.get().get(broker.id());
        check(mine.size() == 1, "log dirs of broker %d: %s", broker.id(), mine.keySet());
        LogDirDescription ld = mine.values().iterator().next();
        check(ld.error() == null, "log dir error %s", ld.error());
        ReplicaInfo r0 = ld.replicaInfos().get(tp0);
        ReplicaInfo r1 = ld.replicaInfos().get(tp1);
        check(r0.size() > 1000, "size of %s-0 is %d after a 1000-byte record", t, r0.size());
        eq(0L, r1.size(), "size of the empty partition " + t + "-1");
        check(ld.totalBytes().isPresent() && ld.usableBytes().isPresent()
                && ld.totalBytes().getAsLong() >= ld.usableBytes().getAsLong(), "total/usable bytes %s", ld);
        return "describeCluster (1 broker at " + ctx.bootstrap + ", cluster id, controller), describeLogDirs (one dir, "
                + "partition sizes, total/usable bytes)";
    }

    static String deleteTopics(Ctx ctx) {
        Admin admin = ctx.admin();
        String t = mainTopic(ctx);
        Uuid id = describeTopic(admin, t).topicId();
        String other = ctx.name("admin-delete-by-id");
        ctx.createTopic(other, 1, null);
        Uuid otherId = describeTopic(admin, other).topicId();
        get(admin.deleteTopics(List.of(t)).all(), "deleteTopics " + t);
        get(admin.deleteTopics(org.apache.kafka.common.TopicCollection.ofTopicIds(List.of(otherId))).all(),
                "deleteTopics by id");
        Support.waitUntil("listTopics no longer lists the deleted topics", WAIT, () -> {
            Set<String> names = get(admin.listTopics().names(), "listTopics");
            return !names.contains(t) && !names.contains(other);
        });
        Throwable gone = Support.failureOf(admin.describeTopics(List.of(t)).allTopicNames(),
                "describeTopics of a deleted topic");
        check(gone instanceof UnknownTopicOrPartitionException, "describeTopics of a deleted topic: %s",
                Support.describe(gone));
        Throwable again = Support.failureOf(admin.deleteTopics(List.of(t)).all(), "deleteTopics of a deleted topic");
        check(again instanceof UnknownTopicOrPartitionException, "deleting a deleted topic: %s", Support.describe(again));
        return "deleteTopics by name (" + id + ") and by id, gone from listTopics and describeTopics, a second delete "
                + "refused";
    }
}
