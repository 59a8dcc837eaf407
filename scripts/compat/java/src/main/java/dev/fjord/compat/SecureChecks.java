package dev.fjord.compat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler;

import dev.fjord.compat.Support.CheckFailed;
import dev.fjord.compat.Support.Ctx;

/**
 * `--secure`: the Java client over the secured listeners, as
 * scripts/compat/security.py runs it against Fjord and against Apache Kafka
 * 4.4 configured the same way. For each SCRAM credential a topic is created
 * over SASL_SSL, records are produced (acks=all, idempotent) and read back
 * exactly; the first credential's user with a wrong password is refused with
 * SaslAuthenticationException (not a timeout); SSL without a client
 * certificate is refused with SslAuthenticationException; then the same round
 * trip over SSL with the client certificate as a PEM keystore
 * (`ssl.keystore.type=PEM`).
 * The broker's certificate is checked against the test CA with host name
 * verification on (`ssl.endpoint.identification.algorithm=https`).
 *
 * Environment (the same for every runner's secured mode):
 *   COMPAT_SECURE_SASL_SSL, COMPAT_SECURE_SSL   host:port of the two listeners
 *   COMPAT_SECURE_CA                            the CA certificate (PEM)
 *   COMPAT_SECURE_CERT, COMPAT_SECURE_KEY       the client certificate and its unencrypted key (PEM)
 *   COMPAT_SECURE_SCRAM                         MECHANISM:USER:PASSWORD[,...]
 */
final class SecureChecks {
    private SecureChecks() {}

    /** Records each round trip produces and reads back. */
    static final int RECORDS = 20;

    private record Cred(String mechanism, String user, String password) {}

    interface SecureCheck {
        String run() throws Exception;
    }

    static String env(String name) {
        String v = System.getenv(name);
        if (v == null || v.isEmpty()) {
            System.err.println("java-client: " + name + " is not set");
            System.exit(2);
        }
        return v;
    }

    /** Runs the secured checks; gives the exit status (0 when every one passed). */
    static int run(String broker, String runId) throws IOException {
        String saslSsl = env("COMPAT_SECURE_SASL_SSL");
        String ssl = env("COMPAT_SECURE_SSL");
        String ca = env("COMPAT_SECURE_CA");
        String cert = Files.readString(Path.of(env("COMPAT_SECURE_CERT")), StandardCharsets.US_ASCII);
        String key = Files.readString(Path.of(env("COMPAT_SECURE_KEY")), StandardCharsets.US_ASCII);
        List<Cred> creds = new ArrayList<>();
        for (String c : env("COMPAT_SECURE_SCRAM").split(",")) {
            String[] parts = c.split(":", 3);
            if (parts.length != 3) {
                System.err.println("java-client --secure: COMPAT_SECURE_SCRAM: " + c + " is not MECHANISM:USER:PASSWORD");
                System.exit(2);
            }
            creds.add(new Cred(parts[0], parts[1], parts[2]));
        }

        Map<String, SecureCheck> checks = new LinkedHashMap<>();
        for (Cred c : creds) {
            checks.put("SASL_SSL " + c.mechanism() + " as " + c.user() + ": produce " + RECORDS + " records and read them back",
                    () -> roundTrip(new Ctx(saslSsl, broker, runId, sasl(ca, c)), c.mechanism().toLowerCase(Locale.ROOT)));
        }
        Cred first = creds.get(0);
        Cred wrong = new Cred(first.mechanism(), first.user(), first.password() + "-wrong");
        checks.put("SASL_SSL " + first.mechanism() + " as " + first.user()
                + " with a wrong password: refused with SaslAuthenticationException", () -> refused(saslSsl, sasl(ca, wrong), SaslAuthenticationException.class));
        Map<String, Object> noCert = tls(ca);
        noCert.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SSL");
        checks.put("SSL without a client certificate (ssl.client.auth=required): refused with SslAuthenticationException",
                () -> refused(ssl, noCert, SslAuthenticationException.class));
        Map<String, Object> mtls = tls(ca);
        mtls.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SSL");
        mtls.put(SslConfigs.SSL_KEYSTORE_TYPE_CONFIG, "PEM");
        mtls.put(SslConfigs.SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG, cert);
        mtls.put(SslConfigs.SSL_KEYSTORE_KEY_CONFIG, key);
        checks.put("SSL with a PEM client certificate (mutual TLS): produce " + RECORDS + " records and read them back",
                () -> roundTrip(new Ctx(ssl, broker, runId, mtls), "mtls"));

        return runAll("--secure", checks);
    }

    /**
     * `--oauth`: the Java client's own OAUTHBEARER login with a file token
     * source (Kafka's OAuthBearerLoginCallbackHandler reading the token at
     * `sasl.oauthbearer.token.endpoint.url`, a `file://` URL), as
     * scripts/compat/oauth.py runs it against Fjord and against Apache Kafka
     * 4.4 validating signed tokens against the same JWKS file. With the
     * accepted token a topic is created, records produced (acks=all,
     * idempotent) and read back exactly; each refused token makes the client
     * fail with SaslAuthenticationException (not a timeout).
     *
     * Kafka 4.x clients read a token URL only when the JVM allows it: the
     * system property `org.apache.kafka.sasl.oauthbearer.allowed.urls` must
     * list every token file's `file://` URL (java.sh passes COMPAT_JAVA_OPTS
     * to the JVM). The client checks the token itself before sending it (a
     * non-blank `sub`, a non-negative numeric `exp`; an expired one is sent
     * all the same, with a logged error), so even the refused tokens carry
     * those claims.
     *
     * Environment:
     *   COMPAT_OAUTH_SASL_PLAINTEXT   host:port of the OAUTHBEARER SASL_PLAINTEXT listener
     *   COMPAT_OAUTH_TOKEN            a file holding a token the broker accepts
     *   COMPAT_OAUTH_REFUSED          WHAT:FILE[,...] files holding tokens the broker refuses
     */
    static int runOAuth(String broker, String runId) {
        String bootstrap = env("COMPAT_OAUTH_SASL_PLAINTEXT");
        String token = env("COMPAT_OAUTH_TOKEN");
        Map<String, SecureCheck> checks = new LinkedHashMap<>();
        checks.put("SASL_PLAINTEXT OAUTHBEARER with a token file: produce " + RECORDS + " records and read them back",
                () -> roundTrip(new Ctx(bootstrap, broker, runId, oauth(token)), "oauth"));
        for (String r : env("COMPAT_OAUTH_REFUSED").split(",")) {
            String[] parts = r.split(":", 2);
            if (parts.length != 2) {
                System.err.println("java-client --oauth: COMPAT_OAUTH_REFUSED: " + r + " is not WHAT:FILE");
                System.exit(2);
            }
            checks.put("SASL_PLAINTEXT OAUTHBEARER with a token " + parts[0]
                    + ": refused with SaslAuthenticationException carrying the invalid_token challenge",
                    () -> {
                        String got = refused(bootstrap, oauth(parts[1]), SaslAuthenticationException.class);
                        // Kafka's OAUTHBEARER server ends a refused token's exchange with its
                        // error challenge as the message (RFC 7628 section 3.2.2).
                        if (!got.contains("{\"status\":\"invalid_token\"}")) {
                            throw new CheckFailed("the message is not the invalid_token challenge: " + got);
                        }
                        return got;
                    });
        }
        return runAll("--oauth", checks);
    }

    /** OAUTHBEARER over SASL_PLAINTEXT, the token read by Kafka's login handler from a file. */
    static Map<String, Object> oauth(String tokenFile) {
        Map<String, Object> p = new HashMap<>();
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_PLAINTEXT");
        p.put(SaslConfigs.SASL_MECHANISM, "OAUTHBEARER");
        p.put(SaslConfigs.SASL_LOGIN_CALLBACK_HANDLER_CLASS, OAuthBearerLoginCallbackHandler.class.getName());
        p.put(SaslConfigs.SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL, Path.of(tokenFile).toAbsolutePath().toUri().toString());
        p.put(SaslConfigs.SASL_JAAS_CONFIG, "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;");
        return p;
    }

    /** Runs the checks in order, one `ok:` or `FAIL:` line each; gives 0 when every one passed. */
    static int runAll(String mode, Map<String, SecureCheck> checks) {
        List<String> failed = new ArrayList<>();
        long started = System.nanoTime();
        for (Map.Entry<String, SecureCheck> e : checks.entrySet()) {
            long t0 = System.nanoTime();
            try {
                String summary = e.getValue().run();
                System.out.printf("ok: %s: %s (%.1fs)%n", e.getKey(), summary, (System.nanoTime() - t0) / 1e9);
            } catch (CheckFailed ex) {
                System.out.printf("FAIL: %s: %s (%.1fs)%n", e.getKey(), ex.getMessage(), (System.nanoTime() - t0) / 1e9);
                failed.add(e.getKey());
            } catch (Exception ex) {
                System.out.printf("FAIL: %s: unexpected %s (%.1fs)%n", e.getKey(), Support.describe(ex),
                        (System.nanoTime() - t0) / 1e9);
                failed.add(e.getKey());
            }
            System.out.flush();
        }
        System.out.printf("java-client %s: %d passed, %d failed (%.1fs)%n", mode, checks.size() - failed.size(),
                failed.size(), (System.nanoTime() - started) / 1e9);
        return failed.isEmpty() ? 0 : 1;
    }

    /** TLS trusting only the test CA (a PEM truststore), host name verification on. */
    static Map<String, Object> tls(String ca) {
        Map<String, Object> p = new HashMap<>();
        p.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM");
        p.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, ca);
        p.put(SslConfigs.SSL_ENDPOINT_IDENTIFICATION_ALGORITHM_CONFIG, "https");
        return p;
    }

    static Map<String, Object> sasl(String ca, Cred c) {
        Map<String, Object> p = tls(ca);
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_SSL");
        p.put(SaslConfigs.SASL_MECHANISM, c.mechanism());
        p.put(SaslConfigs.SASL_JAAS_CONFIG, "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                + c.user() + "\" password=\"" + c.password() + "\";");
        return p;
    }

    /** Creates a topic, produces RECORDS records and reads exactly those back from the start. */
    static String roundTrip(Ctx ctx, String tag) {
        try (ctx) {
            String topic = ctx.name("sec-" + tag);
            ctx.createTopic(topic, 1, null);
            List<String> want = new ArrayList<>();
            try (KafkaProducer<String, String> p = ctx.producer(Map.of(ProducerConfig.ACKS_CONFIG, "all"))) {
                List<java.util.concurrent.Future<RecordMetadata>> sends = new ArrayList<>();
                for (int i = 0; i < RECORDS; i++) {
                    String v = String.format("%s-%02d", tag, i);
                    want.add(v);
                    sends.add(p.send(new ProducerRecord<>(topic, v)));
                }
                for (int i = 0; i < sends.size(); i++) {
                    Support.eq((long) i, Support.get(sends.get(i), "send " + i).offset(), "offset of record " + i);
                }
            }
            TopicPartition tp = new TopicPartition(topic, 0);
            List<String> got = new ArrayList<>();
            try (KafkaConsumer<String, String> c = ctx.consumer(null, Map.of())) {
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                Support.waitUntil(RECORDS + " records read back", Duration.ofSeconds(20), () -> {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                        got.add(r.value());
                    }
                    return got.size() >= RECORDS;
                }, got::toString);
                Support.eq(want, got, "records read back");
                Support.eq((long) RECORDS, c.endOffsets(List.of(tp)).get(tp), "end offset");
            }
            return RECORDS + " records at offsets 0.." + (RECORDS - 1) + " read back in order, end offset " + RECORDS;
        }
    }

    /** An Admin call with these settings fails with `want` (an authentication error), well before its timeout. */
    static String refused(String bootstrap, Map<String, Object> security, Class<? extends Exception> want) {
        Map<String, Object> p = new HashMap<>(security);
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        long t0 = System.nanoTime();
        try (Admin a = Admin.create(p)) {
            try {
                String id = a.describeCluster().clusterId().get(40, TimeUnit.SECONDS);
                throw new CheckFailed("describeCluster answered cluster id " + id);
            } catch (ExecutionException e) {
                if (!want.isInstance(e.getCause())) {
                    throw new CheckFailed("describeCluster failed with " + Support.describe(e.getCause())
                            + ", want " + want.getSimpleName());
                }
                return want.getSimpleName() + " after " + (System.nanoTime() - t0) / 1_000_000 + " ms: "
                        + e.getCause().getMessage();
            } catch (TimeoutException e) {
                throw new CheckFailed("describeCluster: no answer within 40s, want " + want.getSimpleName());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CheckFailed("interrupted");
            }
        }
    }
}
