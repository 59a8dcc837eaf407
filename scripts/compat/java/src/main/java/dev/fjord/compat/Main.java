package dev.fjord.compat;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import dev.fjord.compat.Support.CheckFailed;
import dev.fjord.compat.Support.Ctx;

/**
 * The Java client 4.4 compatibility runner: runs named checks against the
 * broker at BOOTSTRAP and prints one `ok: NAME: …` or `FAIL: NAME: …` line per
 * check. Exit status 0 only when every check passed.
 *
 * Usage: java -jar java-client-compat.jar BOOTSTRAP [CHECK...]
 *        java -jar java-client-compat.jar --secure    SCRAM over SASL_SSL and mutual TLS
 *                               (SecureChecks; the listeners come from the environment)
 *        java -jar java-client-compat.jar --oauth     OAUTHBEARER with token files
 *                               (SecureChecks.runOAuth; the listener and files from the environment)
 *   COMPAT_BROKER=fjord|kafka   which broker this is (known Fjord differences
 *                               are skipped, loudly, only for fjord)
 *   COMPAT_JAVA_BUDGET=270      seconds for all checks; later ones are not run
 *   COMPAT_RUN_KNOWN=1          run the checks listed as known differences too
 */
public final class Main {
    private Main() {}

    interface Check {
        /** Runs the check; returns a one-line summary of what was verified. */
        String run(Ctx ctx) throws Exception;
    }

    private static final Map<String, Check> CHECKS = new LinkedHashMap<>();

    static {
        CHECKS.put("produce-none", ctx -> ProducerChecks.codec(ctx, "none"));
        CHECKS.put("produce-gzip", ctx -> ProducerChecks.codec(ctx, "gzip"));
        CHECKS.put("produce-snappy", ctx -> ProducerChecks.codec(ctx, "snappy"));
        CHECKS.put("produce-lz4", ctx -> ProducerChecks.codec(ctx, "lz4"));
        CHECKS.put("produce-zstd", ctx -> ProducerChecks.codec(ctx, "zstd"));
        CHECKS.put("produce-keyed", ProducerChecks::keyed);
        CHECKS.put("group-range", ctx -> GroupChecks.assignor(ctx, "range"));
        CHECKS.put("group-roundrobin", ctx -> GroupChecks.assignor(ctx, "roundrobin"));
        CHECKS.put("group-sticky", ctx -> GroupChecks.assignor(ctx, "sticky"));
        CHECKS.put("group-cooperative-sticky", ctx -> GroupChecks.assignor(ctx, "cooperative-sticky"));
        CHECKS.put("group-consumer-protocol", ctx -> GroupChecks.assignor(ctx, "consumer-uniform"));
        CHECKS.put("group-consumer-range", ConsumerProtocolChecks::range);
        CHECKS.put("group-consumer-static", ConsumerProtocolChecks::staticMembers);
        CHECKS.put("group-consumer-regex", ConsumerProtocolChecks::regex);
        CHECKS.put("group-consumer-revocation-under-load", ConsumerProtocolChecks::revocationUnderLoad);
        CHECKS.put("group-consumer-unknown-assignor", ConsumerProtocolChecks::unknownAssignor);
        CHECKS.put("group-consumer-migration", ConsumerProtocolChecks::migration);
        CHECKS.put("group-static-rejoin-leader", ctx -> GroupChecks.staticMembership(ctx, true));
        CHECKS.put("group-static-rejoin-follower", ctx -> GroupChecks.staticMembership(ctx, false));
        CHECKS.put("share-implicit", ShareChecks::implicit);
        CHECKS.put("share-explicit", ShareChecks::explicit);
        CHECKS.put("share-split", ShareChecks::split);
        CHECKS.put("share-groups-apart", ShareChecks::groupsApart);
        CHECKS.put("share-lock-timeout", ShareChecks::lockTimeout);
        CHECKS.put("offsets-commit", OffsetChecks::commit);
        CHECKS.put("offsets-seek", OffsetChecks::seek);
        CHECKS.put("offsets-lookup", OffsetChecks::lookup);
        CHECKS.put("txn-commit-abort", TxnChecks::commitAbort);
        CHECKS.put("txn-consume-transform-produce", TxnChecks::consumeTransformProduce);
        CHECKS.put("txn-fencing", TxnChecks::fencing);
        CHECKS.put("txn-v2", TxnChecks::transactionsV2);
        CHECKS.put("admin-topics", AdminChecks::topics);
        CHECKS.put("admin-describe-topics-by-id", AdminChecks::describeTopicsById);
        CHECKS.put("admin-configs", AdminChecks::configs);
        CHECKS.put("admin-list-offsets", AdminChecks::listOffsets);
        CHECKS.put("admin-delete-records", AdminChecks::deleteRecords);
        CHECKS.put("admin-groups", AdminChecks::groups);
        CHECKS.put("admin-producers-transactions", AdminChecks::producersAndTransactions);
        CHECKS.put("admin-cluster-log-dirs", AdminChecks::clusterAndLogDirs);
        CHECKS.put("admin-delete-topics", AdminChecks::deleteTopics);
    }

    /**
     * Checks where Fjord answers differently from Apache Kafka 4.4: skipped
     * against Fjord only, each with its entry in scripts/compat/FINDINGS.md
     * ("Java client 4.4"). Remove an entry once Fjord behaves as Kafka.
     */
    private static final Map<String, String> KNOWN_FJORD_DIFFERENCES = new LinkedHashMap<>();

    static {
    }

    /** The kafka-clients version, from the properties file in its jar. */
    static String clientVersion() {
        try (java.io.InputStream in = org.apache.kafka.clients.producer.KafkaProducer.class
                .getResourceAsStream("/kafka/kafka-version.properties")) {
            java.util.Properties p = new java.util.Properties();
            p.load(in);
            return p.getProperty("version", "unknown");
        } catch (java.io.IOException | NullPointerException e) {
            return "unknown";
        }
    }

    public static void main(String[] args) throws java.io.IOException {
        if (args.length < 1) {
            System.err.println("usage: java -jar java-client-compat.jar BOOTSTRAP [CHECK...]; checks: " + CHECKS.keySet());
            System.exit(2);
        }
        if (args[0].equals("--list")) {
            CHECKS.keySet().forEach(System.out::println);
            return;
        }
        if (args[0].equals("--secure") || args[0].equals("--oauth")) {
            boolean oauth = args[0].equals("--oauth");
            String broker = System.getenv().getOrDefault("COMPAT_BROKER", "fjord");
            String runId = UUID.randomUUID().toString().substring(0, 8);
            System.out.println("java-client: Kafka Java client " + clientVersion() + " against " + broker
                    + (oauth ? ", OAUTHBEARER listener" : ", secured listeners") + " (run " + runId + ")");
            System.out.flush();
            System.exit(oauth ? SecureChecks.runOAuth(broker, runId) : SecureChecks.run(broker, runId));
        }
        String bootstrap = args[0];
        List<String> selected = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            if (!CHECKS.containsKey(args[i])) {
                System.err.println("unknown check: " + args[i] + " (known: " + CHECKS.keySet() + ")");
                System.exit(2);
            }
            selected.add(args[i]);
        }
        if (selected.isEmpty()) {
            selected.addAll(CHECKS.keySet());
        }
        String broker = System.getenv().getOrDefault("COMPAT_BROKER", "fjord");
        boolean runKnown = "1".equals(System.getenv("COMPAT_RUN_KNOWN"));
        long budgetMs = Long.parseLong(System.getenv().getOrDefault("COMPAT_JAVA_BUDGET", "270")) * 1000;
        String runId = UUID.randomUUID().toString().substring(0, 8);
        System.out.println("java-client: Kafka Java client " + clientVersion()
                + " against " + broker + " at " + bootstrap + " (run " + runId + ")");

        List<String> failed = new ArrayList<>();
        int passed = 0;
        int skipped = 0;
        long started = System.nanoTime();
        try (Ctx ctx = new Ctx(bootstrap, broker, runId)) {
            for (String name : selected) {
                if ("fjord".equals(broker) && KNOWN_FJORD_DIFFERENCES.containsKey(name) && !runKnown) {
                    System.out.println("KNOWN DIFFERENCE: " + name + ": " + KNOWN_FJORD_DIFFERENCES.get(name)
                            + " (FINDINGS.md)");
                    skipped++;
                    continue;
                }
                long usedMs = (System.nanoTime() - started) / 1_000_000;
                if (usedMs > budgetMs) {
                    System.out.println("FAIL: " + name + ": not run, the " + budgetMs / 1000 + "s budget is used up");
                    failed.add(name);
                    continue;
                }
                long t0 = System.nanoTime();
                try {
                    String summary = CHECKS.get(name).run(ctx);
                    System.out.printf("ok: %s: %s (%.1fs)%n", name, summary, (System.nanoTime() - t0) / 1e9);
                    passed++;
                } catch (CheckFailed e) {
                    System.out.printf("FAIL: %s: %s (%.1fs)%n", name, e.getMessage(), (System.nanoTime() - t0) / 1e9);
                    failed.add(name);
                } catch (Exception e) {
                    System.out.printf("FAIL: %s: unexpected %s (%.1fs)%n", name, Support.describe(e),
                            (System.nanoTime() - t0) / 1e9);
                    StackTraceElement[] st = e.getStackTrace();
                    for (int i = 0; i < Math.min(st.length, 8); i++) {
                        System.out.println("    at " + st[i]);
                    }
                    failed.add(name);
                }
                System.out.flush();
            }
        }
        System.out.printf("java-client: %d passed, %d failed, %d known differences skipped (%.1fs)%n", passed,
                failed.size(), skipped, (System.nanoTime() - started) / 1e9);
        if (!failed.isEmpty()) {
            System.out.println("java-client: failed: " + String.join(", ", failed));
        }
        System.out.flush();
        // Client threads (a consumer left behind by a failed check) must not keep the JVM alive.
        System.exit(failed.isEmpty() ? 0 : 1);
    }
}
