// The client side of scripts/bench-rebalance: one JVM, one KafkaConsumer
// thread per group member and one producer thread, against the broker at
// bootstrap.servers. For each protocol named it creates a fresh topic, lets
// MEMBERS consumers settle, then measures
//   join:  from an extra member's creation until every partition has
//          delivered, to its owner in a balanced assignment, a record
//          produced after the join;
//   leave: the same after one of the first members closes (leaves);
// and the records delivered twice in each window (each record carries its
// partition's sequence number). Finally the producer stops, the group drains
// the topic and every sequence number must have been delivered at least once.
// Writes one JSON object per protocol (a JSON array) to the output file.
//
// usage: java -cp <kafka-clients classpath> RebalanceBench.java KEY=VALUE...
//   bootstrap (required)  out (required: JSON file)
//   protocols (eager,cooperative,consumer)  partitions (100)  members (10)
//   rate (1000: records/s over all partitions)  warmup.ms (2000)
//   phase.timeout.ms (120000)  heartbeat.interval.ms / session.timeout.ms
//   (classic members only; unset: the client's defaults)
import java.io.FileWriter;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class RebalanceBench {
    static Map<String, String> args = new HashMap<>();

    static String arg(String k, String dflt) {
        String v = args.get(k);
        return v == null ? dflt : v;
    }

    static int intArg(String k, int dflt) {
        return Integer.parseInt(arg(k, Integer.toString(dflt)));
    }

    /** Everything the consumer threads report, under one lock. */
    static final class State {
        final int partitions;
        final BitSet[] seen;
        final Map<Integer, Set<Integer>> assigned = new HashMap<>();
        long duplicates;
        long delivered;
        // The measured phase: members expected in the final assignment, the
        // producer's per-partition sequence at its start, and per partition
        // when a record produced after that start reached its current owner
        // (-1: not yet, or the partition moved since).
        Set<Integer> active = new HashSet<>();
        long[] snapshot;
        long[] ready;
        long phaseStart;

        State(int partitions) {
            this.partitions = partitions;
            seen = new BitSet[partitions];
            for (int p = 0; p < partitions; p++) seen[p] = new BitSet();
        }

        synchronized void deliver(int member, int p, long seq, long now) {
            delivered++;
            if (seen[p].get((int) seq)) duplicates++;
            else seen[p].set((int) seq);
            if (ready != null && ready[p] < 0 && seq >= snapshot[p]
                    && assigned.getOrDefault(member, Set.of()).contains(p)) {
                ready[p] = now;
            }
        }

        synchronized long duplicatesNow() {
            return duplicates;
        }

        synchronized void assign(int member, Collection<TopicPartition> tps) {
            Set<Integer> s = assigned.computeIfAbsent(member, k -> new HashSet<>());
            for (TopicPartition tp : tps) {
                s.add(tp.partition());
                if (ready != null) ready[tp.partition()] = -1;
            }
        }

        synchronized void revoke(int member, Collection<TopicPartition> tps) {
            Set<Integer> s = assigned.computeIfAbsent(member, k -> new HashSet<>());
            for (TopicPartition tp : tps) {
                s.remove(tp.partition());
                if (ready != null) ready[tp.partition()] = -1;
            }
        }

        synchronized void startPhase(Set<Integer> members, AtomicLongArray nextSeq) {
            active = new HashSet<>(members);
            snapshot = new long[partitions];
            ready = new long[partitions];
            for (int p = 0; p < partitions; p++) {
                snapshot[p] = nextSeq.get(p);
                ready[p] = -1;
            }
            phaseStart = System.nanoTime();
        }

        /** Balanced: the active members hold every partition once, each
         * floor(P/N) or ceil(P/N) of them (what range, cooperative-sticky
         * and uniform give one topic). */
        synchronized boolean balanced() {
            int n = active.size(), lo = partitions / n, hi = (partitions + n - 1) / n;
            BitSet all = new BitSet();
            int sum = 0;
            for (int m : active) {
                Set<Integer> s = assigned.getOrDefault(m, Set.of());
                if (s.size() < lo || s.size() > hi) return false;
                sum += s.size();
                for (int p : s) all.set(p);
            }
            return sum == partitions && all.cardinality() == partitions;
        }

        /** ms from the phase start until the last partition was ready, or -1. */
        synchronized double settledMs() {
            if (!balanced()) return -1;
            long last = phaseStart;
            for (long r : ready) {
                if (r < 0) return -1;
                last = Math.max(last, r);
            }
            return (last - phaseStart) / 1e6;
        }
    }

    static final class Member implements Runnable {
        final int id;
        final Properties props;
        final String topic;
        final State state;
        final AtomicBoolean stop = new AtomicBoolean();
        volatile Throwable error;
        volatile boolean closed;

        Member(int id, Properties props, String topic, State state) {
            this.id = id;
            this.props = props;
            this.topic = topic;
            this.state = state;
        }

        public void run() {
            try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(props)) {
                c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                    public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                        state.revoke(id, tps);
                    }

                    public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                        state.assign(id, tps);
                    }

                    public void onPartitionsLost(Collection<TopicPartition> tps) {
                        state.revoke(id, tps);
                    }
                });
                // A short poll: a member told to leave closes within ~10 ms
                // (wakeup() could race with close()'s auto-commit).
                while (!stop.get()) {
                    ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(10));
                    long now = System.nanoTime();
                    for (ConsumerRecord<byte[], byte[]> r : recs) {
                        state.deliver(id, r.partition(), ByteBuffer.wrap(r.value()).getLong(), now);
                    }
                }
            } catch (Throwable t) {
                error = t;
            } finally {
                closed = true;
            }
        }
    }

    static Properties consumerProps(String protocol, String group) {
        Properties p = new Properties();
        p.put("bootstrap.servers", arg("bootstrap", null));
        p.put("group.id", group);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("auto.offset.reset", "earliest");
        switch (protocol) {
            case "eager", "cooperative" -> {
                p.put("group.protocol", "classic");
                p.put("partition.assignment.strategy", protocol.equals("eager")
                        ? RangeAssignor.class.getName() : CooperativeStickyAssignor.class.getName());
                for (String k : List.of("heartbeat.interval.ms", "session.timeout.ms")) {
                    if (args.containsKey(k)) p.put(k, args.get(k));
                }
            }
            case "consumer" -> {
                p.put("group.protocol", "consumer");
                p.put("group.remote.assignor", "uniform");
            }
            default -> throw new IllegalArgumentException("unknown protocol " + protocol);
        }
        return p;
    }

    static String assignor(String protocol) {
        return switch (protocol) {
            case "eager" -> "range";
            case "cooperative" -> "cooperative-sticky";
            default -> "uniform";
        };
    }

    /** Waits for the phase to settle; returns its settle time in ms, or -1 on timeout. */
    static double await(State st, List<Member> members, long timeoutMs) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (System.nanoTime() < deadline) {
            double ms = st.settledMs();
            if (ms >= 0) return ms;
            for (Member m : members) {
                if (m.error != null) throw new RuntimeException("member " + m.id + " failed", m.error);
            }
            Thread.sleep(5);
        }
        return -1;
    }

    static Map<String, Object> runProtocol(String protocol, String run) throws Exception {
        int partitions = intArg("partitions", 100), n = intArg("members", 10);
        int rate = intArg("rate", 1000);
        long timeout = intArg("phase.timeout.ms", 120000);
        String topic = "rebalance-" + protocol + "-" + run, group = "g-" + topic;
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("protocol", protocol);
        out.put("assignor", assignor(protocol));
        out.put("partitions", partitions);
        out.put("members", n);
        out.put("rate", rate);

        Properties ap = new Properties();
        ap.put("bootstrap.servers", arg("bootstrap", null));
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
        }

        State st = new State(partitions);
        AtomicLongArray nextSeq = new AtomicLongArray(partitions);
        AtomicBoolean stopProducer = new AtomicBoolean();
        Properties pp = new Properties();
        pp.put("bootstrap.servers", arg("bootstrap", null));
        pp.put("key.serializer", ByteArraySerializer.class.getName());
        pp.put("value.serializer", ByteArraySerializer.class.getName());
        pp.put("acks", "1");
        pp.put("linger.ms", "1");
        Throwable[] producerError = new Throwable[1];
        Thread producer = new Thread(() -> {
            try (KafkaProducer<byte[], byte[]> prod = new KafkaProducer<>(pp)) {
                long start = System.nanoTime(), k = 0;
                long intervalNs = 1_000_000_000L / rate;
                while (!stopProducer.get()) {
                    long due = start + k * intervalNs, wait = due - System.nanoTime();
                    if (wait > 0) Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
                    int p = (int) (k % partitions);
                    long seq = nextSeq.get(p);
                    byte[] v = ByteBuffer.allocate(16).putLong(seq).putLong(System.currentTimeMillis()).array();
                    prod.send(new ProducerRecord<>(topic, p, null, v), (md, e) -> {
                        if (e != null) producerError[0] = e;
                    });
                    nextSeq.set(p, seq + 1);
                    k++;
                }
                prod.flush();
            } catch (Throwable t) {
                producerError[0] = t;
            }
        }, "producer");
        producer.start();

        List<Member> members = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        Set<Integer> ids = new HashSet<>();
        for (int i = 0; i < n; i++) ids.add(i);
        st.startPhase(ids, nextSeq);
        for (int i = 0; i < n; i++) {
            Member m = new Member(i, consumerProps(protocol, group), topic, st);
            members.add(m);
            Thread t = new Thread(m, "member-" + i);
            threads.add(t);
            t.start();
        }
        double initial = await(st, members, timeout);
        out.put("initial_settle_ms", initial < 0 ? null : initial);
        boolean ok = initial >= 0;
        Thread.sleep(intArg("warmup.ms", 2000));

        // The join: member n joins the n settled members.
        long dup0 = st.duplicatesNow();
        ids.add(n);
        st.startPhase(ids, nextSeq);
        Member joiner = new Member(n, consumerProps(protocol, group), topic, st);
        members.add(joiner);
        Thread jt = new Thread(joiner, "member-" + n);
        threads.add(jt);
        jt.start();
        double join = ok ? await(st, members, timeout) : -1;
        ok &= join >= 0;
        Thread.sleep(intArg("warmup.ms", 2000));
        long dup1 = st.duplicatesNow();

        // The leave: member 0 closes.
        ids.remove(0);
        st.startPhase(ids, nextSeq);
        members.get(0).stop.set(true);
        threads.get(0).join(timeout);
        synchronized (st) {
            st.assigned.remove(0);
        }
        double leave = ok ? await(st, members.subList(1, members.size()), timeout) : -1;
        ok &= leave >= 0;
        Thread.sleep(intArg("warmup.ms", 2000));
        long dup2 = st.duplicatesNow();

        // Drain: every record produced must have been delivered.
        stopProducer.set(true);
        producer.join();
        long deadline = System.nanoTime() + timeout * 1_000_000L;
        long missing;
        int unconsumed;
        while (true) {
            missing = 0;
            unconsumed = 0;
            synchronized (st) {
                for (int p = 0; p < partitions; p++) {
                    int want = (int) nextSeq.get(p);
                    int got = st.seen[p].get(0, want).cardinality();
                    missing += want - got;
                    if (got == 0) unconsumed++;
                }
            }
            if (missing == 0 || System.nanoTime() > deadline) break;
            Thread.sleep(20);
        }
        long produced = 0;
        for (int p = 0; p < partitions; p++) produced += nextSeq.get(p);
        for (Member m : members) m.stop.set(true);
        for (Thread t : threads) t.join(timeout);

        out.put("join", Map.of("settle_ms", join < 0 ? "null" : join, "duplicates", dup1 - dup0));
        out.put("leave", Map.of("settle_ms", leave < 0 ? "null" : leave, "duplicates", dup2 - dup1));
        out.put("records_produced", produced);
        synchronized (st) {
            out.put("records_delivered", st.delivered);
            out.put("duplicates_total", st.duplicates);
        }
        out.put("missing", missing);
        out.put("partitions_unconsumed", unconsumed);
        List<String> errors = new ArrayList<>();
        if (producerError[0] != null) errors.add("producer: " + producerError[0]);
        for (Member m : members) {
            if (m.error != null) errors.add("member " + m.id + ": " + m.error);
        }
        if (initial < 0) errors.add("the first " + n + " members did not settle in " + timeout + " ms");
        if (join < 0) errors.add("the join did not settle in " + timeout + " ms");
        if (leave < 0) errors.add("the leave did not settle in " + timeout + " ms");
        if (missing != 0) errors.add(missing + " records never delivered");
        out.put("errors", errors);
        out.put("ok", errors.isEmpty());
        return out;
    }

    static String json(Object o) {
        if (o == null || "null".equals(o)) return "null";
        if (o instanceof String s) {
            return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n") + "\"";
        }
        if (o instanceof Double d) return String.format(Locale.ROOT, "%.1f", d);
        if (o instanceof Number || o instanceof Boolean) return o.toString();
        if (o instanceof Map<?, ?> m) {
            StringJoiner j = new StringJoiner(", ", "{", "}");
            m.forEach((k, v) -> j.add(json(k.toString()) + ": " + json(v)));
            return j.toString();
        }
        if (o instanceof Collection<?> c) {
            StringJoiner j = new StringJoiner(", ", "[", "]");
            c.forEach(v -> j.add(json(v)));
            return j.toString();
        }
        return json(o.toString());
    }

    public static void main(String[] argv) throws Exception {
        for (String a : argv) {
            int i = a.indexOf('=');
            if (i <= 0) throw new IllegalArgumentException("not KEY=VALUE: " + a);
            args.put(a.substring(0, i), a.substring(i + 1));
        }
        if (!args.containsKey("bootstrap") || !args.containsKey("out")) {
            throw new IllegalArgumentException("bootstrap=HOST:PORT and out=FILE are required");
        }
        String run = Long.toString(System.currentTimeMillis());
        List<Object> results = new ArrayList<>();
        boolean ok = true;
        for (String protocol : arg("protocols", "eager,cooperative,consumer").split(",")) {
            Map<String, Object> r = runProtocol(protocol, run);
            System.out.println(json(r));
            results.add(r);
            ok &= (Boolean) r.get("ok");
        }
        try (FileWriter w = new FileWriter(args.get("out"))) {
            w.write(json(results) + "\n");
        }
        System.exit(ok ? 0 : 1);
    }
}
