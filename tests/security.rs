//! Security on every listener, with a real client (librdkafka, through the
//! rdkafka crate built with OpenSSL) and raw sockets for Kafka's rules on
//! the wire: one broker with PLAINTEXT, SSL (client certificates
//! required), SASL_SSL (PLAIN, SCRAM-SHA-256/512) and SASL_PLAINTEXT
//! listeners; certificates made at test time (tests/common/certs.rs); and a
//! listener checking OAUTHBEARER tokens against a JWKS file.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::Bytes;
use common::certs::TestPki;
use common::*;
use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest, MetadataRequest,
    SaslAuthenticateRequest, SaslHandshakeRequest,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::BaseConsumer;
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::Message;

const PLAIN_JAAS: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";"#;

/// A broker with the four listeners, the PKI in `dir`, and `extra`
/// settings.
fn secured_broker(pki: &TestPki, extra: &[&str]) -> Broker {
    let mut overrides = vec![
        "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0".to_string(),
        "ssl.keystore.type=PEM".to_string(),
        format!("ssl.keystore.location={}", pki.broker_keystore.display()),
        "ssl.truststore.type=PEM".to_string(),
        format!("ssl.truststore.location={}", pki.ca.display()),
        "listener.name.ssl.ssl.client.auth=required".to_string(),
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512".to_string(),
        format!("listener.name.sasl_ssl.plain.sasl.jaas.config={PLAIN_JAAS}"),
        format!("listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN_JAAS}"),
    ];
    overrides.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = overrides.iter().map(String::as_str).collect();
    Broker::start_with(&refs)
}

fn client(bootstrap: &str, settings: &[(&str, &str)]) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("socket.timeout.ms", "10000")
        .set("message.timeout.ms", "10000")
        .set("reconnect.backoff.max.ms", "500")
        .set("log_level", "3");
    for (k, v) in settings {
        c.set(*k, *v);
    }
    c
}

fn ssl_settings(pki: &TestPki) -> Vec<(&'static str, String)> {
    vec![
        ("security.protocol", "ssl".to_string()),
        ("ssl.ca.location", pki.ca.display().to_string()),
        (
            "ssl.certificate.location",
            pki.alice_cert.display().to_string(),
        ),
        ("ssl.key.location", pki.alice_key.display().to_string()),
    ]
}

fn with(
    base: &[(&'static str, String)],
    more: &[(&'static str, &str)],
) -> Vec<(&'static str, String)> {
    let mut v = base.to_vec();
    for (k, val) in more {
        v.retain(|(kk, _)| kk != k);
        v.push((k, val.to_string()));
    }
    v
}

fn config(bootstrap: &str, settings: &[(&'static str, String)]) -> ClientConfig {
    let pairs: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    client(bootstrap, &pairs)
}

/// Produces `n` records to `topic` (auto-created) and reads them back,
/// both through `settings` on `bootstrap`.
fn round_trip(bootstrap: &str, settings: &[(&'static str, String)], topic: &str, n: usize) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let producer: FutureProducer = config(bootstrap, settings).create().unwrap();
    rt.block_on(async {
        for i in 0..n {
            let payload = format!("v{i}");
            producer
                .send(
                    FutureRecord::<(), _>::to(topic).payload(&payload),
                    Duration::from_secs(10),
                )
                .await
                .unwrap_or_else(|(e, _)| panic!("send over {bootstrap}: {e}"));
        }
    });
    let consumer: BaseConsumer = config(
        bootstrap,
        &with(
            settings,
            &[("group.id", "sec-it"), ("enable.auto.commit", "false")],
        ),
    )
    .create()
    .unwrap();
    assign(&consumer, topic, &[0], rdkafka::Offset::Beginning);
    let got = consume_n(&consumer, n, Duration::from_secs(30));
    let values: Vec<String> = got
        .iter()
        .map(|m| String::from_utf8_lossy(m.payload().unwrap_or_default()).to_string())
        .collect();
    assert_eq!(values, (0..n).map(|i| format!("v{i}")).collect::<Vec<_>>());
}

/// Whether a client with `settings` gets metadata from `bootstrap`.
fn connects(bootstrap: &str, settings: &[(&'static str, String)]) -> bool {
    let producer: FutureProducer = config(bootstrap, settings).create().unwrap();
    producer
        .client()
        .fetch_metadata(None, Duration::from_secs(5))
        .is_ok()
}

/// Sets SCRAM credentials through AlterUserScramCredentials v0 on a
/// plaintext connection: (user, mechanism type, password).
fn set_scram(addr: &str, users: &[(&str, i8, &str)]) -> Vec<i16> {
    let mut s = connect(addr);
    let upsertions = users
        .iter()
        .map(|(user, mech, pw)| {
            let m = fjord::security::scram::ScramMechanism::from_kip554_type(*mech).unwrap();
            let salt = format!("salt-of-{user}").into_bytes();
            let salted = m.salted_password(pw.as_bytes(), &salt, 4096);
            ScramCredentialUpsertion::default()
                .with_name(StrBytes::from_string(user.to_string()))
                .with_mechanism(*mech)
                .with_iterations(4096)
                .with_salt(Bytes::from(salt))
                .with_salted_password(Bytes::from(salted))
        })
        .collect();
    let req = AlterUserScramCredentialsRequest::default().with_upsertions(upsertions);
    kp_call(&mut s, 0, 1, &req)
        .results
        .iter()
        .map(|r| r.error_code)
        .collect()
}

#[test]
fn tls_with_client_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let pki = common::certs::make(dir.path());
    let broker = secured_broker(
        &pki,
        &["listener.name.ssl.ssl.principal.mapping.rules=RULE:^CN=(.*?),.*$/$1/L,DEFAULT"],
    );
    let ssl = broker.listener("SSL");
    round_trip(&ssl, &ssl_settings(&pki), "tls-topic", 20);
    // The certificate of another CA, no certificate, or a client trusting
    // another CA: no connection.
    let stranger = with(
        &ssl_settings(&pki),
        &[
            (
                "ssl.certificate.location",
                &pki.stranger_cert.display().to_string(),
            ),
            ("ssl.key.location", &pki.stranger_key.display().to_string()),
        ],
    );
    assert!(!connects(&ssl, &stranger), "a certificate of an unknown CA");
    let no_cert: Vec<(&'static str, String)> = ssl_settings(&pki)
        .into_iter()
        .filter(|(k, _)| !k.starts_with("ssl.certificate") && !k.starts_with("ssl.key"))
        .collect();
    assert!(!connects(&ssl, &no_cert), "no client certificate");
    let wrong_ca = with(
        &ssl_settings(&pki),
        &[("ssl.ca.location", &pki.other_ca.display().to_string())],
    );
    assert!(!connects(&ssl, &wrong_ca), "the broker's CA not trusted");
    // Plain TCP on the TLS port gets nothing served.
    let mut s = TcpStream::connect(&ssl).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let req = kafka_frame_metadata();
    s.write_all(&req).unwrap();
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap_or(0);
    assert!(
        n == 0 || buf[0] == 0x15,
        "a TLS alert or a close, not a Kafka answer: {:?}",
        &buf[..n]
    );
}

/// Requests and answers far larger than one TLS record (16 KiB): messages
/// of 16 KiB to 363 KiB in uneven steps produced and read back over TLS, so
/// frames end at many points of a record (a connection broken by a large
/// request, or waiting for bytes that never come, would time the send out).
#[test]
fn tls_carries_requests_larger_than_a_record() {
    let dir = tempfile::tempdir().unwrap();
    let pki = common::certs::make(dir.path());
    let broker = secured_broker(&pki, &[]);
    let ssl = broker.listener("SSL");
    let settings = with(
        &ssl_settings(&pki),
        &[
            ("message.max.bytes", "2000000"),
            ("fetch.max.bytes", "4194304"),
        ],
    );
    let sizes: Vec<usize> = (0..24).map(|i| 16 * 1024 + i * 15_511).collect();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let producer: FutureProducer = config(&ssl, &settings).create().unwrap();
    rt.block_on(async {
        for (i, size) in sizes.iter().enumerate() {
            let payload = format!("{i}:{}", "x".repeat(*size));
            producer
                .send(
                    FutureRecord::<(), _>::to("tls-big").payload(&payload),
                    Duration::from_secs(30),
                )
                .await
                .unwrap_or_else(|(e, _)| panic!("send {i}: {e}"));
        }
    });
    let consumer: BaseConsumer = config(
        &ssl,
        &with(
            &settings,
            &[("group.id", "tls-big"), ("enable.auto.commit", "false")],
        ),
    )
    .create()
    .unwrap();
    assign(&consumer, "tls-big", &[0], rdkafka::Offset::Beginning);
    let got = consume_n(&consumer, sizes.len(), Duration::from_secs(30));
    assert_eq!(got.len(), sizes.len());
    for (m, size) in got.iter().zip(&sizes) {
        assert_eq!(
            m.payload().map(|p| p.len()),
            Some(format!("{}:", m.offset()).len() + size)
        );
    }
}

/// Reads until the broker closes `s` (a TLS alert may come first), within
/// the socket's read timeout; false when it stays open.
fn closed_by_broker(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

/// Garbage on the TLS listener: random bytes, a TLS record header claiming
/// more than TLS allows, and a ClientHello cut short and held open. The
/// first two are closed by the broker; while all three are open, a client
/// on the same listener produces and reads back as usual (the shard does
/// not stall on them).
#[test]
fn tls_garbage_is_closed_and_stalls_no_one() {
    let dir = tempfile::tempdir().unwrap();
    let pki = common::certs::make(dir.path());
    let broker = secured_broker(&pki, &[]);
    let ssl = broker.listener("SSL");
    let open = |bytes: &[u8]| {
        let mut s = TcpStream::connect(&ssl).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.write_all(bytes).unwrap();
        s
    };
    // A fixed pseudo-random stream (xorshift), 64 KiB.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let noise: Vec<u8> = (0..65_536)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let mut random = open(&noise);
    // Handshake record, TLS 1.2, length 18,432 (above 2^14 + 2048).
    let mut oversize = open(&[0x16, 0x03, 0x03, 0x48, 0x00, 0x01]);
    // A ClientHello header announcing 512 bytes, then nothing.
    let held = open(&[
        0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
    ]);
    round_trip(&ssl, &ssl_settings(&pki), "tls-garbage", 20);
    assert!(closed_by_broker(&mut random), "random bytes left open");
    assert!(
        closed_by_broker(&mut oversize),
        "an oversize record left open"
    );
    drop(held);
    // The broker still serves new clients after them.
    assert!(connects(&ssl, &ssl_settings(&pki)));
}

/// A Metadata v1 request frame (all topics).
fn kafka_frame_metadata() -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&(-1i32).to_be_bytes());
    frame_v1(3, 1, 9, &body)
}

#[test]
fn sasl_scram_and_plain_with_a_real_client() {
    let dir = tempfile::tempdir().unwrap();
    let pki = common::certs::make(dir.path());
    let mut broker = secured_broker(&pki, &[]);
    assert_eq!(
        set_scram(
            &broker.bootstrap(),
            &[("alice", 2, "alice-scram"), ("bob", 1, "bob-scram")]
        ),
        vec![0, 0]
    );
    let sasl_ssl = |mech: &str, user: &str, pw: &str| {
        vec![
            ("security.protocol", "sasl_ssl".to_string()),
            ("ssl.ca.location", pki.ca.display().to_string()),
            ("sasl.mechanism", mech.to_string()),
            ("sasl.username", user.to_string()),
            ("sasl.password", pw.to_string()),
        ]
    };
    let addr = broker.listener("SASL_SSL");
    round_trip(
        &addr,
        &sasl_ssl("SCRAM-SHA-512", "alice", "alice-scram"),
        "scram-topic",
        10,
    );
    assert!(connects(
        &addr,
        &sasl_ssl("SCRAM-SHA-256", "bob", "bob-scram")
    ));
    assert!(!connects(
        &addr,
        &sasl_ssl("SCRAM-SHA-512", "alice", "wrong")
    ));
    assert!(
        !connects(&addr, &sasl_ssl("SCRAM-SHA-256", "alice", "alice-scram")),
        "alice has no SHA-256 credential"
    );
    assert!(!connects(&addr, &sasl_ssl("SCRAM-SHA-512", "nobody", "x")));
    assert!(connects(&addr, &sasl_ssl("PLAIN", "alice", "alice-secret")));
    assert!(!connects(&addr, &sasl_ssl("PLAIN", "alice", "alice-scram")));
    let plain = |user: &str, pw: &str| {
        vec![
            ("security.protocol", "sasl_plaintext".to_string()),
            ("sasl.mechanism", "PLAIN".to_string()),
            ("sasl.username", user.to_string()),
            ("sasl.password", pw.to_string()),
        ]
    };
    round_trip(
        &broker.listener("SASL_PLAINTEXT"),
        &plain("admin", "admin-secret"),
        "plain-topic",
        5,
    );
    assert!(!connects(
        &broker.listener("SASL_PLAINTEXT"),
        &plain("admin", "nope")
    ));

    // The credentials are in the metadata log: described without secrets,
    // and still valid after a restart.
    let mut s = connect(&broker.bootstrap());
    let described = kp_call(
        &mut s,
        0,
        2,
        &DescribeUserScramCredentialsRequest::default().with_users(Some(vec![
            UserName::default().with_name(StrBytes::from_static_str("alice")),
            UserName::default().with_name(StrBytes::from_static_str("carol")),
        ])),
    );
    let alice = &described.results[0];
    assert_eq!((alice.error_code, alice.credential_infos.len()), (0, 1));
    assert_eq!(
        (
            alice.credential_infos[0].mechanism,
            alice.credential_infos[0].iterations
        ),
        (2, 4096)
    );
    assert_eq!(described.results[1].error_code, 91, "RESOURCE_NOT_FOUND");
    assert_eq!(
        described.results[1].error_message.as_deref(),
        Some("Attempt to describe a user credential that does not exist: carol")
    );
    // An empty list asks for every user, as a null one does (what the Java
    // admin client and librdkafka send for "all users").
    for users in [None, Some(vec![])] {
        let all = kp_call(
            &mut s,
            0,
            3,
            &DescribeUserScramCredentialsRequest::default().with_users(users.clone()),
        );
        let names: Vec<String> = all.results.iter().map(|r| r.user.to_string()).collect();
        assert!(
            names.contains(&"alice".to_string()) && !names.contains(&"carol".to_string()),
            "{users:?}: {names:?}"
        );
    }
    drop(s);
    broker.restart();
    let addr = broker.listener("SASL_SSL");
    assert!(connects(
        &addr,
        &sasl_ssl("SCRAM-SHA-512", "alice", "alice-scram")
    ));
    assert!(!connects(
        &addr,
        &sasl_ssl("SCRAM-SHA-512", "alice", "wrong")
    ));
}

fn handshake(s: &mut TcpStream, version: i16, mechanism: &str, cid: i32) -> (i16, Vec<String>) {
    let r = kp_call(
        s,
        version,
        cid,
        &SaslHandshakeRequest::default()
            .with_mechanism(StrBytes::from_string(mechanism.to_string())),
    );
    (
        r.error_code,
        r.mechanisms.iter().map(|m| m.to_string()).collect(),
    )
}

#[test]
fn kafkas_sasl_rules_on_the_wire() {
    let dir = tempfile::tempdir().unwrap();
    let pki = common::certs::make(dir.path());
    let broker = secured_broker(
        &pki,
        &[
            "listener.name.sasl_plaintext.connections.max.reauth.ms=1500",
            "connection.failed.authentication.delay.ms=50",
        ],
    );
    let addr = broker.listener("SASL_PLAINTEXT");
    // A request before authentication closes the connection.
    let mut s = connect(&addr);
    s.write_all(&kafka_frame_metadata()).unwrap();
    assert_closed(&mut s);
    // An unknown mechanism: 33 with the listener's list, then closed.
    let mut s = connect(&addr);
    let (code, mechanisms) = handshake(&mut s, 1, "GSSAPI", 1);
    assert_eq!(code, 33);
    assert_eq!(mechanisms, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]);
    assert_closed(&mut s);
    // A frame over sasl.server.max.receive.size before authentication.
    let mut s = connect(&addr);
    let mut big = (600 * 1024i32).to_be_bytes().to_vec();
    big.extend_from_slice(&[0u8; 16]);
    s.write_all(&big).unwrap();
    assert_closed(&mut s);
    // A wrong password: 58 with the generic text, then closed.
    let mut s = connect(&addr);
    assert_eq!(handshake(&mut s, 1, "PLAIN", 1).0, 0);
    let auth = |pw: &str| {
        SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(format!("\0alice\0{pw}")))
    };
    let r = kp_call(&mut s, 1, 2, &auth("wrong"));
    assert_eq!(r.error_code, 58);
    let message = r.error_message.map(|m| m.to_string()).unwrap_or_default();
    assert!(
        message.contains("invalid credentials with SASL mechanism PLAIN"),
        "{message}"
    );
    assert!(
        !message.contains("alice") && !message.contains("wrong"),
        "{message}"
    );
    assert_closed(&mut s);
    // SaslHandshake v0: raw tokens, then requests are served.
    let mut s = connect(&addr);
    assert_eq!(handshake(&mut s, 0, "PLAIN", 1).0, 0);
    let token = b"\0alice\0alice-secret";
    let mut raw = (token.len() as u32).to_be_bytes().to_vec();
    raw.extend_from_slice(token);
    s.write_all(&raw).unwrap();
    // PLAIN's answer is an empty token: a zero length.
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    assert_eq!(len, [0, 0, 0, 0]);
    let m = kp_call(&mut s, 1, 3, &MetadataRequest::default());
    assert!(!m.brokers.is_empty());
    // The brokers are named by this listener's endpoint.
    assert_eq!(
        format!("{}:{}", m.brokers[0].host.as_str(), m.brokers[0].port),
        addr
    );
    // KIP-368: v1+ announces the session lifetime; past it, a request that
    // is not a re-authentication closes the connection.
    let mut s = connect(&addr);
    assert_eq!(handshake(&mut s, 1, "PLAIN", 1).0, 0);
    let r = kp_call(&mut s, 2, 2, &auth("alice-secret"));
    assert_eq!((r.error_code, r.session_lifetime_ms), (0, 1500));
    // Re-authentication renews it.
    assert_eq!(handshake(&mut s, 1, "PLAIN", 3).0, 0);
    let r = kp_call(&mut s, 2, 4, &auth("alice-secret"));
    assert_eq!(r.error_code, 0);
    std::thread::sleep(Duration::from_millis(1700));
    s.write_all(&kafka_frame_metadata()).unwrap();
    assert_closed(&mut s);
}

#[test]
fn bad_security_settings_stop_the_broker_naming_the_key_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = |settings: &[&str]| -> (bool, String) {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_fjord"));
        cmd.arg("serve")
            .arg("--log-dirs")
            .arg(dir.path().join("data"))
            .arg("--listeners")
            .arg("PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0");
        for s in settings {
            cmd.arg("--override").arg(s);
        }
        let out = cmd.output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (ok, err) = run(&[
        "ssl.keystore.type=PEM",
        "ssl.keystore.location=/nonexistent/k.pem",
    ]);
    assert!(!ok);
    assert!(
        err.contains("ssl.keystore.location") && err.contains("/nonexistent/k.pem"),
        "{err}"
    );
    let (ok, err) = run(&["ssl.keystore.type=JKS", "ssl.keystore.location=/x.jks"]);
    assert!(!ok);
    assert!(
        err.contains("ssl.keystore.type") && err.contains("PEM"),
        "{err}"
    );
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate").unwrap();
    let (ok, err) = run(&[
        "ssl.keystore.type=PEM",
        &format!("ssl.keystore.location={}", garbage.display()),
    ]);
    assert!(!ok);
    assert!(err.contains("garbage.pem"), "{err}");
    let (ok, err) = run(&["listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"]);
    assert!(!ok);
    assert!(
        err.contains("sasl.enabled.mechanisms") && err.contains("GSSAPI"),
        "{err}"
    );
    let (ok, err) = run(&[
        "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms=PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_a=\"secret-value\"",
    ]);
    assert!(!ok);
    assert!(err.contains("sasl.jaas.config"), "{err}");
    assert!(
        !err.contains("secret-value"),
        "a JAAS error must not print values: {err}"
    );
}

/// OAUTHBEARER with Kafka's unsecured validator and librdkafka's unsecured
/// JWT (`principal=`), and a SCRAM client producing for longer than
/// `connections.max.reauth.ms`: librdkafka re-authenticates (KIP-368) and
/// every record is delivered.
#[test]
fn oauthbearer_and_re_authentication_with_a_real_client() {
    let dir = tempfile::tempdir().unwrap();
    let pki = common::certs::make(dir.path());
    let broker = secured_broker(
        &pki,
        &[
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms=OAUTHBEARER,PLAIN",
            "listener.name.sasl_ssl.connections.max.reauth.ms=2000",
        ],
    );
    assert_eq!(
        set_scram(&broker.bootstrap(), &[("alice", 2, "alice-scram")]),
        vec![0]
    );
    let oauth = |principal: &str, lifetime_s: &str| {
        vec![
            ("security.protocol", "sasl_plaintext".to_string()),
            ("sasl.mechanism", "OAUTHBEARER".to_string()),
            ("enable.sasl.oauthbearer.unsecure.jwt", "true".to_string()),
            (
                "sasl.oauthbearer.config",
                format!("principal={principal} lifeSeconds={lifetime_s}"),
            ),
        ]
    };
    let addr = broker.listener("SASL_PLAINTEXT");
    round_trip(&addr, &oauth("admin", "3600"), "oauth-topic", 5);
    // A SCRAM producer across several session lifetimes.
    let scram = vec![
        ("security.protocol", "sasl_ssl".to_string()),
        ("ssl.ca.location", pki.ca.display().to_string()),
        ("sasl.mechanism", "SCRAM-SHA-512".to_string()),
        ("sasl.username", "alice".to_string()),
        ("sasl.password", "alice-scram".to_string()),
    ];
    let producer: FutureProducer = config(&broker.listener("SASL_SSL"), &scram)
        .create()
        .unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let started = std::time::Instant::now();
    let mut sent = 0;
    rt.block_on(async {
        while started.elapsed() < Duration::from_secs(7) {
            producer
                .send(
                    FutureRecord::<(), _>::to("reauth-topic").payload(&format!("r{sent}")),
                    Duration::from_secs(10),
                )
                .await
                .unwrap_or_else(|(e, _)| panic!("record {sent} across re-authentications: {e}"));
            sent += 1;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    assert!(sent > 20, "sent {sent}");
    // The sessions were renewed, not dropped: the broker logged no expired
    // session of alice.
    let log = broker.stderr_text();
    assert!(
        !log.contains("session of User:alice expired"),
        "a session expired instead of re-authenticating"
    );
}

/// An ES256 key made now: its PKCS#8 document and its public JWK.
fn es256_key(kid: &str) -> (Vec<u8>, serde_json::Value) {
    use base64::Engine;
    use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let b = |x: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(x);
    let point = pair.public_key().as_ref();
    let jwk = serde_json::json!({"kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256",
                                 "x": b(&point[1..33]), "y": b(&point[33..])});
    (pkcs8.as_ref().to_vec(), jwk)
}

/// A SaslHandshake v1 and SaslAuthenticate v1 exchange with the OAUTHBEARER
/// `token`: the session lifetime when accepted, else the error code after
/// the `{"status":"invalid_token"}` round.
fn oauthbearer_exchange(addr: &str, token: &str) -> Result<i64, i16> {
    let mut s = connect(addr);
    assert_eq!(handshake(&mut s, 1, "OAUTHBEARER", 1).0, 0);
    let first = format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}");
    let r = kp_call(
        &mut s,
        1,
        2,
        &SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(first)),
    );
    assert_eq!(r.error_code, 0);
    if r.auth_bytes.is_empty() {
        // Served: a Metadata request goes through.
        s.write_all(&kafka_frame_metadata()).unwrap();
        let mut len = [0u8; 4];
        s.read_exact(&mut len).unwrap();
        return Ok(r.session_lifetime_ms);
    }
    assert_eq!(&r.auth_bytes[..], br#"{"status":"invalid_token"}"#);
    let r = kp_call(
        &mut s,
        1,
        3,
        &SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from_static(b"\x01")),
    );
    Err(r.error_code)
}

/// Kafka's OAuthBearerValidatorCallbackHandler on a listener: tokens signed
/// by the key of the JWKS file are served, with the token's exp bounding
/// the session (KIP-368); another key's are SASL_AUTHENTICATION_FAILED; a
/// new key written to the file is taken at the next refresh
/// (`sasl.oauthbearer.jwks.endpoint.refresh.ms`) and the old one dropped.
#[test]
fn oauthbearer_tokens_checked_against_a_jwks_file_that_is_read_again() {
    use jsonwebtoken::{Algorithm, EncodingKey, Header};
    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    let (a_key, a_jwk) = es256_key("a");
    let (b_key, b_jwk) = es256_key("b");
    std::fs::write(&jwks, serde_json::json!({ "keys": [a_jwk] }).to_string()).unwrap();
    let broker = Broker::start_with(&[
        "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms=OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        &format!("sasl.oauthbearer.jwks.endpoint.url=file://{}", jwks.display()),
        "sasl.oauthbearer.jwks.endpoint.refresh.ms=200",
        "sasl.oauthbearer.expected.audience=fjord",
    ]);
    let addr = broker.listener("SASL_PLAINTEXT");
    let token = |pkcs8: &[u8], kid: &str, aud: &str| {
        let now = now_ms() / 1000;
        let mut h = Header::new(Algorithm::ES256);
        h.kid = Some(kid.to_string());
        let claims = serde_json::json!({"sub": "alice", "aud": aud, "iat": now, "exp": now + 600});
        jsonwebtoken::encode(&h, &claims, &EncodingKey::from_ec_der(pkcs8)).unwrap()
    };
    let lifetime = oauthbearer_exchange(&addr, &token(&a_key, "a", "fjord")).unwrap();
    assert!(
        (590_000..=600_000).contains(&lifetime),
        "session lifetime {lifetime} ms"
    );
    assert_eq!(
        oauthbearer_exchange(&addr, &token(&a_key, "a", "other")),
        Err(58)
    );
    assert_eq!(
        oauthbearer_exchange(&addr, &token(&b_key, "b", "fjord")),
        Err(58)
    );
    // b signs in a's name: refused too.
    assert_eq!(
        oauthbearer_exchange(&addr, &token(&b_key, "a", "fjord")),
        Err(58)
    );
    std::fs::write(&jwks, serde_json::json!({ "keys": [b_jwk] }).to_string()).unwrap();
    wait_for(Duration::from_secs(20), "the new key set read", || {
        oauthbearer_exchange(&addr, &token(&b_key, "b", "fjord")).is_ok()
    });
    assert_eq!(
        oauthbearer_exchange(&addr, &token(&a_key, "a", "fjord")),
        Err(58)
    );
}
