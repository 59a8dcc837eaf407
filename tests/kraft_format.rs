//! A `server.properties` written for a combined-mode KRaft Apache Kafka
//! node, used unchanged: `fjord format` prepares the data directory as
//! `kafka-storage.sh format` does, the broker starts on it, serves clients
//! on the PLAINTEXT listener and reports the formatted cluster id.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use common::*;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::Offset;

fn fjord(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fjord"))
        .args(args)
        .output()
        .expect("run fjord")
}

use common::ports::free_port;

/// The file a combined-mode Kafka node runs with (Kafka's quickstart
/// shape), client port 0, the controller on `controller_port`.
fn server_properties(dir: &Path, data: &Path, controller_port: u16) -> PathBuf {
    let text = format!(
        "# A KRaft combined-mode node, as for Apache Kafka\n\
         process.roles=broker,controller\n\
         node.id=1\n\
         controller.quorum.voters=1@127.0.0.1:{controller_port}\n\
         listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:{controller_port}\n\
         controller.listener.names=CONTROLLER\n\
         inter.broker.listener.name=PLAINTEXT\n\
         listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL\n\
         log.dirs={}\n\
         num.partitions=1\n\
         offsets.topic.replication.factor=1\n\
         transaction.state.log.replication.factor=1\n\
         transaction.state.log.min.isr=1\n\
         fjord.shards=2\n",
        data.display()
    );
    let path = dir.join("server.properties");
    std::fs::write(&path, text).expect("write server.properties");
    path
}

/// Starts `fjord serve --config <props>` and waits for its `listening on`
/// line; gives the process and the client address.
fn serve(props: &Path, stderr: &Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fjord"))
        .arg("serve")
        .arg("--config")
        .arg(props)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(
            std::fs::File::create(stderr).expect("stderr file"),
        ))
        .spawn()
        .expect("spawn fjord");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel::<String>();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            let _ = tx.send(line);
        }
    });
    loop {
        match rx.recv_timeout(STARTUP_DEADLINE) {
            Ok(line) => {
                if let Some(rest) = line.split(" listening on ").nth(1) {
                    let addr = rest.split_whitespace().next().unwrap_or_default();
                    return (child, addr.to_string());
                }
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "broker did not listen ({e}): {}",
                    std::fs::read_to_string(stderr).unwrap_or_default()
                );
            }
        }
    }
}

fn stop(mut child: Child) {
    // SAFETY: signalling our own child by its pid.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let status = child.wait().expect("wait for fjord");
    assert!(status.success(), "broker exit: {status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_server_properties_format_and_serve() {
    let root = tempfile::Builder::new()
        .prefix("fjord-kraft-")
        .tempdir()
        .expect("temp dir");
    let data = root.path().join("kraft-combined-logs");
    let controller_port = free_port();
    let props = server_properties(root.path(), &data, controller_port);
    let props_s = props.to_str().unwrap();

    // random-uuid prints a Kafka cluster id.
    let out = fjord(&["random-uuid"]);
    assert!(out.status.success());
    let cluster_id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert_eq!(cluster_id.len(), 22, "{cluster_id}");

    // An id that is not a Kafka UUID is refused, nothing is written.
    let out = fjord(&["format", "--config", props_s, "--cluster-id", "my-cluster"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Cluster ID string my-cluster does not appear to be a valid UUID"),
        "{err}"
    );
    assert!(!data.join("meta.properties").exists());

    // (a) format, as kafka-storage.sh format -t ID -c server.properties.
    let out = fjord(&["format", "-c", props_s, "-t", &cluster_id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta = std::fs::read_to_string(data.join("meta.properties")).unwrap();
    for line in [
        "version=1".to_string(),
        "node.id=1".to_string(),
        format!("cluster.id={cluster_id}"),
    ] {
        assert!(meta.lines().any(|l| l == line), "{line} in {meta}");
    }
    assert!(
        meta.lines().any(|l| l.starts_with("directory.id=")),
        "{meta}"
    );

    // A second format is refused; --ignore-formatted leaves the directory.
    let other = String::from_utf8(fjord(&["random-uuid"]).stdout).unwrap();
    let out = fjord(&["format", "--config", props_s, "--cluster-id", other.trim()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is already formatted"), "{err}");
    let out = fjord(&[
        "format",
        "--config",
        props_s,
        "--cluster-id",
        other.trim(),
        "--ignore-formatted",
    ]);
    assert!(out.status.success());
    assert_eq!(
        std::fs::read_to_string(data.join("meta.properties")).unwrap(),
        meta
    );

    // (b) serve with the unchanged file.
    let stderr = root.path().join("broker-stderr.log");
    let (child, addr) = serve(&props, &stderr);
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    assert_ne!(addr, format!("127.0.0.1:{controller_port}"));
    let log = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert!(
        log.contains(&format!(
            "controller listener on 127.0.0.1:{controller_port}"
        )),
        "{log}"
    );

    // (c) one record through, and the formatted cluster id in Metadata.
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", &addr)
        .set("broker.address.family", "v4")
        .set("log_level", "4");
    let producer: FutureProducer = cfg
        .clone()
        .set("message.timeout.ms", "30000")
        .set("enable.idempotence", "false")
        .create()
        .unwrap();
    let delivery = producer
        .send(
            FutureRecord::to("kraft-topic").key("k").payload("v"),
            Duration::from_secs(30),
        )
        .await
        .map_err(|(e, _)| e)
        .unwrap();
    assert_eq!((delivery.partition, delivery.offset), (0, 0));
    let consumer: BaseConsumer = cfg
        .clone()
        .set("group.id", "fjord-it-unused")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()
        .unwrap();
    assign(&consumer, "kraft-topic", &[0], Offset::Beginning);
    let got = consume_n(&consumer, 1, Duration::from_secs(30));
    assert_eq!(got[0].payload(), Some(&b"v"[..]));
    assert_eq!(got[0].key(), Some(&b"k"[..]));
    let client_cluster_id = consumer.client().fetch_cluster_id(CLIENT_TIMEOUT);
    assert_eq!(client_cluster_id.as_deref(), Some(cluster_id.as_str()));
    drop(consumer);
    drop(producer);
    stop(child);
}

/// A controller-only node is refused at start, with the reason; so are a
/// voter missing from its own controller quorum and a broker-only node that
/// is one of the voters.
#[test]
fn split_roles_are_refused() {
    let root = tempfile::tempdir().expect("temp dir");
    let data = root.path().join("data");
    let props = server_properties(root.path(), &data, free_port());
    let props_s = props.to_str().unwrap();
    let out = fjord(&[
        "serve",
        "--config",
        props_s,
        "--override",
        "process.roles=controller",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("controller-only nodes are not supported yet"),
        "{err}"
    );
    let out = fjord(&[
        "serve",
        "--config",
        props_s,
        "--override",
        "process.roles=broker",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("a broker-only node (process.roles=broker) is not a voter"),
        "{err}"
    );
    let out = fjord(&["serve", "--config", props_s, "--override", "node.id=2"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("a list that includes this node (node.id=2)"),
        "{err}"
    );
    assert!(!data.join("meta.properties").exists());
}
