package dev.fjord.compat;

import static dev.fjord.compat.Support.check;
import static dev.fjord.compat.Support.eq;
import static dev.fjord.compat.Support.get;
import static dev.fjord.compat.Support.partitions;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;

import dev.fjord.compat.Support.CheckFailed;
import dev.fjord.compat.Support.Ctx;

/** Check 5: transactions. */
final class TxnChecks {
    private TxnChecks() {}

    static KafkaProducer<String, String> txnProducer(Ctx ctx, String transactionalId) {
        return ctx.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId,
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "30000"));
    }

    static KafkaConsumer<String, String> reader(Ctx ctx, String isolation) {
        return ctx.consumer(null, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation));
    }

    /** Reads every partition from the beginning up to its end offset (the LSO under read_committed). */
    static List<ConsumerRecord<String, String>> readAll(Ctx ctx, String topic, int parts, String isolation) {
        List<TopicPartition> tps = partitions(topic, parts);
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        try (KafkaConsumer<String, String> c = reader(ctx, isolation)) {
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            Support.waitUntil("a " + isolation + " reader reaches the end offsets " + end, Duration.ofSeconds(20), () -> {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                    out.add(r);
                }
                for (TopicPartition tp : tps) {
                    if (c.position(tp) < end.get(tp)) {
                        return false;
                    }
                }
                return true;
            }, () -> out.size() + " read");
        }
        return out;
    }

    static List<String> values(List<ConsumerRecord<String, String>> rs, int partition) {
        List<String> out = new ArrayList<>();
        for (ConsumerRecord<String, String> r : rs) {
            if (partition < 0 || r.partition() == partition) {
                out.add(r.value());
            }
        }
        return out;
    }

    static List<String> seq(String prefix, int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(prefix + i);
        }
        return out;
    }

    static String commitAbort(Ctx ctx) {
        String topic = ctx.name("txn");
        ctx.createTopic(topic, 2, null);
        TopicPartition p0 = new TopicPartition(topic, 0);
        long firstOpen;
        long lsoWhileOpen;
        long hwWhileOpen;
        try (KafkaProducer<String, String> p = txnProducer(ctx, ctx.name("txn-commit-abort"))) {
            p.initTransactions();
            p.beginTransaction();
            for (int i = 0; i < 10; i++) {
                p.send(new ProducerRecord<>(topic, 0, "k", "committed-" + i));
            }
            for (int i = 0; i < 5; i++) {
                p.send(new ProducerRecord<>(topic, 1, "k", "p1-committed-" + i));
            }
            p.commitTransaction();

            p.beginTransaction();
            for (int i = 0; i < 10; i++) {
                p.send(new ProducerRecord<>(topic, 0, "k", "aborted-" + i));
            }
            p.flush();
            p.abortTransaction();

            p.beginTransaction();
            List<Future<RecordMetadata>> open = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                open.add(p.send(new ProducerRecord<>(topic, 0, "k", "later-" + i)));
            }
            p.flush();
            firstOpen = get(open.get(0), "send in the open transaction").offset();
            // While the transaction is open, read_committed ends at its first offset (the LSO).
            try (KafkaConsumer<String, String> rc = reader(ctx, "read_committed");
                    KafkaConsumer<String, String> ru = reader(ctx, "read_uncommitted")) {
                lsoWhileOpen = rc.endOffsets(List.of(p0)).get(p0);
                hwWhileOpen = ru.endOffsets(List.of(p0)).get(p0);
            }
            eq(firstOpen, lsoWhileOpen, "read_committed end offset (LSO) while a transaction is open");
            eq(get(open.get(4), "send").offset() + 1, hwWhileOpen, "read_uncommitted end offset (high watermark)");
            List<ConsumerRecord<String, String>> duringOpen = readAll(ctx, topic, 2, "read_committed");
            eq(seq("committed-", 10), values(duringOpen, 0), "read_committed values of p0 while a transaction is open");
            p.commitTransaction();
        }
        List<ConsumerRecord<String, String>> committed = readAll(ctx, topic, 2, "read_committed");
        List<String> want0 = seq("committed-", 10);
        want0.addAll(seq("later-", 5));
        eq(want0, values(committed, 0), "read_committed values of p0");
        eq(seq("p1-committed-", 5), values(committed, 1), "read_committed values of p1");
        for (ConsumerRecord<String, String> r : committed) {
            if (r.value().startsWith("later-")) {
                eq(firstOpen + Integer.parseInt(r.value().substring(6)), r.offset(), "offset of " + r.value());
            }
        }
        List<ConsumerRecord<String, String>> all = readAll(ctx, topic, 2, "read_uncommitted");
        List<String> wantAll = seq("committed-", 10);
        wantAll.addAll(seq("aborted-", 10));
        wantAll.addAll(seq("later-", 5));
        eq(wantAll, values(all, 0), "read_uncommitted values of p0");
        return "commit, abort, commit: read_committed sees the 20 committed records (LSO " + lsoWhileOpen + " < HW "
                + hwWhileOpen + " while open), read_uncommitted all 30 data records";
    }

    /** Consume-transform-produce with sendOffsetsToTransaction(offsets, groupMetadata()), one round aborted. */
    static String consumeTransformProduce(Ctx ctx) {
        int parts = 3;
        String in = ctx.name("ctp-in");
        String out = ctx.name("ctp-out");
        String group = ctx.name("ctp");
        ctx.createTopic(in, parts, null);
        ctx.createTopic(out, parts, null);
        try (KafkaProducer<String, String> plain = ctx.producer(Map.of())) {
            for (int i = 0; i < 30; i++) {
                plain.send(new ProducerRecord<>(in, i % parts, "k" + i, "v" + i));
            }
            plain.flush();
        }
        int transactions = 0;
        Map<TopicPartition, Long> committedAfterAbort;
        try (KafkaConsumer<String, String> c = ctx.consumer(group, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                "read_committed", ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "7"));
                KafkaProducer<String, String> p = txnProducer(ctx, ctx.name("ctp"))) {
            p.initTransactions();
            c.subscribe(List.of(in));
            int[] processed = {0};
            int[] txns = {0};
            Support.waitUntil("30 input records are transformed in transactions", Duration.ofSeconds(40), () -> {
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(100));
                if (!rs.isEmpty()) {
                    transform(p, c, rs, out);
                    p.commitTransaction();
                    processed[0] += rs.count();
                    txns[0]++;
                }
                return processed[0] >= 30;
            }, () -> processed[0] + " processed");
            eq(30, processed[0], "input records processed");
            transactions = txns[0];
            Map<TopicPartition, OffsetAndMetadata> committed = c.committed(Set.copyOf(partitions(in, parts)));
            for (TopicPartition tp : partitions(in, parts)) {
                eq(10L, committed.get(tp).offset(), "committed offset of " + tp + " after the transactions");
            }

            // One round aborted: its output is invisible to read_committed and
            // its offsets are not committed; the records are processed again.
            try (KafkaProducer<String, String> plain = ctx.producer(Map.of())) {
                for (int i = 30; i < 33; i++) {
                    get(plain.send(new ProducerRecord<>(in, 0, "k" + i, "v" + i)), "send to " + in);
                }
            }
            List<ConsumerRecord<String, String>> late = new ArrayList<>();
            Support.waitUntil("the 3 late records are polled", Duration.ofSeconds(20), () -> {
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(100));
                rs.forEach(late::add);
                if (!rs.isEmpty()) {
                    transform(p, c, rs, out);
                    // abortTransaction drops records not sent yet: these must reach the broker.
                    p.flush();
                    p.abortTransaction();
                }
                return late.size() >= 3;
            }, () -> late.size() + " polled");
            committedAfterAbort = new TreeMap<>((x, y) -> x.toString().compareTo(y.toString()));
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : c.committed(Set.copyOf(partitions(in, parts))).entrySet()) {
                committedAfterAbort.put(e.getKey(), e.getValue().offset());
            }
            eq(10L, committedAfterAbort.get(new TopicPartition(in, 0)), "committed offset of p0 after the aborted round");
            // As an application does after an abort: back to the committed offsets, and again.
            TopicPartition in0 = new TopicPartition(in, 0);
            c.seek(in0, committedAfterAbort.get(in0));
            int[] again = {0};
            Support.waitUntil("the late records are processed again", Duration.ofSeconds(20), () -> {
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(100));
                if (!rs.isEmpty()) {
                    transform(p, c, rs, out);
                    p.commitTransaction();
                    again[0] += rs.count();
                }
                return again[0] >= 3;
            });
            eq(13L, c.committed(Set.of(in0)).get(in0).offset(), "committed offset of p0 at the end");
        }
        List<String> got = values(readAll(ctx, out, parts, "read_committed"), -1);
        List<String> want = new ArrayList<>();
        for (int i = 0; i < 33; i++) {
            want.add("V" + i);
        }
        eq(new java.util.TreeSet<>(want), new java.util.TreeSet<>(got), "read_committed output values");
        eq(33, got.size(), "read_committed output records (no duplicates)");
        int uncommitted = readAll(ctx, out, parts, "read_uncommitted").size();
        eq(36, uncommitted, "read_uncommitted output records (33 committed + 3 aborted)");
        return "30 records in " + transactions + " transactions with sendOffsetsToTransaction(groupMetadata()), "
                + "committed offsets 10/10/10; an aborted round left offsets " + committedAfterAbort.values()
                + " and was redone; read_committed output exactly 33";
    }

    static void transform(KafkaProducer<String, String> p, KafkaConsumer<String, String> c,
            ConsumerRecords<String, String> rs, String out) {
        p.beginTransaction();
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (ConsumerRecord<String, String> r : rs) {
            p.send(new ProducerRecord<>(out, r.partition(), r.key(), r.value().toUpperCase()));
            offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
        }
        p.sendOffsetsToTransaction(offsets, c.groupMetadata());
    }

    /** A second producer with the same transactional.id fences the first and aborts its open transaction. */
    static String fencing(Ctx ctx) {
        String topic = ctx.name("txn-fence");
        String tid = ctx.name("txn-fence");
        ctx.createTopic(topic, 1, null);
        String fencedWith;
        KafkaProducer<String, String> first = txnProducer(ctx, tid);
        try {
            first.initTransactions();
            first.beginTransaction();
            get(first.send(new ProducerRecord<>(topic, 0, "k", "first-open")), "send of the first producer");
            first.flush();
            try (KafkaProducer<String, String> second = txnProducer(ctx, tid)) {
                second.initTransactions();
                try {
                    Future<RecordMetadata> f = first.send(new ProducerRecord<>(topic, 0, "k", "first-after-fence"));
                    first.commitTransaction();
                    throw new CheckFailed("the fenced producer committed (send gave " + Support.get(f, "send") + ")");
                } catch (ProducerFencedException | InvalidProducerEpochException e) {
                    fencedWith = e.getClass().getSimpleName();
                } catch (KafkaException e) {
                    Throwable c = e.getCause();
                    while (c != null && !(c instanceof ProducerFencedException || c instanceof InvalidProducerEpochException)) {
                        c = c.getCause();
                    }
                    if (c == null) {
                        throw new CheckFailed("the fenced producer got " + Support.describe(e)
                                + ", not ProducerFencedException", e);
                    }
                    fencedWith = e.getClass().getSimpleName() + " caused by " + c.getClass().getSimpleName();
                }
                second.beginTransaction();
                second.send(new ProducerRecord<>(topic, 0, "k", "second"));
                second.commitTransaction();
            }
        } finally {
            first.close(Duration.ofSeconds(5));
        }
        eq(List.of("second"), values(readAll(ctx, topic, 1, "read_committed"), 0),
                "read_committed values after the fence (the first producer's open transaction aborted)");
        check(values(readAll(ctx, topic, 1, "read_uncommitted"), 0).contains("first-open"),
                "read_uncommitted does not show the fenced producer's record");
        return "second initTransactions fenced the first (" + fencedWith + "), its open transaction aborted; the "
                + "second producer commits";
    }

    /** The broker's finalized `transaction.version` (0 when not finalized). */
    static short finalizedTransactionVersion(Ctx ctx) {
        FinalizedVersionRange r = get(ctx.admin().describeFeatures().featureMetadata(), "describeFeatures")
                .finalizedFeatures().get("transaction.version");
        return r == null ? 0 : r.maxVersionLevel();
    }

    /** Whether the producer's transaction manager runs transactions v2 (KIP-890 part 2). */
    static boolean usesTransactionsV2(KafkaProducer<String, String> p) {
        try {
            java.lang.reflect.Field f = KafkaProducer.class.getDeclaredField("transactionManager");
            f.setAccessible(true);
            Object tm = f.get(p);
            return (Boolean) tm.getClass().getMethod("isTransactionV2Enabled").invoke(tm);
        } catch (ReflectiveOperationException e) {
            throw new CheckFailed("cannot read the producer's transaction manager: " + e);
        }
    }

    static int epochOf(Ctx ctx, String transactionalId) {
        return get(ctx.admin().describeTransactions(List.of(transactionalId)).description(transactionalId),
                "describeTransactions " + transactionalId).producerEpoch();
    }

    /**
     * Transactions v2 as the Java client turns it on by itself: with
     * `transaction.version` 2 finalized the producer runs v2 (no
     * AddPartitionsToTxn; Produce v12 and EndTxn v5), and every commit and
     * every abort bumps the producer epoch by one; below 2 it runs v1 and the
     * epoch stays. Either way read_committed sees exactly the committed records.
     */
    static String transactionsV2(Ctx ctx) {
        short tv = finalizedTransactionVersion(ctx);
        String topic = ctx.name("txn-v2");
        ctx.createTopic(topic, 2, null);
        String id = ctx.name("txn-v2-id");
        int before;
        int after;
        boolean v2;
        try (KafkaProducer<String, String> p = txnProducer(ctx, id)) {
            p.initTransactions();
            before = epochOf(ctx, id);
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, "k", "c1"));
            p.send(new ProducerRecord<>(topic, 1, "k", "c1"));
            p.commitTransaction();
            v2 = usesTransactionsV2(p);
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, "k", "a1"));
            p.flush();
            p.abortTransaction();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 1, "k", "c2"));
            p.commitTransaction();
            after = epochOf(ctx, id);
        }
        check(v2 == (tv >= 2), "the producer runs transactions v" + (v2 ? 2 : 1)
                + " with transaction.version " + tv + " finalized");
        int bumps = after - before;
        eq(v2 ? 3 : 0, bumps, "producer epoch bumps over two commits and an abort (" + before + " -> " + after + ")");
        List<String> seen = new ArrayList<>(values(readAll(ctx, topic, 2, "read_committed"), -1));
        java.util.Collections.sort(seen);
        eq(List.of("c1", "c1", "c2"), seen, "read_committed sees the committed records only");
        return "transaction.version " + tv + ", v" + (v2 ? 2 : 1) + ", epoch " + before + " -> " + after;
    }
}
