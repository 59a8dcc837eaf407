//! The operator commands against a broker with TLS and SASL listeners,
//! connected with `--command-config` (Kafka's client properties).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::cli::*;
use common::*;
use serde_json::Value;

/// The commands against a locked-down broker with `--command-config`
/// (Kafka's client properties): SASL/PLAIN and SCRAM over SASL_PLAINTEXT,
/// SASL over TLS, TLS with a client certificate; a wrong password or a
/// missing key fails with a message naming the cause.
#[test]
fn commands_over_sasl_and_tls() {
    let dir = tempfile::tempdir().unwrap();
    let pki = common::certs::make(dir.path());
    let jaas = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";"#;
    let broker = Broker::start_with(&[
        "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "ssl.keystore.type=PEM",
        &format!("ssl.keystore.location={}", pki.broker_keystore.display()),
        "ssl.truststore.type=PEM",
        &format!("ssl.truststore.location={}", pki.ca.display()),
        "listener.name.ssl.ssl.client.auth=required",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
        &format!("listener.name.sasl_ssl.plain.sasl.jaas.config={jaas}"),
        &format!("listener.name.sasl_plaintext.plain.sasl.jaas.config={jaas}"),
    ]);
    let plain = broker.listener("PLAINTEXT");
    json(
        &plain,
        &["topics", "create", "cli-sec", "--partitions", "1"],
    );
    json(
        &plain,
        &[
            "users",
            "upsert",
            "carol",
            "--mechanism",
            "SCRAM-SHA-512",
            "--password",
            "carol-pw",
        ],
    );
    let write = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let scram_jaas = |user: &str, pw: &str| {
        format!(
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"{user}\" password=\"{pw}\";\n"
        )
    };
    let sasl_plain = write(
        "sasl-plain.properties",
        format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={}\n",
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";"#
        ),
    );
    let scram = write(
        "scram.properties",
        format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n{}",
            scram_jaas("carol", "carol-pw")
        ),
    );
    let scram_wrong = write(
        "scram-wrong.properties",
        format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n{}",
            scram_jaas("carol", "nope")
        ),
    );
    let sasl_ssl = write(
        "sasl-ssl.properties",
        format!(
            "security.protocol=SASL_SSL\nssl.truststore.type=PEM\nssl.truststore.location={}\nsasl.mechanism=SCRAM-SHA-512\n{}",
            pki.ca.display(),
            scram_jaas("carol", "carol-pw")
        ),
    );
    let mut keystore = std::fs::read_to_string(&pki.alice_cert).unwrap();
    keystore.push_str(&std::fs::read_to_string(&pki.alice_key).unwrap());
    let alice_keystore = write("alice.pem", keystore);
    let ssl = write(
        "ssl.properties",
        format!(
            "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={}\nssl.keystore.type=PEM\nssl.keystore.location={alice_keystore}\n",
            pki.ca.display()
        ),
    );
    let listed = |addr: &str, config: &str| {
        let v = json(addr, &["topics", "list", "--command-config", config]);
        names(&v)
    };
    let sasl_addr = broker.listener("SASL_PLAINTEXT");
    assert!(listed(&sasl_addr, &sasl_plain).contains(&"cli-sec".to_string()));
    assert!(listed(&sasl_addr, &scram).contains(&"cli-sec".to_string()));
    let ssl_addr = broker.listener("SASL_SSL");
    assert!(listed(&ssl_addr, &sasl_ssl).contains(&"cli-sec".to_string()));
    assert!(listed(&broker.listener("SSL"), &ssl).contains(&"cli-sec".to_string()));
    // The broker's security keys are described as given (a secret without
    // its value), STATIC_BROKER_CONFIG, as Kafka describes them.
    let v = json(
        &plain,
        &[
            "configs",
            "describe",
            "--entity-type",
            "brokers",
            "--entity-name",
            "1",
            "--all",
        ],
    );
    let c = &v["configs"];
    assert_eq!(c["ssl.keystore.type"]["value"], "PEM", "{v}");
    assert_eq!(
        c["ssl.keystore.type"]["source"], "STATIC_BROKER_CONFIG",
        "{v}"
    );
    let jaas = &c["listener.name.sasl_ssl.plain.sasl.jaas.config"];
    assert_eq!(jaas["sensitive"], true, "{v}");
    assert_eq!(jaas["value"], Value::Null, "{v}");
    assert_eq!(
        c["sasl.enabled.mechanisms"]["value"], "PLAIN,SCRAM-SHA-512",
        "{v}"
    );

    // Group commands connect to coordinators with the same settings.
    let v = json(
        &ssl_addr,
        &["groups", "list", "--command-config", &sasl_ssl],
    );
    assert!(v["groups"].is_array(), "{v}");

    // Without the settings, or with a wrong password: a clear failure.
    let err = fails(
        &sasl_addr,
        &["topics", "list", "--command-config", &scram_wrong],
    );
    assert!(err.contains("SASL_AUTHENTICATION_FAILED"), "{err}");
    let no_mech = write(
        "no-mech.properties",
        "security.protocol=SASL_PLAINTEXT\n".to_string(),
    );
    let err = fails(
        &sasl_addr,
        &["topics", "list", "--command-config", &no_mech],
    );
    assert!(err.contains("sasl.mechanism"), "{err}");
    let no_trust = write("no-trust.properties", "security.protocol=SSL\n".to_string());
    let err = fails(
        &ssl_addr,
        &["topics", "list", "--command-config", &no_trust],
    );
    assert!(err.contains("ssl.truststore.location"), "{err}");
}
