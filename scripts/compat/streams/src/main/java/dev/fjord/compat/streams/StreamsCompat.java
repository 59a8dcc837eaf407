package dev.fjord.compat.streams;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka Streams 4.4 compatibility runner: feeds a known text to the
 * exactly-once word count (WordCountApp, run as a child JVM), stops it
 * gracefully and kills it (SIGKILL, twice) partway through the input, restarts it,
 * and checks with a read_committed consumer that every word's count is exact
 * and that no update was counted twice. Checks the internal topics Streams
 * created (changelog, repartition) and their configs.
 *
 * Usage: StreamsCompat BOOTSTRAP WORK_DIR   (env COMPAT_BROKER=fjord|kafka)
 * Prints "ok: ..." per check; exits 0 only when every check passed.
 */
public final class StreamsCompat {
    private static final int PARTITIONS = 2;
    private static final long WAIT_MS = Long.getLong("compat.wait.ms", 60_000);
    /** Checks that fail against Fjord for a documented reason (FINDINGS.md, "Kafka Streams 4.4"). */
    private static final Map<String, String> KNOWN_FJORD_DIFFERENCES = new HashMap<>();

    private final String bootstrap;
    private final String broker;
    private final Path workDir;
    private final String runId;
    private final String appId;
    private final String input;
    private final String output;
    private final String changelog;
    private final String repartition;
    private final Admin admin;
    private final KafkaConsumer<String, Long> outConsumer;
    private final Map<String, List<Long>> seen = new TreeMap<>();
    private final Map<String, Long> expected = new TreeMap<>();
    private long updatesSeen;
    private long updatesExpected;
    private int lineNo;
    private int failures;
    private Process app;
    private Path appLog;
    private int appRuns;
    private int killsWithOpenTransaction;

    private StreamsCompat(String bootstrap, Path workDir) {
        this.bootstrap = bootstrap;
        this.broker = System.getenv().getOrDefault("COMPAT_BROKER", "fjord");
        this.workDir = workDir;
        this.runId = Long.toString(System.currentTimeMillis(), 36) + Integer.toString(new Random().nextInt(1 << 20), 36);
        this.appId = "fjc-wc-" + runId;
        this.input = "fjc-streams-in-" + runId;
        this.output = "fjc-streams-out-" + runId;
        this.changelog = appId + "-" + WordCountApp.STORE + "-changelog";
        this.repartition = appId + "-" + WordCountApp.REPARTITION + "-repartition";
        Properties a = new Properties();
        a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        a.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000);
        this.admin = Admin.create(a);
        this.outConsumer = new KafkaConsumer<>(readCommitted(), new StringDeserializer(), new LongDeserializer());
    }

    private Properties readCommitted() {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        return c;
    }

    // ---------------------------------------------------------------- checks

    private void ok(String what) {
        System.out.println("ok: " + what);
        System.out.flush();
    }

    /** A failed check (counted; the run goes on), or a skip when it is a documented Fjord difference. */
    private void fail(String check, String why) {
        String known = KNOWN_FJORD_DIFFERENCES.get(check);
        if (known != null && broker.equals("fjord")) {
            System.out.println("KNOWN DIFFERENCE: " + check + ": " + known + " (FINDINGS.md) -- got: " + why);
        } else {
            System.out.println("FAIL: " + check + ": " + why);
            failures++;
        }
        System.out.flush();
    }

    private static final class CheckFailed extends RuntimeException {
        CheckFailed(String message) {
            super(message);
        }
    }

    private void await(String what, long timeoutMs, BooleanSupplier done) {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!done.getAsBoolean()) {
            if (app != null && !app.isAlive()) {
                throw new CheckFailed(what + ": the application exited (status " + app.exitValue() + ") first; see " + appLog
                    + tail(appLog));
            }
            if (System.currentTimeMillis() > deadline) {
                throw new CheckFailed(what + ": not reached within " + timeoutMs + " ms");
            }
        }
    }

    // ---------------------------------------------------------------- input

    private static final String[] VOCABULARY = {
        "fjord", "kafka", "stream", "topic", "record", "offset", "broker", "commit", "abort", "marker",
        "epoch", "fence", "shard", "segment", "index", "batch", "leader", "replica", "group", "member",
        "rebalance", "changelog", "repartition", "store", "window", "joiner", "punctuate", "task",
        "thread", "producer", "consumer", "isolation", "stable", "watermark", "compaction", "retention",
        "tombstone", "header", "timestamp", "sequence",
    };
    private final Random text = new Random(20260404);

    /** Produces `lines` lines of words (Zipf-like: word i is about 1/(i+1) as frequent as the first). */
    private void produceLines(KafkaProducer<String, String> producer, int lines) {
        double[] cumulative = new double[VOCABULARY.length];
        double sum = 0;
        for (int i = 0; i < VOCABULARY.length; i++) {
            sum += 1.0 / (i + 1);
            cumulative[i] = sum;
        }
        for (int n = 0; n < lines; n++) {
            int words = 1 + text.nextInt(10);
            StringBuilder line = new StringBuilder();
            for (int w = 0; w < words; w++) {
                double r = text.nextDouble() * sum;
                int i = 0;
                while (cumulative[i] < r) {
                    i++;
                }
                if (w > 0) {
                    line.append(w % 3 == 0 ? "  " : " ");
                }
                line.append(VOCABULARY[i]);
                expected.merge(VOCABULARY[i], 1L, Long::sum);
                updatesExpected++;
            }
            producer.send(new ProducerRecord<>(input, "line-" + lineNo++, line.toString()));
        }
        producer.flush();
    }

    // ---------------------------------------------------------------- output

    /** One poll of the committed output. */
    private void pollOutput() {
        pollOutput(100);
    }

    private void pollOutput(long ms) {
        for (ConsumerRecord<String, Long> r : outConsumer.poll(Duration.ofMillis(ms))) {
            seen.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value());
            updatesSeen++;
        }
    }

    private Map<String, Long> latest() {
        Map<String, Long> m = new TreeMap<>();
        seen.forEach((k, v) -> m.put(k, v.get(v.size() - 1)));
        return m;
    }

    /** Polls until every word's latest committed count is the expected one, then compares exactly. */
    private void checkFinalCounts(String check, String what) {
        try {
            await(check, WAIT_MS, () -> {
                pollOutput();
                return latest().equals(expected) || updatesSeen > updatesExpected;
            });
        } catch (CheckFailed e) {
            fail(check, e.getMessage() + "; " + countDiff());
            return;
        }
        if (!latest().equals(expected)) {
            fail(check, updatesSeen + " committed count updates for " + updatesExpected + " input words; " + countDiff());
            return;
        }
        ok(what + ": final count of all " + expected.size() + " words exact (" + lineNo + " lines, "
            + updatesExpected + " words, " + updatesSeen + " committed updates)");
    }

    private String countDiff() {
        Map<String, Long> got = latest();
        List<String> diffs = new ArrayList<>();
        Set<String> words = new TreeSet<>(expected.keySet());
        words.addAll(got.keySet());
        for (String w : words) {
            Long e = expected.get(w);
            Long g = got.get(w);
            if (!java.util.Objects.equals(e, g)) {
                diffs.add(w + " expected " + e + " got " + g);
            }
        }
        return diffs.size() + " words differ" + (diffs.isEmpty() ? "" : ": " + String.join(", ", diffs.subList(0, Math.min(8, diffs.size()))));
    }

    /** Every word's committed output is 1, 2, ..., n: nothing counted twice, nothing lost. */
    private void checkSequences(String check) {
        List<String> bad = new ArrayList<>();
        for (Map.Entry<String, List<Long>> e : seen.entrySet()) {
            List<Long> v = e.getValue();
            for (int i = 0; i < v.size(); i++) {
                if (v.get(i) != i + 1) {
                    bad.add(e.getKey() + " update #" + (i + 1) + " is " + v.get(i) + " (around: "
                        + v.subList(Math.max(0, i - 3), Math.min(v.size(), i + 4)) + ")");
                    break;
                }
            }
        }
        if (bad.isEmpty()) {
            ok("committed output of every word is exactly 1, 2, ..., n (" + updatesSeen + " updates; no double counts across the stop and the kills)");
        } else {
            fail(check, bad.size() + " words: " + String.join("; ", bad.subList(0, Math.min(5, bad.size()))));
        }
    }

    // ---------------------------------------------------------------- the application

    private void startApp(String stateDir) throws IOException {
        appRuns++;
        appLog = workDir.resolve("app-" + appRuns + ".log");
        String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-cp", System.getProperty("java.class.path")));
        String level = System.getProperty("compat.clients.level");
        if (level != null) {
            cmd.add("-Dcompat.clients.level=" + level);
        }
        cmd.addAll(List.of(WordCountApp.class.getName(), bootstrap, appId, input, output, workDir.resolve(stateDir).toString()));
        app = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(appLog.toFile()).start();
        System.out.println("note: application run " + appRuns + " started (pid " + app.pid() + ", log " + appLog + ")");
    }

    /** Asks the application to close (it leaves the group) and returns its exit status. */
    private int stopApp() throws Exception {
        Process p = app;
        app = null;
        OutputStream stdin = p.getOutputStream();
        stdin.write("stop\n".getBytes(StandardCharsets.UTF_8));
        stdin.flush();
        stdin.close();
        if (!p.waitFor(45, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor();
            return -1;
        }
        return p.exitValue();
    }

    private void killApp() throws Exception {
        Process p = app;
        app = null;
        p.destroyForcibly(); // SIGKILL
        p.waitFor();
    }

    private static String grep(Path log, String prefix) {
        try {
            List<String> lines = Files.readAllLines(log).stream().filter(l -> l.startsWith(prefix)).collect(Collectors.toList());
            return lines.isEmpty() ? "no line \"" + prefix + "\" in " + log : String.join("; ", lines);
        } catch (IOException e) {
            return e.toString();
        }
    }

    private static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            return "\n    " + String.join("\n    ", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
        } catch (IOException e) {
            return "";
        }
    }

    // ---------------------------------------------------------------- internal topics

    private void checkInternalTopics() throws Exception {
        Set<String> names = admin.listTopics().names().get();
        Set<String> internal = names.stream().filter(n -> n.startsWith(appId + "-")).collect(Collectors.toCollection(TreeSet::new));
        Set<String> want = new TreeSet<>(List.of(changelog, repartition));
        if (internal.equals(want)) {
            ok("Streams created exactly its two internal topics: " + want);
        } else {
            fail("internal-topics", "topics of " + appId + ": " + internal + ", expected " + want);
        }
        Map<String, TopicDescription> d = admin.describeTopics(want).allTopicNames().get();
        for (String t : want) {
            TopicDescription td = d.get(t);
            int parts = td == null ? -1 : td.partitions().size();
            if (parts == PARTITIONS) {
                ok(t + " has " + PARTITIONS + " partitions (one per task)");
            } else {
                fail("internal-topic-partitions", t + " has " + parts + " partitions, expected " + PARTITIONS);
            }
        }
        // What Streams 4.4 asks for (InternalTopicConfig, RepartitionTopicConfig,
        // UnwindowedUnversionedChangelogTopicConfig): set on the topic itself.
        Map<String, Map<String, String>> requested = new LinkedHashMap<>();
        requested.put(repartition, new TreeMap<>(Map.of("cleanup.policy", "delete", "segment.bytes", "52428800",
            "retention.ms", "-1", "message.timestamp.type", "CreateTime")));
        requested.put(changelog, new TreeMap<>(Map.of("cleanup.policy", "compact", "message.timestamp.type", "CreateTime")));
        Map<ConfigResource, Config> configs = admin.describeConfigs(requested.keySet().stream()
            .map(t -> new ConfigResource(ConfigResource.Type.TOPIC, t)).collect(Collectors.toList())).all().get();
        for (Map.Entry<String, Map<String, String>> e : requested.entrySet()) {
            Config c = configs.get(new ConfigResource(ConfigResource.Type.TOPIC, e.getKey()));
            List<String> wrong = new ArrayList<>();
            for (Map.Entry<String, String> kv : e.getValue().entrySet()) {
                ConfigEntry ce = c.get(kv.getKey());
                if (ce == null) {
                    wrong.add(kv.getKey() + " missing");
                } else if (!kv.getValue().equals(ce.value()) || ce.source() != ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG) {
                    wrong.add(kv.getKey() + "=" + ce.value() + " (" + ce.source() + "), requested " + kv.getValue());
                }
            }
            String kind = e.getKey().equals(changelog) ? "changelog" : "repartition";
            if (wrong.isEmpty()) {
                ok(kind + " topic has the configs Streams requested, set on the topic: " + e.getValue());
            } else {
                fail(kind + "-topic-configs", e.getKey() + ": " + String.join(", ", wrong));
            }
        }
    }

    /** How many output records only a read_uncommitted consumer sees: the aborted transactions' (the kill's). */
    private void noteAborted(List<TopicPartition> parts) {
        Properties p = readCommitted();
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.assign(parts);
            c.seekToBeginning(parts);
            Map<TopicPartition, Long> end = c.endOffsets(parts);
            long[] n = {0};
            await("output read to its end (read_uncommitted)", WAIT_MS, () -> {
                n[0] += c.poll(Duration.ofMillis(100)).count();
                return parts.stream().allMatch(tp -> c.position(tp) >= end.get(tp));
            });
            long aborted = n[0] - updatesSeen;
            String counts = " (read_uncommitted " + n[0] + " records, read_committed " + updatesSeen + ")";
            if (killsWithOpenTransaction > 0 && aborted > 0) {
                ok("the killed instances' open transactions were aborted: " + aborted + " output records only read_uncommitted sees" + counts);
            } else {
                System.out.println("note: " + aborted + " output records of aborted transactions" + counts
                    + (killsWithOpenTransaction > 0 ? "; the open transactions seen at the kills committed first" : ""));
            }
        }
    }

    /** The changelog's latest value per word (read_committed) is its final count. */
    private void checkChangelog() {
        try (KafkaConsumer<String, byte[]> c = new KafkaConsumer<>(readCommitted(), new StringDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) {
                tps.add(new TopicPartition(changelog, p));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            Map<String, Long> last = new TreeMap<>();
            long[] records = {0};
            try {
                await("changelog read to its end", WAIT_MS, () -> {
                    for (ConsumerRecord<String, byte[]> r : c.poll(Duration.ofMillis(100))) {
                        records[0]++;
                        if (r.value() == null) {
                            last.remove(r.key());
                        } else {
                            last.put(r.key(), new LongDeserializer().deserialize(changelog, r.value()));
                        }
                    }
                    return tps.stream().allMatch(tp -> c.position(tp) >= end.get(tp));
                });
            } catch (CheckFailed e) {
                fail("changelog-contents", e.getMessage());
                return;
            }
            if (last.equals(expected)) {
                ok("changelog holds the final count of every word (" + records[0] + " records read, read_committed)");
            } else {
                fail("changelog-contents", "latest changelog values " + last + " differ from expected " + expected);
            }
        }
    }

    /** After the final clean stop the group's committed offsets are at the end of its source topics. */
    private void checkGroupOffsets() throws Exception {
        Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(appId).partitionsToOffsetAndMetadata().get();
        List<TopicPartition> sources = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) {
            sources.add(new TopicPartition(input, p));
            sources.add(new TopicPartition(repartition, p));
        }
        Map<TopicPartition, Long> end;
        try (KafkaConsumer<String, byte[]> c = new KafkaConsumer<>(readCommitted(), new StringDeserializer(), new ByteArrayDeserializer())) {
            end = c.endOffsets(sources);
        }
        List<String> wrong = new ArrayList<>();
        for (TopicPartition tp : sources) {
            OffsetAndMetadata o = committed.get(tp);
            long got = o == null ? -1 : o.offset();
            if (got != end.get(tp)) {
                wrong.add(tp + " committed " + got + " end " + end.get(tp));
            }
        }
        // Streams purges what it has consumed from its repartition topic.
        Map<TopicPartition, Long> start;
        List<TopicPartition> rep = sources.stream().filter(tp -> tp.topic().equals(repartition)).collect(Collectors.toList());
        try (KafkaConsumer<String, byte[]> c = new KafkaConsumer<>(readCommitted(), new StringDeserializer(), new ByteArrayDeserializer())) {
            start = c.beginningOffsets(rep);
        }
        if (rep.stream().allMatch(tp -> start.get(tp) > 0 && start.get(tp) <= end.get(tp))) {
            ok("Streams purged consumed repartition records (DeleteRecords): log start offsets " + rep.stream()
                .map(tp -> tp.partition() + ":" + start.get(tp) + "/" + end.get(tp)).collect(Collectors.joining(", ")) + " (start/end)");
        } else {
            fail("repartition-purge", "repartition log start offsets " + start + ", end offsets " + end);
        }
        if (wrong.isEmpty()) {
            ok("group " + appId + " committed offsets are at the end of the input and repartition topics " + new TreeMap<>(end.entrySet().stream()
                .collect(Collectors.toMap(e -> e.getKey().toString(), Map.Entry::getValue))));
        } else {
            fail("group-offsets", String.join(", ", wrong));
        }
    }

    /**
     * Produces `lines`, kills the application (SIGKILL) as soon as the output
     * has an open transaction with records on the broker (its high watermark
     * above its last stable offset), then produces `more` lines.
     */
    private void killWithOpenTransaction(KafkaProducer<String, String> producer, List<TopicPartition> outParts,
                                         int lines, int more, String what) throws Exception {
        produceLines(producer, lines);
        // Consumers of their own: a broker answers a connection's requests in
        // order, so a ListOffsets would wait behind outConsumer's fetch.
        Properties up = readCommitted();
        up.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
        boolean[] open = {false};
        try (KafkaConsumer<byte[], byte[]> hw = new KafkaConsumer<>(up, new ByteArrayDeserializer(), new ByteArrayDeserializer());
             KafkaConsumer<byte[], byte[]> lso = new KafkaConsumer<>(readCommitted(), new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            await("an open transaction (or all input processed) before the kill", WAIT_MS, () -> {
                pollOutput(5);
                Map<TopicPartition, Long> high = hw.endOffsets(outParts);
                Map<TopicPartition, Long> stable = lso.endOffsets(outParts);
                open[0] = outParts.stream().anyMatch(tp -> high.get(tp) > stable.get(tp));
                return open[0] || updatesSeen >= updatesExpected;
            });
        }
        if (open[0]) {
            killsWithOpenTransaction++;
        }
        long atKill = updatesSeen;
        long producedAtKill = updatesExpected;
        killApp();
        produceLines(producer, more);
        ok("SIGKILL partway through the input (" + atKill + " count updates committed when killed, "
            + producedAtKill + " of " + updatesExpected + " input words produced"
            + (open[0] ? ", with a transaction open" : ", no open transaction seen") + ")" + what);
    }

    // ---------------------------------------------------------------- the run

    private void run() throws Exception {
        System.out.println("note: broker " + broker + " at " + bootstrap + ", application.id " + appId + ", work dir " + workDir);
        admin.createTopics(List.of(new NewTopic(input, Optional.of(PARTITIONS), Optional.empty()),
            new NewTopic(output, Optional.of(PARTITIONS), Optional.empty()))).all().get();
        ok("created " + input + " and " + output + " (" + PARTITIONS + " partitions each)");

        List<TopicPartition> outParts = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) {
            outParts.add(new TopicPartition(output, p));
        }
        outConsumer.assign(outParts);
        outConsumer.seekToBeginning(outParts);

        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        pp.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
            // 1. A clean run.
            startApp("state");
            produceLines(producer, 800);
            checkFinalCounts("clean-run-counts", "clean run");

            // 2. Graceful stop partway: more input, stop once the application
            //    is working through it, the rest arrives while it is down.
            long before = updatesSeen;
            produceLines(producer, 1500);
            long target = updatesExpected;
            await("progress before the graceful stop", WAIT_MS, () -> {
                pollOutput();
                return updatesSeen > before;
            });
            long atStop = updatesSeen;
            int status = stopApp();
            produceLines(producer, 700);
            if (status == 0) {
                ok("graceful stop partway through the input (" + atStop + " count updates committed when asked to stop, "
                    + target + " of " + updatesExpected + " input words produced): application closed and exited 0");
            } else {
                fail("graceful-stop", "the application exited with status " + status + "; see " + appLog + tail(appLog));
            }
            startApp("state");
            checkFinalCounts("restart-after-stop-counts", "restart after the graceful stop");

            // 3. SIGKILL partway: the killed instance's open transaction must
            //    not count; the restarted one (same state directory, so the
            //    same process id and transactional.id) fences it at once and
            //    restores its store from the changelog.
            killWithOpenTransaction(producer, outParts, 2000, 700, "");
            startApp("state");
            checkFinalCounts("restart-after-kill-counts", "restart after the SIGKILL");
            System.out.println("note: after the kill, " + grep(appLog, "app: restored"));

            // 4. SIGKILL again, and the application comes back as another
            //    instance (empty state directory: a new process id, so a new
            //    transactional.id). Nothing fences the killed transaction: the
            //    coordinator aborts it at its timeout; until then its offsets
            //    are unstable (KIP-447) and the new instance waits.
            killWithOpenTransaction(producer, outParts, 1500, 500, " (the next instance has a new state directory)");
            startApp("state-2");
            checkFinalCounts("new-instance-after-kill-counts", "a new instance after the second SIGKILL");
            System.out.println("note: the new instance " + grep(appLog, "app: restored"));

            status = stopApp();
            if (status == 0) {
                ok("final graceful stop: application closed and exited 0");
            } else {
                fail("final-stop", "the application exited with status " + status + "; see " + appLog + tail(appLog));
            }
        }
        // Everything committed has been read once the consumer is at the (now stable) end.
        Map<TopicPartition, Long> end = outConsumer.endOffsets(outParts);
        await("output read to its end", WAIT_MS, () -> {
            pollOutput();
            return outParts.stream().allMatch(tp -> outConsumer.position(tp) >= end.get(tp));
        });
        checkSequences("no-double-counts");
        noteAborted(outParts);
        checkChangelog();
        checkInternalTopics();
        checkGroupOffsets();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: StreamsCompat BOOTSTRAP WORK_DIR");
            System.exit(2);
        }
        Path work = Paths.get(args[1]);
        Files.createDirectories(work);
        StreamsCompat c = new StreamsCompat(args[0], work);
        int rc;
        try {
            c.run();
            rc = c.failures == 0 ? 0 : 1;
        } catch (CheckFailed e) {
            System.out.println("FAIL: " + e.getMessage());
            rc = 1;
        } catch (Exception e) {
            System.out.println("FAIL: " + e);
            e.printStackTrace(System.out);
            rc = 1;
        } finally {
            if (c.app != null) {
                c.app.destroyForcibly().waitFor();
            }
            c.outConsumer.close(Duration.ofSeconds(5));
            c.admin.close(Duration.ofSeconds(5));
        }
        System.out.println(rc == 0 ? "streams: every check passed" : "streams: " + Math.max(1, c.failures) + " check(s) failed");
        System.out.flush();
        System.exit(rc);
    }
}
