//! Running the `fjord` binary's operator commands as a process, for the
//! CLI tests (`tests/cli*.rs`): their output, JSON parsing, and a
//! producer writing the records the dump-log checks expect.

use std::process::Command;
use std::time::{Duration, Instant};

use rdkafka::producer::FutureRecord;
use serde_json::Value;

/// The outcome of one run of the binary.
pub struct Run {
    /// Whether it exited 0.
    pub ok: bool,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

pub fn fjord(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_fjord"))
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run fjord");
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs a command against `addr` with `--json`; asserts it succeeded and
/// gives the parsed output.
pub fn json(addr: &str, args: &[&str]) -> Value {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--bootstrap-server", addr, "--json"]);
    let r = fjord(&all);
    assert!(r.ok, "fjord {all:?} failed: {}{}", r.stdout, r.stderr);
    serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("fjord {all:?}: not JSON ({e}): {}", r.stdout))
}

/// Runs a command against `addr`; asserts it failed and gives its stderr.
pub fn fails(addr: &str, args: &[&str]) -> String {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--bootstrap-server", addr]);
    let r = fjord(&all);
    assert!(!r.ok, "fjord {all:?} should fail: {}", r.stdout);
    r.stderr
}

/// Polls `f` until it gives Some, for up to 30 s.
pub fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn names(v: &Value) -> Vec<String> {
    v["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect()
}

pub fn produce(addr: &str, topic: &str, n: usize) {
    produce_with(addr, topic, n, "none");
}

pub fn produce_with(addr: &str, topic: &str, n: usize, codec: &str) {
    let producer: rdkafka::producer::FutureProducer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", addr)
        .set("broker.address.family", "v4")
        .set("message.timeout.ms", "30000")
        .set("enable.idempotence", "false")
        .set("linger.ms", "0")
        .set("batch.num.messages", "7")
        .set("compression.type", codec)
        .set("log_level", "4")
        .create()
        .expect("create producer");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut futs = Vec::new();
        for i in 0..n {
            let key = format!("k{i}");
            let value = format!("value-{i}-{}", "x".repeat(100));
            let rec = FutureRecord::to(topic)
                .partition(0)
                .key(&key)
                .payload(&value)
                .headers(
                    rdkafka::message::OwnedHeaders::new()
                        .insert(rdkafka::message::Header {
                            key: "h",
                            value: Some("hv"),
                        })
                        .insert(rdkafka::message::Header {
                            key: "h",
                            value: Some("hv2"),
                        }),
                );
            futs.push(
                producer
                    .send_result(rec)
                    .map_err(|(e, _)| e)
                    .expect("enqueue record"),
            );
        }
        for f in futs {
            tokio::time::timeout(Duration::from_secs(60), f)
                .await
                .expect("delivery report within 60 s")
                .expect("delivery future not cancelled")
                .unwrap_or_else(|(e, _)| panic!("delivery failed: {e}"));
        }
    });
}

/// Checks a segment's dump (`--print-records --json`) holds the `n`
/// records [`produce`] sent, in whole batches with valid CRCs.
pub fn check_produced(doc: &Value, n: usize, codec: &str) {
    let batches = doc["batches"].as_array().unwrap();
    assert!(batches.len() > 1, "{doc}");
    assert_eq!(doc["summary"]["records"], n as i64);
    assert_eq!(doc["summary"]["invalid_crcs"], 0);
    assert_eq!(doc["summary"]["trailing_bytes"], 0);
    let mut next = 0i64;
    let mut position = 0i64;
    for b in batches {
        assert_eq!(b["crc_valid"], true, "{b}");
        assert_eq!(b["base_offset"], next, "{b}");
        assert_eq!(b["position"], position, "{b}");
        assert_eq!(b["is_control"], false);
        assert_eq!(b["compression"], codec, "{b}");
        let recs = b["records"].as_array().unwrap();
        assert_eq!(recs.len() as i64, b["count"].as_i64().unwrap());
        for r in recs {
            let i = r["offset"].as_i64().unwrap();
            assert_eq!(i, next);
            assert_eq!(r["key"], format!("k{i}"));
            assert_eq!(r["value"], format!("value-{i}-{}", "x".repeat(100)));
            // A key sent twice shows twice, in the order sent (as
            // kafka-dump-log lists them).
            assert_eq!(r["headers"].as_array().unwrap().len(), 2, "{r}");
            assert_eq!(r["headers"][0]["key"], "h");
            assert_eq!(r["headers"][0]["value"], "hv");
            assert_eq!(r["headers"][1]["key"], "h");
            assert_eq!(r["headers"][1]["value"], "hv2");
            // Not idempotent: no sequence, per batch or per record.
            assert_eq!(r["sequence"], -1);
            next += 1;
        }
        assert_eq!(b["last_offset"], next - 1);
        position += b["size"].as_i64().unwrap();
    }
    assert_eq!(next, n as i64);
}

pub fn json_file(args: &[&str]) -> Value {
    let r = fjord(args);
    assert!(r.ok, "fjord {args:?}: {}{}", r.stdout, r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}
