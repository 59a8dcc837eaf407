//! A three-node cluster whose inter-broker and controller listeners are
//! SASL_SSL (SCRAM-SHA-512, the brokers' user created with `fjord format
//! --add-scram` and in `super.users`): the quorum forms and replicates over
//! them, a client writes acks=all over SASL_SSL through a leader kill -9 and
//! every acknowledged record is read back, and the controller listener
//! refuses a socket that does not authenticate as a super user, whatever
//! cluster id it knows (the hole of a plain controller listener: anyone
//! with the cluster id could delete topics).

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cluster::{Cluster, SecureSetup};
use common::*;
use rdkafka::admin::{AdminClient, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::BaseConsumer;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::Message;

const JAAS: &str = r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";"#;

fn secured(pki: &common::certs::TestPki) -> SecureSetup {
    SecureSetup {
        props: vec![
            "ssl.keystore.type=PEM".into(),
            format!("ssl.keystore.location={}", pki.broker_keystore.display()),
            "ssl.truststore.type=PEM".into(),
            format!("ssl.truststore.location={}", pki.ca.display()),
            "sasl.enabled.mechanisms=SCRAM-SHA-512".into(),
            "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512".into(),
            "sasl.mechanism.controller.protocol=SCRAM-SHA-512".into(),
            format!("listener.name.secure.scram-sha-512.sasl.jaas.config={JAAS}"),
            format!("listener.name.controller.scram-sha-512.sasl.jaas.config={JAAS}"),
            "super.users=User:broker".into(),
        ],
        add_scram: vec![
            "SCRAM-SHA-512=[name=broker,password=broker-secret]".into(),
            "SCRAM-SHA-512=[name=alice,password=alice-secret]".into(),
        ],
    }
}

fn sasl_ssl(pki: &common::certs::TestPki, bootstrap: &str) -> rdkafka::config::ClientConfig {
    let mut c = rdkafka::config::ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("security.protocol", "sasl_ssl")
        .set("ssl.ca.location", pki.ca.display().to_string())
        .set("sasl.mechanism", "SCRAM-SHA-512")
        .set("sasl.username", "alice")
        .set("sasl.password", "alice-secret")
        .set("message.timeout.ms", "60000")
        .set("request.timeout.ms", "10000")
        .set("log_level", "3");
    c
}

/// The leader of `topic`-0 as node `id` sees it.
fn leader(c: &Cluster, id: i32, topic: &str) -> Option<i32> {
    let md = c.metadata_from(id, Some(&[topic])).ok()?;
    let p = md.topics.first()?.partitions.first()?;
    (p.error_code == 0 && p.leader_id.0 >= 0).then_some(p.leader_id.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sasl_ssl_cluster_keeps_every_acknowledged_record_through_a_leader_kill() {
    let dir = tempfile::tempdir().unwrap();
    let pki = common::certs::make(dir.path());
    // Starting at all proves the quorum formed over SASL_SSL controller
    // listeners with the bootstrap credentials.
    let mut c = Cluster::start_secured(3, secured(&pki));
    let admin: AdminClient<DefaultClientContext> =
        c.client_config(&c.bootstrap_all()).create().unwrap();
    let t = NewTopic::new("secure", 1, TopicReplication::Fixed(3)).set("min.insync.replicas", "2");
    let r = admin.create_topics(&[t], &admin_opts()).await.unwrap();
    assert!(r[0].is_ok(), "{r:?}");
    let deadline = Instant::now() + Duration::from_secs(60);
    let first = loop {
        if let Some(l) = leader(&c, 1, "secure") {
            if c.list_offsets_code(l, "secure", 0) == Ok(0) {
                break l;
            }
        }
        assert!(Instant::now() < deadline, "no leader for secure-0");
        std::thread::sleep(Duration::from_millis(50));
    };
    let secure_all: String = c
        .ids()
        .iter()
        .map(|id| c.secure_bootstrap(*id))
        .collect::<Vec<_>>()
        .join(",");
    let producer: FutureProducer = sasl_ssl(&pki, &secure_all)
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .create()
        .unwrap();
    let mut acked: BTreeMap<i64, String> = BTreeMap::new();
    let send = |i: usize| {
        let producer = producer.clone();
        async move {
            // Every tenth record is 200 KiB: the followers' fetch answers
            // over the SASL_SSL inter-broker listener span many TLS records.
            let v = if i % 10 == 0 {
                format!("v{i}:{}", "x".repeat(200 * 1024))
            } else {
                format!("v{i}")
            };
            producer
                .send(
                    FutureRecord::<(), _>::to("secure").payload(&v),
                    Duration::from_secs(60),
                )
                .await
                .map(|d| (d.offset, v))
                .map_err(|(e, _)| e.to_string())
        }
    };
    for i in 0..50 {
        let (o, v) = send(i).await.expect("delivered before the kill");
        acked.insert(o, v);
    }
    c.kill9(first);
    for i in 50..100 {
        // Retriable errors are the producer's to retry; a delivery that
        // fails after its timeout is not acknowledged and not counted.
        if let Ok((o, v)) = send(i).await {
            acked.insert(o, v);
        }
    }
    assert!(
        acked.len() > 50,
        "records acknowledged after the kill: {}",
        acked.len() - 50
    );
    let survivor = c.ids().into_iter().find(|id| *id != first).unwrap();
    let consumer: BaseConsumer = sasl_ssl(&pki, &c.secure_bootstrap(survivor))
        .set("group.id", "secure-check")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    assign(&consumer, "secure", &[0], rdkafka::Offset::Beginning);
    let last = *acked.keys().last().unwrap();
    let mut read: BTreeMap<i64, String> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while read.keys().last().is_none_or(|o| *o < last) {
        assert!(
            Instant::now() < deadline,
            "read {} of {}",
            read.len(),
            acked.len()
        );
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(500)) {
            read.insert(
                m.offset(),
                String::from_utf8_lossy(m.payload().unwrap_or_default()).to_string(),
            );
        }
    }
    for (o, v) in &acked {
        assert_eq!(read.get(o), Some(v), "acknowledged record at offset {o}");
    }
}

/// One frame of the controller listener's framing: a u32 length, then JSON.
fn frame(v: &serde_json::Value) -> Vec<u8> {
    let body = serde_json::to_vec(v).unwrap();
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

fn read_json(s: &mut impl Read) -> Option<serde_json::Value> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).ok()?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

#[test]
fn the_controller_listener_refuses_who_does_not_authenticate_as_a_super_user() {
    let dir = tempfile::tempdir().unwrap();
    let pki = common::certs::make(dir.path());
    let c = Cluster::start_secured(3, secured(&pki));
    let md = c.metadata_from(1, Some(&[])).unwrap();
    let cluster_id = md.cluster_id.map(|s| s.to_string()).unwrap();
    let addr = c.controller_addr(1);
    let hello = frame(&serde_json::json!({"Hello": {"cluster_id": cluster_id}}));
    let delete = frame(&serde_json::json!({"Controller": {"DeleteTopics": {"names": ["any"]}}}));

    // Plain TCP: the TLS listener answers no frame.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&hello).unwrap();
    s.write_all(&delete).unwrap();
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap_or(0);
    assert!(
        n == 0 || buf[0] == 0x15,
        "a TLS alert or a close: {:?}",
        &buf[..n]
    );

    // TLS, no SASL: the hello is refused, nothing else is served.
    let tls = |pki: &common::certs::TestPki| {
        let mut roots = rustls::RootCertStore::empty();
        let pem = std::fs::read(&pki.ca).unwrap();
        for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(&pem) {
            roots.add(cert.unwrap()).unwrap();
        }
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let conn = rustls::ClientConnection::new(
            Arc::new(config),
            rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap(),
        )
        .unwrap();
        let sock = TcpStream::connect(&addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        rustls::StreamOwned::new(conn, sock)
    };
    let mut s = tls(&pki);
    s.write_all(&hello).unwrap();
    let answer = read_json(&mut s).expect("an answer to the hello");
    assert!(
        answer.to_string().contains("has not authenticated"),
        "{answer}"
    );
    s.write_all(&delete).unwrap();
    assert!(read_json(&mut s).is_none(), "nothing after a refused hello");

    // SASL as alice (a valid user, not a super user): refused as well.
    let mut s = tls(&pki);
    let scram = |s: &mut rustls::StreamOwned<rustls::ClientConnection, TcpStream>| {
        s.write_all(&frame(
            &serde_json::json!({"SaslHandshake": {"mechanism": "SCRAM-SHA-512"}}),
        ))
        .unwrap();
        let a = read_json(s).unwrap();
        assert!(a.to_string().contains("Ok"), "{a}");
        let m = fjord::security::scram::ScramMechanism::Sha512;
        let (mut client, first) =
            fjord::security::scram::ScramClient::start(m, "alice", "alice-secret", "n0nce");
        s.write_all(&frame(
            &serde_json::json!({"SaslAuthenticate": {"token": first}}),
        ))
        .unwrap();
        let a = read_json(s).unwrap();
        let server_first: Vec<u8> =
            serde_json::from_value(a["SaslAuthenticate"]["Ok"].clone()).unwrap();
        let fin = client.step(&server_first).unwrap();
        s.write_all(&frame(
            &serde_json::json!({"SaslAuthenticate": {"token": fin}}),
        ))
        .unwrap();
        let a = read_json(s).unwrap();
        let server_final: Vec<u8> =
            serde_json::from_value(a["SaslAuthenticate"]["Ok"].clone()).unwrap();
        client.finish(&server_final).unwrap();
    };
    scram(&mut s);
    s.write_all(&hello).unwrap();
    let answer = read_json(&mut s).expect("an answer to the hello");
    assert!(
        answer.to_string().contains("not in super.users"),
        "{answer}"
    );
    s.write_all(&delete).unwrap();
    assert!(read_json(&mut s).is_none(), "nothing after a refused hello");
}
