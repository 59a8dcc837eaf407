package dev.fjord.compat;

import static dev.fjord.compat.Support.check;
import static dev.fjord.compat.Support.eq;
import static dev.fjord.compat.Support.get;
import static dev.fjord.compat.Support.headerList;
import static dev.fjord.compat.Support.partitions;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.utils.Utils;

import dev.fjord.compat.Support.CheckFailed;
import dev.fjord.compat.Support.Ctx;

/** Check 1: the producer with its defaults (idempotent, acks=all), every codec, read back exactly. */
final class ProducerChecks {
    private ProducerChecks() {}

    static final int PARTITIONS = 3;
    static final int RECORDS = 300;

    /** What was sent, and where the broker said it went. */
    record Sent(ProducerRecord<String, String> record, RecordMetadata meta) {}

    static String codec(Ctx ctx, String codec) {
        String topic = ctx.name("codec-" + codec);
        ctx.createTopic(topic, PARTITIONS, null);

        Map<String, Object> extra = new HashMap<>();
        if (!codec.equals("none")) {
            extra.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        }
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < RECORDS; i++) {
            int partition = i % PARTITIONS;
            String key = i % 10 == 0 ? null : "key-" + i;
            // Compressible values of varying length, one null value (a tombstone).
            String value = i == 151 ? null : "value-" + i + "-" + codec + "-" + "abc".repeat(i % 40);
            RecordHeaders headers = new RecordHeaders();
            headers.add("seq", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
            headers.add("codec", codec.getBytes(StandardCharsets.UTF_8));
            if (i % 7 == 0) {
                headers.add(new RecordHeader("nothing", (byte[]) null));
            }
            if (i % 11 == 0) {
                headers.add("dup", "first".getBytes(StandardCharsets.UTF_8));
                headers.add("dup", "second".getBytes(StandardCharsets.UTF_8));
            }
            records.add(new ProducerRecord<>(topic, partition, null, key, value, headers));
        }

        List<Sent> sent = send(ctx, extra, records);
        checkOffsets(sent, PARTITIONS, RECORDS / PARTITIONS);
        readBackExactly(ctx, topic, PARTITIONS, sent);

        // The default producer is idempotent: the broker tracks its producer id
        // and the last sequence of every partition (0..99 for 100 records).
        Map<TopicPartition, PartitionProducerState> states = get(
                ctx.admin().describeProducers(partitions(topic, PARTITIONS)).all(), "describeProducers");
        for (TopicPartition tp : partitions(topic, PARTITIONS)) {
            List<ProducerState> active = states.get(tp).activeProducers();
            eq(1, active.size(), "active producers on " + tp + " " + active);
            check(active.get(0).producerId() >= 0, "producer id on %s is %d", tp, active.get(0).producerId());
            eq(RECORDS / PARTITIONS - 1, active.get(0).lastSequence(), "last sequence on " + tp);
        }
        return RECORDS + " records over " + PARTITIONS + " explicit partitions with keys, null key/value, "
                + "headers (null value, repeated key) read back exactly; offsets contiguous; idempotent producer "
                + "id " + states.get(new TopicPartition(topic, 0)).activeProducers().get(0).producerId();
    }

    /** Keyed records without a partition: the default partitioner's murmur2 choice, in order. */
    static String keyed(Ctx ctx) {
        String topic = ctx.name("keyed");
        int parts = 4;
        ctx.createTopic(topic, parts, null);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int round = 0; round < 20; round++) {
            for (int k = 0; k < 6; k++) {
                records.add(new ProducerRecord<>(topic, "user-" + k, "round-" + round));
            }
        }
        List<Sent> sent = send(ctx, Map.of(), records);
        for (Sent s : sent) {
            int expected = Utils.toPositive(Utils.murmur2(s.record.key().getBytes(StandardCharsets.UTF_8))) % parts;
            eq(expected, s.meta.partition(), "partition of key " + s.record.key());
        }
        Map<Integer, Integer> perPartition = new HashMap<>();
        for (Sent s : sent) {
            perPartition.merge(s.meta.partition(), 1, Integer::sum);
        }
        for (Map.Entry<Integer, Integer> e : perPartition.entrySet()) {
            checkContiguous(sent, e.getKey(), e.getValue());
        }
        readBackExactly(ctx, topic, parts, sent);
        return sent.size() + " keyed records to murmur2 partitions " + new java.util.TreeMap<>(perPartition)
                + ", per-key order kept";
    }

    static List<Sent> send(Ctx ctx, Map<String, Object> extra, List<ProducerRecord<String, String>> records) {
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        try (KafkaProducer<String, String> producer = ctx.producer(extra)) {
            for (ProducerRecord<String, String> r : records) {
                futures.add(producer.send(r));
            }
            producer.flush();
            List<Sent> out = new ArrayList<>();
            for (int i = 0; i < records.size(); i++) {
                ProducerRecord<String, String> r = records.get(i);
                RecordMetadata m = get(futures.get(i), "send of record " + i);
                if (r.partition() != null) {
                    eq(r.partition().intValue(), m.partition(), "partition of record " + i);
                }
                out.add(new Sent(r, m));
            }
            return out;
        }
    }

    /** Offsets per partition are 0..perPartition-1 in the order of sending. */
    static void checkOffsets(List<Sent> sent, int parts, int perPartition) {
        for (int p = 0; p < parts; p++) {
            checkContiguous(sent, p, perPartition);
        }
    }

    static void checkContiguous(List<Sent> sent, int partition, int count) {
        long next = 0;
        for (Sent s : sent) {
            if (s.meta.partition() == partition) {
                eq(next, s.meta.offset(), "offset of the next record sent to partition " + partition);
                next++;
            }
        }
        eq((long) count, next, "records in partition " + partition);
    }

    /** Reads every partition from the beginning (no group) and compares with what was sent, record by record. */
    static void readBackExactly(Ctx ctx, String topic, int parts, List<Sent> sent) {
        Map<String, Sent> byPosition = new LinkedHashMap<>();
        for (Sent s : sent) {
            byPosition.put(s.meta.partition() + "@" + s.meta.offset(), s);
        }
        List<TopicPartition> tps = partitions(topic, parts);
        Map<String, ConsumerRecord<String, String>> got = new HashMap<>();
        try (KafkaConsumer<String, String> consumer = ctx.consumer(null, Map.of())) {
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Support.waitUntil("all " + sent.size() + " records are read back", Duration.ofSeconds(30), () -> {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    String pos = r.partition() + "@" + r.offset();
                    if (got.put(pos, r) != null) {
                        throw new CheckFailed("record at " + pos + " delivered twice");
                    }
                }
                return got.size() >= sent.size();
            }, () -> got.size() + " read");
            Map<TopicPartition, Long> end = consumer.endOffsets(tps);
            for (TopicPartition tp : tps) {
                eq(end.get(tp), consumer.position(tp), "position after reading " + tp + " (end offset)");
            }
        }
        eq(byPosition.keySet(), got.keySet(), "partition@offset of the records read");
        for (Map.Entry<String, Sent> e : byPosition.entrySet()) {
            ProducerRecord<String, String> want = e.getValue().record;
            RecordMetadata meta = e.getValue().meta;
            ConsumerRecord<String, String> r = got.get(e.getKey());
            String at = topic + "-" + e.getKey();
            eq(want.key(), r.key(), "key at " + at);
            eq(want.value(), r.value(), "value at " + at);
            eq(headerList(want.headers()), headerList(r.headers()), "headers at " + at);
            eq(meta.timestamp(), r.timestamp(), "timestamp at " + at);
            eq(org.apache.kafka.common.record.TimestampType.CREATE_TIME, r.timestampType(), "timestamp type at " + at);
        }
    }
}
