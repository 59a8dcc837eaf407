package dev.fjord.compat;

import static dev.fjord.compat.Support.check;
import static dev.fjord.compat.Support.eq;
import static dev.fjord.compat.Support.get;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

import dev.fjord.compat.Support.CheckFailed;
import dev.fjord.compat.Support.Ctx;

/** Check 4: commits, committed(), seeks, positions and the offset lookups of the consumer. */
final class OffsetChecks {
    private OffsetChecks() {}

    static final int RECORDS = 20;
    static final long STEP_MS = 1000;

    /** A two-partition topic, 20 records in each; partition 0's have timestamps BASE + i * STEP_MS. */
    private static String topic;
    private static long base;

    private static RuntimeException fixtureFailure;

    static synchronized String fixture(Ctx ctx) {
        if (fixtureFailure != null) {
            throw new CheckFailed("the shared offsets topic could not be set up: " + fixtureFailure.getMessage());
        }
        if (topic == null) {
            try {
                String t = ctx.name("offsets");
                ctx.createTopic(t, 2, null);
                long b = System.currentTimeMillis() - 600_000;
                try (KafkaProducer<String, String> p = ctx.producer(Map.of())) {
                    List<java.util.concurrent.Future<?>> fs = new ArrayList<>();
                    for (int i = 0; i < RECORDS; i++) {
                        fs.add(p.send(new ProducerRecord<>(t, 0, b + i * STEP_MS, "k" + i, "p0-" + i)));
                        fs.add(p.send(new ProducerRecord<>(t, 1, "k" + i, "p1-" + i)));
                    }
                    p.flush();
                    for (java.util.concurrent.Future<?> f : fs) {
                        get(f, "send to " + t);
                    }
                }
                topic = t;
                base = b;
            } catch (RuntimeException e) {
                fixtureFailure = e;
                throw e;
            }
        }
        return topic;
    }

    static ConsumerRecord<String, String> firstRecord(KafkaConsumer<String, String> c, TopicPartition tp) {
        AtomicReference<ConsumerRecord<String, String>> first = new AtomicReference<>();
        Support.waitUntil("a record arrives from " + tp, Duration.ofSeconds(20), () -> {
            ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
            List<ConsumerRecord<String, String>> list = rs.records(tp);
            if (!list.isEmpty()) {
                first.set(list.get(0));
                return true;
            }
            return false;
        });
        return first.get();
    }

    static String commit(Ctx ctx) {
        String t = fixture(ctx);
        String group = ctx.name("offsets-commit");
        TopicPartition p0 = new TopicPartition(t, 0);
        TopicPartition p1 = new TopicPartition(t, 1);
        try (KafkaConsumer<String, String> c = ctx.consumer(group, Map.of())) {
            c.assign(List.of(p0, p1));
            Map<TopicPartition, OffsetAndMetadata> none = c.committed(Set.of(p0, p1));
            check(none.get(p0) == null && none.get(p1) == null, "committed() before any commit: %s", none);

            c.commitSync(Map.of(p0, new OffsetAndMetadata(5, "sync-meta"), p1, new OffsetAndMetadata(7)));
            Map<TopicPartition, OffsetAndMetadata> got = c.committed(Set.of(p0, p1));
            eq(5L, got.get(p0).offset(), "committed offset of p0 after commitSync");
            eq("sync-meta", got.get(p0).metadata(), "committed metadata of p0");
            eq(7L, got.get(p1).offset(), "committed offset of p1 after commitSync");
            eq("", got.get(p1).metadata(), "committed metadata of p1 (none given)");

            AtomicReference<Object> callback = new AtomicReference<>();
            c.commitAsync(Map.of(p0, new OffsetAndMetadata(9, "async-meta")), (offsets, err) ->
                    callback.set(err != null ? err : offsets));
            // The callback runs inside a later consumer call: poll until it has.
            Support.waitUntil("the commitAsync callback ran", Duration.ofSeconds(20), () -> {
                c.poll(Duration.ofMillis(50));
                return callback.get() != null;
            });
            if (callback.get() instanceof Exception e) {
                throw new CheckFailed("commitAsync callback got " + Support.describe(e));
            }
            eq(Map.of(p0, new OffsetAndMetadata(9, "async-meta")), callback.get(), "offsets given to the callback");
            eq(9L, c.committed(Set.of(p0)).get(p0).offset(), "committed offset of p0 after commitAsync");
            eq("async-meta", c.committed(Set.of(p0)).get(p0).metadata(), "committed metadata after commitAsync");

            // The no-argument forms commit the consumed positions.
            c.seekToBeginning(List.of(p0, p1));
            Map<TopicPartition, Integer> read = new HashMap<>();
            Support.waitUntil("every record is read", Duration.ofSeconds(20), () -> {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    read.merge(new TopicPartition(r.topic(), r.partition()), 1, Integer::sum);
                }
                return c.position(p0) >= RECORDS && c.position(p1) >= RECORDS;
            }, read::toString);
            c.commitSync();
            got = c.committed(Set.of(p0, p1));
            eq(c.position(p0), got.get(p0).offset(), "committed p0 after commitSync() = position");
            eq(c.position(p1), got.get(p1).offset(), "committed p1 after commitSync() = position");
            c.commitSync(Map.of(p0, new OffsetAndMetadata(12)));
        }
        // A new consumer of the group starts at the committed offsets.
        try (KafkaConsumer<String, String> c = ctx.consumer(group, Map.of())) {
            c.assign(List.of(p0));
            eq(12L, c.position(p0), "position of a new member = committed offset");
            eq(12L, firstRecord(c, p0).offset(), "first record a new member reads");
        }
        return "commitSync with metadata, commitAsync callback, committed(), commitSync() of positions, "
                + "a new consumer starts at the committed offset";
    }

    static String seek(Ctx ctx) {
        String t = fixture(ctx);
        TopicPartition p0 = new TopicPartition(t, 0);
        TopicPartition p1 = new TopicPartition(t, 1);
        try (KafkaConsumer<String, String> c = ctx.consumer(null, Map.of())) {
            c.assign(List.of(p0, p1));
            c.seek(p0, 7);
            eq(7L, c.position(p0), "position after seek(7)");
            c.pause(List.of(p1));
            ConsumerRecord<String, String> r = firstRecord(c, p0);
            eq(7L, r.offset(), "first record after seek(7)");
            eq("p0-7", r.value(), "value at offset 7");

            c.seekToBeginning(List.of(p0));
            eq(0L, c.position(p0), "position after seekToBeginning");
            eq(0L, firstRecord(c, p0).offset(), "first record after seekToBeginning");

            c.seekToEnd(List.of(p0));
            eq((long) RECORDS, c.position(p0), "position after seekToEnd");

            // Past the end: OFFSET_OUT_OF_RANGE, then auto.offset.reset=earliest.
            c.seek(p0, 1000);
            eq(0L, firstRecord(c, p0).offset(), "first record after seek(1000) and reset to earliest");

            // At the end of p1, a record appended later is the next one read.
            c.pause(List.of(p0));
            c.resume(List.of(p1));
            c.seekToEnd(List.of(p1));
            long end = c.position(p1);
            check(end >= RECORDS, "end of p1 is %d", end);
            try (KafkaProducer<String, String> p = ctx.producer(Map.of())) {
                get(p.send(new ProducerRecord<>(t, 1, "late", "late")), "send to p1");
            }
            ConsumerRecord<String, String> late = firstRecord(c, p1);
            eq(end, late.offset(), "offset of the record appended at the end");
            eq("late", late.value(), "value appended at the end");
            eq(end + 1, c.position(p1), "position after reading it");
        }
        return "seek, seekToBeginning, seekToEnd, position, reset after seeking past the end, a record appended "
                + "at the end";
    }

    /** An offsetsForTimes answer: the record's offset and timestamp, and the partition's leader epoch (0 here). */
    static void found(long offset, long timestamp, OffsetAndTimestamp got, String what) {
        check(got != null, "%s: nothing found", what);
        eq(offset, got.offset(), what + ": offset");
        eq(timestamp, got.timestamp(), what + ": timestamp");
        eq(java.util.Optional.of(0), got.leaderEpoch(), what + ": leader epoch of the new topic's partition");
    }

    static String lookup(Ctx ctx) {
        String t = fixture(ctx);
        TopicPartition p0 = new TopicPartition(t, 0);
        String empty = ctx.name("offsets-empty");
        ctx.createTopic(empty, 1, null);
        TopicPartition e0 = new TopicPartition(empty, 0);
        try (KafkaConsumer<String, String> c = ctx.consumer(null, Map.of())) {
            Map<TopicPartition, Long> begin = c.beginningOffsets(List.of(p0, e0));
            Map<TopicPartition, Long> end = c.endOffsets(List.of(p0, e0));
            eq(0L, begin.get(p0), "beginningOffsets of p0");
            eq((long) RECORDS, end.get(p0), "endOffsets of p0");
            eq(0L, begin.get(e0), "beginningOffsets of an empty partition");
            eq(0L, end.get(e0), "endOffsets of an empty partition");

            Map<TopicPartition, OffsetAndTimestamp> mid = c.offsetsForTimes(Map.of(p0, base + 5 * STEP_MS + STEP_MS / 2));
            found(6, base + 6 * STEP_MS, mid.get(p0), "offsetsForTimes between records 5 and 6");
            Map<TopicPartition, OffsetAndTimestamp> exact = c.offsetsForTimes(Map.of(p0, base + 3 * STEP_MS));
            found(3, base + 3 * STEP_MS, exact.get(p0), "offsetsForTimes at record 3's timestamp");
            Map<TopicPartition, OffsetAndTimestamp> before = c.offsetsForTimes(Map.of(p0, base - 10_000));
            found(0, base, before.get(p0), "offsetsForTimes before the first record");
            Map<TopicPartition, OffsetAndTimestamp> after = c.offsetsForTimes(
                    Map.of(p0, base + RECORDS * STEP_MS + 10_000, e0, base));
            check(after.containsKey(p0) && after.get(p0) == null, "offsetsForTimes after the last record: %s", after);
            check(after.containsKey(e0) && after.get(e0) == null, "offsetsForTimes on an empty partition: %s", after);
        }
        return "beginningOffsets/endOffsets (also of an empty partition), offsetsForTimes between, at, before and "
                + "after the records";
    }
}
