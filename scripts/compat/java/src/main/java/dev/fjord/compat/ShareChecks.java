package dev.fjord.compat;

import static dev.fjord.compat.Support.check;
import static dev.fjord.compat.Support.eq;
import static dev.fjord.compat.Support.get;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

import dev.fjord.compat.Support.Ctx;

/**
 * Share groups (KIP-932) with the Java client's KafkaShareConsumer: implicit
 * and explicit acknowledgement, two consumers on one partition, two groups,
 * and a lock that expires. Each check turns `share.version` on when it is
 * not finalized (Kafka 4.4 finalizes it; Fjord does not yet by default).
 */
final class ShareChecks {
    private ShareChecks() {}

    /** Kafka's smallest `share.record.lock.duration.ms` (group.share.min.record.lock.duration.ms). */
    static final int MIN_LOCK_MS = 15000;

    /** Finalizes `share.version` 1 unless a level ≥ 1 is finalized already (kafka-features upgrade). */
    static void enableShareVersion(Ctx ctx) {
        FeatureMetadata fm = get(ctx.admin().describeFeatures().featureMetadata(), "describeFeatures");
        FinalizedVersionRange r = fm.finalizedFeatures().get("share.version");
        if (r != null && r.maxVersionLevel() >= 1) {
            return;
        }
        get(ctx.admin().updateFeatures(
                Map.of("share.version", new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.UPGRADE)),
                new UpdateFeaturesOptions()).all(), "updateFeatures share.version=1");
        Support.waitUntil("share.version 1 is finalized", Duration.ofSeconds(20), () -> {
            FeatureMetadata m = get(ctx.admin().describeFeatures().featureMetadata(), "describeFeatures");
            FinalizedVersionRange v = m.finalizedFeatures().get("share.version");
            return v != null && v.maxVersionLevel() >= 1;
        });
    }

    /** Sets group configs (incrementalAlterConfigs on the GROUP resource). */
    static void setGroupConfigs(Ctx ctx, String group, Map<String, String> configs) {
        List<AlterConfigOp> ops = new ArrayList<>();
        configs.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
        ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
        get(ctx.admin().incrementalAlterConfigs(Map.of(res, ops)).all(), "incrementalAlterConfigs group " + group);
    }

    static KafkaShareConsumer<String, String> consumer(Ctx ctx, String group, String mode) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, ctx.bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "java-compat-share");
        p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, mode);
        p.putAll(ctx.security);
        return new KafkaShareConsumer<>(p);
    }

    /** A topic of one partition and a group reading it from the earliest offset. */
    static String setUp(Ctx ctx, String base, String group) {
        enableShareVersion(ctx);
        String topic = ctx.name(base);
        ctx.createTopic(topic, 1, null);
        setGroupConfigs(ctx, group, Map.of("share.auto.offset.reset", "earliest"));
        return topic;
    }

    static void produce(Ctx ctx, String topic, int from, int n) {
        try (KafkaProducer<String, String> p = ctx.producer(Map.of())) {
            for (int i = from; i < from + n; i++) {
                p.send(new ProducerRecord<>(topic, "k" + i, "v" + i));
            }
            p.flush();
        }
    }

    /** Polls until `until` holds, handing every record to `each`; fails at the deadline. */
    static void pollUntil(KafkaShareConsumer<String, String> c, String what, Duration timeout,
            java.util.function.Consumer<ConsumerRecord<String, String>> each,
            java.util.function.BooleanSupplier until, java.util.function.Supplier<String> state) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!until.getAsBoolean()) {
            check(System.nanoTime() < deadline, "timed out after %ds waiting until %s; last seen: %s",
                    timeout.toSeconds(), what, state.get());
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                each.accept(r);
            }
        }
    }

    /** Implicit acknowledgement: N records, each delivered once, then commitSync. */
    static String implicit(Ctx ctx) {
        String group = ctx.name("share-implicit");
        String topic = setUp(ctx, "share-implicit", group);
        int n = 50;
        produce(ctx, topic, 0, n);
        Map<String, Integer> seen = new HashMap<>();
        try (KafkaShareConsumer<String, String> c = consumer(ctx, group, "implicit")) {
            c.subscribe(List.of(topic));
            pollUntil(c, n + " records", Duration.ofSeconds(40), r -> {
                seen.merge(r.value(), 1, Integer::sum);
                check(r.deliveryCount().orElse((short) 0) == 1, "record %s delivered with count %s",
                        r.value(), r.deliveryCount());
            }, () -> seen.size() >= n, () -> seen.size() + " distinct");
            Map<?, ?> acks = c.commitSync();
            for (Object e : acks.values()) {
                check(((java.util.Optional<?>) e).isEmpty(), "commitSync failed: %s", e);
            }
            // Nothing comes again: every record was accepted.
            for (int i = 0; i < 3; i++) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    seen.merge(r.value(), 1, Integer::sum);
                }
            }
        }
        eq(n, seen.size(), "distinct records");
        check(seen.values().stream().allMatch(x -> x == 1), "a record came twice: %s", seen);
        return n + " records, each delivered once, committed";
    }

    /** Explicit acknowledgement: accept, release (comes back with count 2), reject (never again). */
    static String explicit(Ctx ctx) {
        String group = ctx.name("share-explicit");
        String topic = setUp(ctx, "share-explicit", group);
        produce(ctx, topic, 0, 10);
        Map<String, Integer> counts = new HashMap<>();
        List<String> afterRelease = new ArrayList<>();
        AtomicBoolean released = new AtomicBoolean();
        try (KafkaShareConsumer<String, String> c = consumer(ctx, group, "explicit")) {
            c.subscribe(List.of(topic));
            pollUntil(c, "v3 delivered again", Duration.ofSeconds(40), r -> {
                counts.merge(r.value(), 1, Integer::sum);
                int d = r.deliveryCount().orElse((short) 0);
                if (r.value().equals("v3") && d == 1) {
                    c.acknowledge(r, AcknowledgeType.RELEASE);
                    released.set(true);
                } else if (r.value().equals("v5")) {
                    c.acknowledge(r, AcknowledgeType.REJECT);
                } else {
                    if (released.get()) {
                        afterRelease.add(r.value() + "#" + d);
                    }
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                if (r.value().equals("v3") && d != 1) {
                    eq(2, d, "delivery count of the released record");
                }
            }, () -> counts.getOrDefault("v3", 0) >= 2 && counts.size() == 10, () -> counts.toString());
            for (int i = 0; i < 3; i++) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    counts.merge(r.value(), 1, Integer::sum);
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                c.commitSync();
            }
        }
        eq(1, counts.get("v5"), "deliveries of the rejected record");
        eq(2, counts.get("v3"), "deliveries of the released record");
        for (int i = 0; i < 10; i++) {
            if (i != 3) {
                eq(1, counts.get("v" + i), "deliveries of v" + i);
            }
        }
        return "10 records: v3 released and delivered again with count 2, v5 rejected and not again";
    }

    /** Two consumers of one group on one partition while records are produced. */
    static String split(Ctx ctx) throws Exception {
        String group = ctx.name("share-split");
        String topic = setUp(ctx, "share-split", group);
        int n = 200;
        Map<String, Integer> accepted = new ConcurrentHashMap<>();
        Map<String, Set<String>> byConsumer = new ConcurrentHashMap<>();
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> threads = new ArrayList<>();
        List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
        for (String name : List.of("a", "b")) {
            Set<String> mine = ConcurrentHashMap.newKeySet();
            byConsumer.put(name, mine);
            Thread t = new Thread(() -> {
                try (KafkaShareConsumer<String, String> c = consumer(ctx, group, "explicit")) {
                    c.subscribe(List.of(topic));
                    while (!stop.get()) {
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                            c.acknowledge(r, AcknowledgeType.ACCEPT);
                            accepted.merge(r.value(), 1, Integer::sum);
                            mine.add(r.value());
                        }
                        c.commitSync();
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
            }, "share-split-" + name);
            threads.add(t);
            t.start();
        }
        try {
            // Produced while both read, in small bursts.
            for (int i = 0; i < n; i += 20) {
                produce(ctx, topic, i, 20);
            }
            Support.waitUntil("every record accepted", Duration.ofSeconds(60),
                    () -> accepted.size() >= n || !errors.isEmpty(), () -> accepted.size() + " of " + n);
        } finally {
            stop.set(true);
            for (Thread t : threads) {
                t.join(30000);
            }
        }
        check(errors.isEmpty(), "a consumer failed: %s", errors.isEmpty() ? "" : Support.describe(errors.get(0)));
        eq(n, accepted.size(), "distinct records accepted");
        List<String> twice = new ArrayList<>();
        accepted.forEach((k, v) -> {
            if (v > 1) {
                twice.add(k);
            }
        });
        check(twice.isEmpty(), "records accepted twice: %s", twice);
        return n + " records accepted once each (a: " + byConsumer.get("a").size() + ", b: "
                + byConsumer.get("b").size() + ")";
    }

    /** Two share groups on one topic: each gets every record. */
    static String groupsApart(Ctx ctx) {
        String g1 = ctx.name("share-apart-1");
        String g2 = ctx.name("share-apart-2");
        String topic = setUp(ctx, "share-apart", g1);
        setGroupConfigs(ctx, g2, Map.of("share.auto.offset.reset", "earliest"));
        int n = 30;
        produce(ctx, topic, 0, n);
        for (String g : List.of(g1, g2)) {
            Set<String> seen = new HashSet<>();
            try (KafkaShareConsumer<String, String> c = consumer(ctx, g, "implicit")) {
                c.subscribe(List.of(topic));
                pollUntil(c, g + " has " + n + " records", Duration.ofSeconds(40), r -> seen.add(r.value()),
                        () -> seen.size() >= n, () -> seen.size() + " records");
                c.commitSync();
            }
            eq(n, seen.size(), "records of " + g);
        }
        return "two groups each read all " + n + " records";
    }

    /** A record not acknowledged comes back once its lock expires. */
    static String lockTimeout(Ctx ctx) {
        String group = ctx.name("share-lock");
        String topic = setUp(ctx, "share-lock", group);
        setGroupConfigs(ctx, group, Map.of("share.record.lock.duration.ms", String.valueOf(MIN_LOCK_MS)));
        produce(ctx, topic, 0, 1);
        List<Integer> counts = new ArrayList<>();
        long firstAt = 0;
        long againAt = 0;
        try (KafkaShareConsumer<String, String> c = consumer(ctx, group, "explicit")) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            // The first consumer holds the record unacknowledged (and does
            // not poll again); a second member of the group gets it once
            // the lock has expired.
            while (counts.isEmpty()) {
                check(System.nanoTime() < deadline, "the record was not delivered");
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    counts.add((int) r.deliveryCount().orElse((short) 0));
                    firstAt = System.nanoTime();
                }
            }
            try (KafkaShareConsumer<String, String> other = consumer(ctx, group, "explicit")) {
                other.subscribe(List.of(topic));
                while (counts.size() < 2) {
                    check(System.nanoTime() < deadline, "the record did not come back; deliveries %s", counts);
                    for (ConsumerRecord<String, String> r : other.poll(Duration.ofMillis(500))) {
                        counts.add((int) r.deliveryCount().orElse((short) 0));
                        againAt = System.nanoTime();
                        other.acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                }
                other.commitSync();
            }
        }
        eq(List.of(1, 2), counts, "delivery counts");
        long afterMs = (againAt - firstAt) / 1_000_000;
        check(afterMs >= MIN_LOCK_MS - 1000, "delivered again after %d ms, before the %d ms lock", afterMs, MIN_LOCK_MS);
        return "an unacknowledged record came back with delivery count 2 after " + afterMs + " ms (lock "
                + MIN_LOCK_MS + " ms)";
    }
}
