//! `fjord dump-log` on the segment, offset index and time index files of
//! a real partition: every batch and record as produced, the indexes
//! checked against the log, and damaged copies (a flipped byte, a torn
//! tail, a bad index entry) reported with a failing exit status.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::cli::*;
use common::*;
use serde_json::Value;

#[test]
fn dump_log_of_a_real_segment() {
    let mut broker = Broker::start();
    let addr = broker.bootstrap();
    let n = 200usize;
    json(
        &addr,
        &[
            "topics",
            "create",
            "cli-dump",
            "--partitions",
            "1",
            "--config",
            "index.interval.bytes=1",
        ],
    );
    produce(&addr, "cli-dump", n);
    broker.stop();
    let log = broker.segment_path("cli-dump", 0);

    let r = fjord(&[
        "dump-log",
        "--print-records",
        "--json",
        log.to_str().unwrap(),
    ]);
    assert!(r.ok, "{}{}", r.stdout, r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let doc = &v[0];
    assert_eq!(doc["kind"], "log");
    let batches = doc["batches"].as_array().unwrap();
    check_produced(doc, n, "none");
    let positions: Vec<i64> = batches
        .iter()
        .map(|b| b["position"].as_i64().unwrap())
        .collect();

    // The offset index: every entry points at the start of a batch.
    let index = log.with_extension("index");
    let v = json_file(&["dump-log", "--json", index.to_str().unwrap()]);
    let entries = v[0]["entries"].as_array().unwrap();
    assert!(!entries.is_empty(), "{v}");
    for e in entries {
        assert!(
            positions.contains(&e["position"].as_i64().unwrap()),
            "{e} is not a batch start"
        );
    }
    // Checked against the .log beside it: every entry names its batch's
    // last offset, in order, whole entries only.
    assert_eq!(v[0]["summary"]["log_checked"], true, "{v}");
    assert_eq!(v[0]["summary"]["mismatches"], 0, "{v}");
    assert_eq!(v[0]["summary"]["out_of_order"], 0, "{v}");
    assert_eq!(v[0]["summary"]["trailing_bytes"], 0, "{v}");
    let timeindex = log.with_extension("timeindex");
    let v = json_file(&["dump-log", "--json", timeindex.to_str().unwrap()]);
    assert_eq!(v[0]["kind"], "timeindex");
    for e in v[0]["entries"].as_array().unwrap() {
        assert!(e["offset"].as_i64().unwrap() < n as i64);
    }
    assert_eq!(v[0]["summary"]["log_checked"], true, "{v}");
    assert_eq!(v[0]["summary"]["mismatches"], 0, "{v}");
    assert_eq!(v[0]["summary"]["out_of_order"], 0, "{v}");

    // A damaged copy beside the same .log: the second entry's position
    // moved 1 byte (no batch starts there) and a partial entry after the
    // last: both reported, and the command fails after printing.
    let dir = broker.data_dir().join("dump-index-copy");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&log, dir.join("00000000000000000000.log")).unwrap();
    let mut idx = std::fs::read(&index).unwrap();
    assert!(idx.len() >= 16, "two entries at least");
    let p = u32::from_be_bytes(idx[12..16].try_into().unwrap()) + 1;
    idx[12..16].copy_from_slice(&p.to_be_bytes());
    idx.extend_from_slice(&[0u8; 3]);
    let bad_index = dir.join("00000000000000000000.index");
    std::fs::write(&bad_index, &idx).unwrap();
    let r = fjord(&["dump-log", "--json", bad_index.to_str().unwrap()]);
    assert!(!r.ok, "a mismatched index must fail the command");
    assert!(r.stderr.contains("do not match the .log"), "{}", r.stderr);
    assert!(
        r.stderr.contains("after the last whole entry"),
        "{}",
        r.stderr
    );
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v[0]["summary"]["mismatches"], 1, "{v}");
    assert_eq!(v[0]["summary"]["trailing_bytes"], 3, "{v}");
    assert_eq!(v[0]["mismatches"][0]["index_offset"], entries[1]["offset"]);
    assert_eq!(v[0]["mismatches"][0]["log_offset"], Value::Null);
    let text = fjord(&["dump-log", bad_index.to_str().unwrap()]);
    assert!(
        text.stdout.contains("Mismatch: Index offset: "),
        "{}",
        text.stdout
    );

    // A zero entry with entries after it is damage, not preallocated
    // space: kept and reported (out of order, and not matching the log).
    let mut idx = std::fs::read(&index).unwrap();
    assert!(idx.len() >= 24, "three entries at least");
    idx[8..16].copy_from_slice(&[0u8; 8]);
    std::fs::write(&bad_index, &idx).unwrap();
    let r = fjord(&["dump-log", "--json", bad_index.to_str().unwrap()]);
    assert!(!r.ok, "a zeroed middle entry must fail the command");
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        v[0]["summary"]["entries"].as_u64().unwrap() as usize,
        idx.len() / 8,
        "{v}"
    );
    assert!(
        v[0]["summary"]["out_of_order"].as_u64().unwrap() >= 1,
        "{v}"
    );

    // Text output names each batch as kafka-dump-log.sh does.
    let text = fjord(&["dump-log", log.to_str().unwrap()]);
    assert!(text.ok);
    assert_eq!(text.stdout.matches("baseOffset: ").count(), batches.len());
    assert!(text.stdout.contains("isvalid: true"));

    // A flipped byte inside the second batch's records: its CRC is flagged.
    let mut bytes = std::fs::read(&log).unwrap();
    let second = positions[1] as usize;
    bytes[second + 70] ^= 0xff;
    let bad = broker.data_dir().join("00000000000000000000.log");
    std::fs::write(&bad, &bytes).unwrap();
    let r = fjord(&["dump-log", "--json", bad.to_str().unwrap()]);
    assert!(!r.ok, "a bad CRC must fail the command");
    assert!(r.stderr.contains("invalid CRC"), "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let bs = v[0]["batches"].as_array().unwrap();
    assert_eq!(bs.len(), batches.len());
    assert_eq!(bs[1]["crc_valid"], false);
    assert_eq!(v[0]["summary"]["invalid_crcs"], 1);
    assert!(bs
        .iter()
        .enumerate()
        .all(|(i, b)| i == 1 || b["crc_valid"] == true));
    let text = fjord(&["dump-log", bad.to_str().unwrap()]);
    assert!(text.stdout.contains("isvalid: false"));

    // Bytes after the last whole batch (garbage, a torn tail, a corrupt
    // batch length) fail the command too, after every batch before them.
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(&[0u8; 100]);
    let torn = broker.data_dir().join("00000000000000000100.log");
    std::fs::write(&torn, &bytes).unwrap();
    let r = fjord(&["dump-log", "--json", torn.to_str().unwrap()]);
    assert!(!r.ok, "trailing bytes must fail the command");
    assert!(r.stderr.contains("not a whole batch"), "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v[0]["batches"].as_array().unwrap().len(), batches.len());
    assert_eq!(v[0]["summary"]["trailing_bytes"], 100);

    // A missing file among good ones: the others are still printed.
    let r = fjord(&[
        "dump-log",
        "--json",
        log.to_str().unwrap(),
        "/nonexistent/00000000000000000000.log",
    ]);
    assert!(!r.ok);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1);
}

/// Compressed batches: the header names the codec and the records are
/// decompressed for `--print-records`.
#[test]
fn dump_log_of_compressed_batches() {
    let mut broker = Broker::start();
    let addr = broker.bootstrap();
    for codec in ["gzip", "lz4", "zstd"] {
        let topic = format!("cli-dump-{codec}");
        json(&addr, &["topics", "create", &topic, "--partitions", "1"]);
        produce_with(&addr, &topic, 30, codec);
    }
    broker.stop();
    for codec in ["gzip", "lz4", "zstd"] {
        let log = broker.segment_path(&format!("cli-dump-{codec}"), 0);
        let v = json_file(&[
            "dump-log",
            "--print-records",
            "--json",
            log.to_str().unwrap(),
        ]);
        check_produced(&v[0], 30, codec);
    }
    let r = fjord(&["dump-log", "Cargo.toml"]);
    assert!(!r.ok && r.stderr.contains("not a .log"), "{}", r.stderr);
}
