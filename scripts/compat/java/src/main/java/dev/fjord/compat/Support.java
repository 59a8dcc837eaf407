package dev.fjord.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** What every check shares: client settings, unique names, waiting with deadlines, assertions. */
final class Support {
    private Support() {}

    /** A check saw the broker (or the client) behave other than Kafka does. */
    static final class CheckFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        CheckFailed(String message) {
            super(message);
        }

        CheckFailed(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** One run's settings and the Admin client the checks share. */
    static final class Ctx implements AutoCloseable {
        final String bootstrap;
        final String broker;
        final String runId;
        /** Client settings every client of this context gets (security.protocol, SASL, TLS); may be empty. */
        final Map<String, Object> security;
        private Admin admin;

        Ctx(String bootstrap, String broker, String runId) {
            this(bootstrap, broker, runId, Map.of());
        }

        Ctx(String bootstrap, String broker, String runId, Map<String, Object> security) {
            this.bootstrap = bootstrap;
            this.broker = broker;
            this.runId = runId;
            this.security = security;
        }

        /** A topic, group or transactional id unique to this run. */
        String name(String base) {
            return "jc-" + base + "-" + runId;
        }

        Properties producerProps() {
            Properties p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            p.put(ProducerConfig.CLIENT_ID_CONFIG, "java-compat-producer");
            // Bounds on how long a call may hang; acks and idempotence keep their defaults.
            p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
            p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
            p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
            p.putAll(security);
            return p;
        }

        KafkaProducer<String, String> producer(Map<String, Object> extra) {
            Properties p = producerProps();
            p.putAll(extra);
            return new KafkaProducer<>(p);
        }

        /** A consumer; group may be null (assign() only, no commits). */
        Properties consumerProps(String group) {
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, "java-compat-consumer");
            p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
            if (group != null) {
                p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
                p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
                // Rebalances are noticed on the next heartbeat: keep them quick.
                p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
                p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
            }
            p.putAll(security);
            return p;
        }

        KafkaConsumer<String, String> consumer(String group, Map<String, Object> extra) {
            Properties p = consumerProps(group);
            if ("consumer".equals(extra.get(ConsumerConfig.GROUP_PROTOCOL_CONFIG))) {
                // The consumer group protocol takes its timings from the
                // broker; the client refuses these two with it.
                p.remove(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG);
                p.remove(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG);
            }
            p.putAll(extra);
            return new KafkaConsumer<>(p);
        }

        synchronized Admin admin() {
            if (admin == null) {
                Properties p = new Properties();
                p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                p.put(AdminClientConfig.CLIENT_ID_CONFIG, "java-compat-admin");
                p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
                p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
                p.putAll(security);
                admin = Admin.create(p);
            }
            return admin;
        }

        /** Creates a topic and waits until its metadata shows every partition with a leader. */
        void createTopic(String topic, int partitions, Map<String, String> configs) {
            NewTopic nt = new NewTopic(topic, partitions, (short) 1);
            if (configs != null) {
                nt.configs(configs);
            }
            get(admin().createTopics(List.of(nt)).all(), "createTopics " + topic);
            waitForLeaders(topic, partitions);
        }

        void waitForLeaders(String topic, int partitions) {
            waitUntil("topic " + topic + " has " + partitions + " partitions with leaders", Duration.ofSeconds(20), () -> {
                try {
                    TopicDescription d = admin().describeTopics(List.of(topic)).allTopicNames()
                            .get(10, TimeUnit.SECONDS).get(topic);
                    return d.partitions().size() == partitions
                            && d.partitions().stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty());
                } catch (ExecutionException | TimeoutException e) {
                    return false;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new CheckFailed("interrupted");
                }
            });
        }

        @Override
        public synchronized void close() {
            if (admin != null) {
                admin.close(Duration.ofSeconds(5));
                admin = null;
            }
        }
    }

    static List<TopicPartition> partitions(String topic, int n) {
        List<TopicPartition> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(new TopicPartition(topic, i));
        }
        return out;
    }

    /** Waits for a future (an Admin result, a send) and names it when it fails. */
    static <T> T get(Future<T> f, String what) {
        try {
            return f.get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw new CheckFailed(what + " failed: " + describe(e.getCause()), e.getCause());
        } catch (TimeoutException e) {
            throw new CheckFailed(what + " did not complete within 30s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CheckFailed("interrupted");
        }
    }

    /** The exception that a future or call failed with, expected to be of the given type. */
    static Throwable failureOf(Future<?> f, String what) {
        try {
            Object v = f.get(30, TimeUnit.SECONDS);
            throw new CheckFailed(what + " succeeded (" + v + ") but should have failed");
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (TimeoutException e) {
            throw new CheckFailed(what + " did not complete within 30s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CheckFailed("interrupted");
        }
    }

    static String describe(Throwable t) {
        if (t == null) {
            return "null";
        }
        StringBuilder sb = new StringBuilder(t.getClass().getSimpleName() + ": " + t.getMessage());
        Throwable c = t.getCause();
        while (c != null && c != t) {
            sb.append(" <- ").append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
            t = c;
            c = c.getCause();
        }
        return sb.toString();
    }

    /** Repeats `cond` (which does the polling itself) until it holds or the deadline passes. */
    static void waitUntil(String what, Duration timeout, BooleanSupplier cond) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            long started = System.nanoTime();
            if (cond.getAsBoolean()) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new CheckFailed("timed out after " + timeout.toSeconds() + "s waiting until " + what);
            }
            // A condition that did not block (an Admin lookup answered at once)
            // is asked again after a short pause, not in a busy loop.
            long tookMs = (System.nanoTime() - started) / 1_000_000;
            if (tookMs < 25) {
                try {
                    Thread.sleep(25 - tookMs);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new CheckFailed("interrupted");
                }
            }
        }
    }

    /** Like waitUntil, with a description of the last state seen for the failure message. */
    static void waitUntil(String what, Duration timeout, BooleanSupplier cond, Supplier<String> state) {
        try {
            waitUntil(what, timeout, cond);
        } catch (CheckFailed e) {
            throw new CheckFailed(e.getMessage() + "; last seen: " + state.get());
        }
    }

    static void check(boolean cond, String fmt, Object... args) {
        if (!cond) {
            throw new CheckFailed(String.format(fmt, args));
        }
    }

    static void eq(Object expected, Object actual, String what) {
        if (!Objects.equals(expected, actual)) {
            throw new CheckFailed(what + ": expected " + expected + ", got " + actual);
        }
    }

    /** The headers of a record as "key=value" strings (value null shown as key=<null>). */
    static List<String> headerList(Iterable<Header> headers) {
        List<String> out = new ArrayList<>();
        for (Header h : headers) {
            out.add(h.key() + "=" + (h.value() == null ? "<null>" : new String(h.value(), java.nio.charset.StandardCharsets.UTF_8)));
        }
        return out;
    }

    static String show(ConsumerRecord<String, String> r) {
        return r.topic() + "-" + r.partition() + "@" + r.offset() + " key=" + r.key() + " value=" + r.value();
    }

    static <T> String sorted(Collection<T> c) {
        List<String> s = new ArrayList<>();
        for (T t : c) {
            s.add(String.valueOf(t));
        }
        java.util.Collections.sort(s);
        return s.toString();
    }
}
