package dev.fjord.compat.streams;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.Stores;

/**
 * The application under test: an exactly-once word count.
 *
 * input (key: line id, value: a line of words)
 *   -> flatMapValues(split into words)
 *   -> groupBy(word)            repartition topic  APP-words-repartition
 *   -> count()                  persistent (RocksDB) store "counts", changelog APP-counts-changelog
 *   -> output (key: word, value: count as a long)
 *
 * Record caching is off, so every input word yields one count update: the
 * committed output of a word is 1, 2, ..., n.
 *
 * Usage: WordCountApp BOOTSTRAP APPLICATION_ID INPUT_TOPIC OUTPUT_TOPIC STATE_DIR
 * It runs until it reads "stop" (or end of file) on standard input, then
 * closes (leaving the group) and exits 0, or 1 when the close timed out or
 * the application had failed. It prints one "app: ..." line per state change.
 */
public final class WordCountApp {
    static final String STORE = "counts";
    static final String REPARTITION = "words";

    private WordCountApp() {}

    static Topology topology(String input, String output) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.trim().split("\\s+")))
            .filter((lineId, word) -> !word.isEmpty())
            .groupBy((lineId, word) -> word, Grouped.with(REPARTITION, Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long>as(Stores.persistentTimestampedKeyValueStore(STORE))
                .withKeySerde(Serdes.String())
                .withValueSerde(Serdes.Long())
                .withCachingDisabled())
            .toStream()
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: WordCountApp BOOTSTRAP APPLICATION_ID INPUT_TOPIC OUTPUT_TOPIC STATE_DIR");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        // Streams deletes consumed repartition records (DeleteRecords) this often.
        props.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 1000);
        // Long enough that the runner can kill the application with a transaction open.
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 1000);
        // A killed instance's membership ends after this long; Kafka's
        // group.min.session.timeout.ms (6000) is the floor.
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1500);

        Topology topology = topology(args[2], args[3]);
        KafkaStreams streams = new KafkaStreams(topology, props);
        AtomicBoolean failed = new AtomicBoolean(false);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.ERROR) {
                failed.set(true);
            }
            System.out.println("app: state " + before + " -> " + now);
            System.out.flush();
        });
        streams.setUncaughtExceptionHandler(e -> {
            failed.set(true);
            System.out.println("app: uncaught exception: " + e);
            e.printStackTrace(System.out);
            System.out.flush();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String store, long start, long end) {}

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {}

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long total) {
                System.out.println("app: restored " + total + " records of store " + store + " from " + tp);
                System.out.flush();
            }
        });
        System.out.println("app: topology " + topology.describe().toString().replace('\n', ' '));
        streams.start();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.trim().equals("stop")) {
            // Only "stop" means anything.
        }
        System.out.println("app: closing");
        System.out.flush();
        boolean closed = streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
            .withTimeout(Duration.ofSeconds(30)));
        System.out.println("app: closed=" + closed + " failed=" + failed.get() + " state=" + streams.state());
        System.out.flush();
        System.exit(closed && !failed.get() ? 0 : 1);
    }
}
