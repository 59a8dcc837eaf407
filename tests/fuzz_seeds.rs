//! Every committed fuzz seed (`tests/fuzz/seeds/<target>/`) still goes
//! through its target's entry point (`fjord::fuzzing`) without a panic or a
//! broken invariant, on the stable compiler and without cargo-fuzz: a
//! regression in a decoder the seeds reach fails `cargo test`. The seeds are
//! real client captures and real on-disk files (see docs/fuzzing.md), plus
//! the inputs of every crash the fuzzers found.

// Integration tests: a failed unwrap, expect or panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

type Entry = fn(&[u8]) -> Result<(), String>;

/// Each fuzz target (its directory name) and its entry point.
const TARGETS: &[(&str, Entry)] = &[
    ("decode_request", fjord::fuzzing::request_stream),
    ("validate_batches", fjord::fuzzing::record_batches),
    ("legacy_message_sets", fjord::fuzzing::legacy_produce),
    ("compression", fjord::fuzzing::compressed_batches),
    ("partition_dir", fjord::fuzzing::partition_dir),
    ("checkpoint_files", fjord::fuzzing::checkpoint_files),
    ("metadata_log", fjord::fuzzing::metadata_log),
    ("controller_rpc", fjord::fuzzing::controller_rpc),
    ("coordinator_records", fjord::fuzzing::coordinator_records),
    ("sasl_tokens", fjord::fuzzing::sasl_tokens),
];

fn seeds_of(target: &str) -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz/seeds")
        .join(target);
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

#[test]
fn every_seed_goes_through_its_target() {
    let mut failures = Vec::new();
    for (target, entry) in TARGETS {
        let seeds = seeds_of(target);
        assert!(!seeds.is_empty(), "no seeds for {target}");
        for path in seeds {
            let data = std::fs::read(&path).unwrap();
            let outcome = std::panic::catch_unwind(|| entry(&data));
            match outcome {
                Ok(Ok(())) => {}
                Ok(Err(violation)) => failures.push(format!("{}: {violation}", path.display())),
                Err(_) => failures.push(format!("{}: panicked", path.display())),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_target_has_a_seed_directory_and_nothing_else_is_there() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/seeds");
    for e in std::fs::read_dir(&root).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        assert!(
            TARGETS.iter().any(|(t, _)| *t == name),
            "tests/fuzz/seeds/{name} belongs to no target"
        );
    }
    let fuzz_bins = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/Cargo.toml"),
    )
    .unwrap();
    for (target, _) in TARGETS {
        assert!(
            fuzz_bins.contains(&format!("name = \"{target}\"")),
            "{target} is not a fuzz target of tests/fuzz/Cargo.toml"
        );
    }
}
