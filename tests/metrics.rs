//! The metrics endpoint (`metrics.listener`) of the real broker: every
//! shard's reactor-stall counters in Prometheus text, 404 for other paths,
//! the `fjord metrics` command, and the stall summary at shutdown. Nothing
//! here depends on whether a stall happens.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::*;

/// One HTTP/1.0 GET; gives the whole response (head and body).
fn get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect to the metrics endpoint");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read response");
    out
}

#[test]
fn metrics_endpoint_lists_every_shard() {
    let mut broker = Broker::start_with(&["metrics.listener=127.0.0.1:0"]);
    let addr = broker.metrics_address();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");

    let resp = get(&addr, "/metrics");
    assert!(resp.starts_with("HTTP/1.0 200"), "{resp}");
    for shard in 0..2 {
        for name in [
            "fjord_reactor_stalls_total",
            "fjord_reactor_stall_max_us",
            "fjord_sendfile_zero_copy_bytes_total",
            "fjord_leader_partitions",
            "fjord_under_replicated_partitions",
        ] {
            let key = format!("{name}{{shard=\"{shard}\"}} ");
            assert!(resp.contains(&key), "no {key} in:\n{resp}");
        }
        let key = format!("fjord_reactor_stalls_over_ms{{shard=\"{shard}\",gt=\"1\"}} ");
        assert!(resp.contains(&key), "no {key} in:\n{resp}");
    }
    assert!(!resp.contains("shard=\"2\""), "only 2 shards:\n{resp}");
    // One node: every partition it leads has its whole replica set in sync.
    for shard in 0..2 {
        let key = format!("fjord_under_replicated_partitions{{shard=\"{shard}\"}} 0");
        assert!(resp.contains(&key), "no {key} in:\n{resp}");
    }

    let resp = get(&addr, "/other");
    assert!(resp.starts_with("HTTP/1.0 404"), "{resp}");

    // The CLI prints the same text.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fjord"))
        .args(["metrics", "--address", &addr])
        .output()
        .expect("run fjord metrics");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("fjord_reactor_stalls_total{shard=\"1\"}"),
        "{text}"
    );

    // Orderly shutdown writes each shard's summary.
    broker.stop();
    let text = broker.stderr_text();
    for shard in 0..2 {
        let key = format!("shard {shard}: reactor stalls over 500 µs: ");
        assert!(text.contains(&key), "no {key:?} in:\n{text}");
    }
}

#[test]
fn metrics_off_by_default() {
    let broker = Broker::start();
    assert!(!broker.stderr_text().contains("metrics endpoint"));
}
