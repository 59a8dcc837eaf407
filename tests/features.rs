//! Finalized features (KIP-584, KIP-1022) end to end: ApiVersions v3 and v4
//! and UpdateFeatures v0–v2 sent as raw frames to Fjord and to Apache Kafka
//! 4.4, compared code for code (the supported ranges differ by design:
//! docs/decisions/finalized-features.md); Kafka's own `kafka-features` tool
//! against Fjord; the levels on every node of a 3-node cluster and after a
//! restart of all nodes. The Kafka comparisons run when Kafka's jars are
//! installed (`scripts/peers/kafka install`); `FJORD_REQUIRE_KAFKA_PEER=1`
//! makes their absence a failure.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::cluster::Cluster;
use common::kafka_peer::{kafka_installed, KafkaPeer};
use common::raw::RawConn as Conn;
use common::*;
use kafka_protocol::messages::update_features_request::FeatureUpdateKey;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What an ApiVersions answer says about features.
#[derive(Debug, Clone)]
struct Features {
    supported: BTreeMap<String, (i16, i16)>,
    finalized: BTreeMap<String, (i16, i16)>,
    epoch: i64,
    update_features: Option<(i16, i16)>,
}

fn features(addr: &str, version: i16) -> Features {
    let mut req = ApiVersionsRequest::default();
    if version >= 3 {
        req = req
            .with_client_software_name(s("fjord-features-test"))
            .with_client_software_version(s("1.0"));
    }
    let r = Conn::new(addr).call(version, &req);
    assert_eq!(r.error_code, 0);
    Features {
        supported: r
            .supported_features
            .iter()
            .map(|f| (f.name.to_string(), (f.min_version, f.max_version)))
            .collect(),
        finalized: r
            .finalized_features
            .iter()
            .map(|f| {
                (
                    f.name.to_string(),
                    (f.min_version_level, f.max_version_level),
                )
            })
            .collect(),
        epoch: r.finalized_features_epoch,
        update_features: r
            .api_keys
            .iter()
            .find(|k| k.api_key == 57)
            .map(|k| (k.min_version, k.max_version)),
    }
}

/// The structure both brokers must show: v3 leaves out the supported
/// features of minimum 0 and keeps the others as v4 has them; a finalized
/// feature has min = max within its supported range; UpdateFeatures 0–2.
fn check_api_versions(addr: &str, who: &str) -> Features {
    let v3 = features(addr, 3);
    let v4 = features(addr, 4);
    assert_eq!(v4.update_features, Some((0, 2)), "{who}");
    let without_zero: BTreeMap<_, _> = v4
        .supported
        .iter()
        .filter(|(_, (min, _))| *min != 0)
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    assert_eq!(v3.supported, without_zero, "{who}: v3 supported features");
    assert!(
        v4.supported.values().any(|(min, _)| *min == 0),
        "{who}: v4 lists features of minimum 0: {:?}",
        v4.supported
    );
    assert_eq!(v3.finalized, v4.finalized, "{who}");
    assert!(v4.epoch >= 0, "{who}: epoch {}", v4.epoch);
    for (name, (min, max)) in &v4.finalized {
        assert_eq!(min, max, "{who}: {name}");
        let (lo, hi) = v4.supported[name];
        assert!((lo..=hi).contains(max), "{who}: {name} {max} in {lo}..{hi}");
        assert!(*max > 0, "{who}: level 0 is not finalized ({name})");
    }
    for name in [
        "metadata.version",
        "transaction.version",
        "group.version",
        "kraft.version",
        "share.version",
        "eligible.leader.replicas.version",
    ] {
        assert!(v4.supported.contains_key(name), "{who}: {name}");
    }
    assert_eq!(
        v4.finalized.get("eligible.leader.replicas.version"),
        Some(&(1, 1)),
        "{who}"
    );
    v4
}

fn update(feature: &str, level: i16, upgrade_type: i8, allow_downgrade: bool) -> FeatureUpdateKey {
    FeatureUpdateKey::default()
        .with_feature(s(feature))
        .with_max_version_level(level)
        .with_upgrade_type(upgrade_type)
        .with_allow_downgrade(allow_downgrade)
}

/// One UpdateFeatures; gives "top-code [result codes] | top message".
fn update_features(
    c: &mut Conn,
    version: i16,
    updates: Vec<FeatureUpdateKey>,
    validate_only: bool,
) -> (String, String) {
    let req = UpdateFeaturesRequest::default()
        .with_timeout_ms(30_000)
        .with_feature_updates(updates)
        .with_validate_only(validate_only);
    let r = c.call(version, &req);
    let results: Vec<String> = r
        .results
        .iter()
        .map(|x| format!("{}={}", x.feature, x.error_code))
        .collect();
    (
        format!("{} {:?}", r.error_code, results),
        r.error_message.map(|m| m.to_string()).unwrap_or_default(),
    )
}

/// The scenarios run on both brokers; each line is the code summary, and
/// for the cases where Fjord's and Kafka's ranges agree, the message.
fn scenarios(addr: &str) -> Vec<String> {
    let mut c = Conn::new(addr);
    let mv = features(addr, 4).finalized["metadata.version"].0;
    let mut out = Vec::new();
    let mut both = |label: &str, (codes, message): (String, String), keep_message: bool| {
        out.push(if keep_message {
            format!("{label}: {codes} | {message}")
        } else {
            format!("{label}: {codes}")
        });
    };
    // An unknown feature: INVALID_UPDATE_VERSION with Kafka's text, all or
    // nothing (the good update beside it fails too), per feature below v2.
    for v in 0..=2 {
        both(
            &format!("v{v} unknown feature"),
            update_features(
                &mut c,
                v,
                vec![
                    update("metadata.version", mv, 1, false),
                    update("foo.version", 3, 1, false),
                ],
                false,
            ),
            true,
        );
    }
    // Disabling an unknown feature (level 0, safe downgrade).
    both(
        "v2 disable unknown",
        update_features(&mut c, 2, vec![update("foo.version", 0, 2, false)], false),
        true,
    );
    // Level below 0.
    both(
        "v2 negative level",
        update_features(
            &mut c,
            2,
            vec![update("group.version", -1, 1, false)],
            false,
        ),
        false,
    );
    // An unknown upgrade type.
    both(
        "v1 upgrade type 9",
        update_features(&mut c, 1, vec![update("group.version", 0, 9, false)], false),
        false,
    );
    // A downgrade of metadata.version without the downgrade flag (v0) or
    // type (v1): refused.
    both(
        "v0 downgrade without allow_downgrade",
        update_features(
            &mut c,
            0,
            vec![update("metadata.version", mv - 1, 1, false)],
            false,
        ),
        false,
    );
    both(
        "v1 downgrade as UPGRADE",
        update_features(
            &mut c,
            1,
            vec![update("metadata.version", mv - 1, 1, false)],
            false,
        ),
        false,
    );
    // The finalized level again: accepted (validate only, then for real).
    for v in 1..=2 {
        both(
            &format!("v{v} same metadata.version, validate only"),
            update_features(
                &mut c,
                v,
                vec![update("metadata.version", mv, 1, false)],
                true,
            ),
            true,
        );
    }
    both(
        "v0 same metadata.version",
        update_features(
            &mut c,
            0,
            vec![update("metadata.version", mv, 1, false)],
            false,
        ),
        true,
    );
    // transaction.version to 0 as a safe downgrade: accepted on both (from
    // 2), validate only so both keep TV2.
    both(
        "v2 transaction.version 0 safe downgrade, validate only",
        update_features(
            &mut c,
            2,
            vec![update("transaction.version", 0, 2, false)],
            true,
        ),
        true,
    );
    out
}

fn normalize(lines: Vec<String>) -> Vec<String> {
    lines
        .into_iter()
        .map(|l| {
            let re_start = l.find("Local controller ");
            match re_start {
                Some(i) => {
                    let rest = &l[i + "Local controller ".len()..];
                    let after =
                        rest.trim_start_matches(|ch: char| ch.is_ascii_digit() || ch == '-');
                    format!("{}Local controller N{}", &l[..i], after)
                }
                None => l,
            }
        })
        .collect()
}

/// Waits until the broker at `addr` has finalized `metadata.version` (the
/// bootstrap levels are written once the broker is registered).
fn wait_finalized(addr: &str) -> Features {
    let mut last = None;
    wait_for(Duration::from_secs(30), "finalized features", || {
        let f = features(addr, 4);
        let done = f.finalized.contains_key("metadata.version");
        last = Some(f);
        done
    });
    last.unwrap()
}

#[test]
fn api_versions_and_update_features_as_kafka() {
    let fjord = Broker::start();
    let addr = fjord.bootstrap();
    let before = wait_finalized(&addr);
    let f = check_api_versions(&addr, "fjord");
    // Transactions V2 served, and finalized on a new cluster as on Kafka 4.4.
    assert_eq!(f.supported["transaction.version"], (0, 2));
    assert_eq!(
        before.finalized.get("transaction.version"),
        Some(&(2, 2)),
        "{:?}",
        before.finalized
    );
    // KIP-848 served, and finalized on a new cluster as on Kafka 4.4.
    assert_eq!(f.supported["group.version"], (0, 1));
    assert_eq!(before.finalized.get("group.version"), Some(&(1, 1)));
    // KIP-932 served from level 1, level 2 with the dead-letter queue
    // (KIP-1191), finalized on a new cluster as on Kafka 4.4.
    assert_eq!(f.supported["share.version"], (0, 2));
    assert_eq!(before.finalized.get("share.version"), Some(&(2, 2)));
    assert!(!f.supported.contains_key("streams.version"));
    let fjord_lines = normalize(scenarios(&addr));
    // The epoch is the image's metadata offset: an accepted update moved it.
    let after = features(&addr, 4);
    assert!(
        after.epoch > before.epoch,
        "{} -> {}",
        before.epoch,
        after.epoch
    );
    assert_eq!(after.finalized, before.finalized);
    for l in &fjord_lines {
        eprintln!("fjord: {l}");
    }
    let Some(kafka) = KafkaPeer::start(&[]) else {
        return;
    };
    wait_finalized(&kafka.addr);
    check_api_versions(&kafka.addr, "kafka");
    let kafka_lines = normalize(scenarios(&kafka.addr));
    for l in &kafka_lines {
        eprintln!("kafka: {l}");
    }
    assert_eq!(fjord_lines, kafka_lines);
}

/// `kafka-features` (Kafka 4.4's tool) against Fjord: describe, a refused
/// upgrade, a downgrade and an upgrade back.
#[test]
fn kafka_features_tool_against_fjord() {
    let tool = repo().join("scripts/peers/kafka");
    if !kafka_installed() {
        return;
    }
    let fjord = Broker::start();
    let addr = fjord.bootstrap();
    wait_finalized(&addr);
    let run = |args: &[&str]| -> String {
        let out = Command::new(&tool)
            .args(["tool", "kafka-features", "--bootstrap-server", &addr])
            .args(args)
            .output()
            .expect("run kafka-features");
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let d = run(&["describe"]);
    assert!(
        d.contains("Feature: metadata.version") && d.contains("FinalizedVersionLevel: 4.4-IV2"),
        "{d}"
    );
    assert!(d.contains("Feature: transaction.version"), "{d}");
    assert!(
        d.contains("Feature: eligible.leader.replicas.version"),
        "{d}"
    );
    let up = run(&["upgrade", "--feature", "group.version=2"]);
    assert!(
        up.contains("Invalid update version 2 for feature group.version. Local controller 1 only supports versions 0-1"),
        "{up}"
    );
    let down = run(&["downgrade", "--feature", "transaction.version=0"]);
    assert!(
        down.contains("transaction.version was downgraded to 0."),
        "{down}"
    );
    let same = run(&["upgrade", "--metadata", "4.4-IV2"]);
    assert!(
        same.contains("metadata.version was upgraded to 33."),
        "{same}"
    );
}

/// Every node of a 3-node cluster finalizes the same levels with the same
/// epoch once caught up, an update is seen on every node, and the levels
/// survive a restart of every node (from the metadata log, not from the
/// bootstrap file, which the test changes before the restart).
#[test]
fn levels_agree_across_a_cluster_and_survive_restart() {
    let mut cluster = Cluster::start(3, &[]);
    let ids = cluster.ids();
    let agree = |cluster: &Cluster| -> Features {
        let mut last = None;
        wait_for(
            Duration::from_secs(60),
            "every node's features agree",
            || {
                let all: Vec<Features> = ids
                    .iter()
                    .map(|id| features(&cluster.bootstrap(*id), 4))
                    .collect();
                let same = all
                    .iter()
                    .all(|f| f.finalized == all[0].finalized && f.epoch == all[0].epoch)
                    && all[0].finalized.contains_key("metadata.version");
                last = Some(all[0].clone());
                same
            },
        );
        last.unwrap()
    };
    let first = agree(&cluster);
    assert_eq!(first.finalized.get("metadata.version"), Some(&(33, 33)));
    // An update through any node reaches every node.
    let mut c = Conn::new(&cluster.bootstrap(ids[1]));
    let (codes, message) = update_features(
        &mut c,
        2,
        vec![update("metadata.version", 33, 1, false)],
        false,
    );
    assert_eq!(codes, "0 []", "{message}");
    let updated = agree(&cluster);
    assert!(updated.epoch > first.epoch);
    // Every node's bootstrap levels now lack ELR: were the finalized
    // levels not read back from the metadata log, the restart would
    // finalize these instead.
    for id in &ids {
        let file = cluster
            .data_dir(*id)
            .join("__cluster_metadata/bootstrap-features.json");
        std::fs::write(&file, r#"{"metadata.version": 33}"#).unwrap();
    }
    cluster.restart_all();
    let restarted = agree(&cluster);
    assert_eq!(restarted.finalized, updated.finalized);
    assert!(restarted.epoch >= updated.epoch);
}

/// `fjord format --feature` as `kafka-storage.sh format --feature`: an
/// unknown feature or a level Fjord does not serve is refused before
/// anything is written; accepted levels are the bootstrap file's.
#[test]
fn format_feature_levels() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let props = root.path().join("server.properties");
    std::fs::write(
        &props,
        format!(
            "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0\nlog.dirs={}\n",
            data.display()
        ),
    )
    .unwrap();
    let format = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_fjord"))
            .args([
                "format",
                "-c",
                props.to_str().unwrap(),
                "-t",
                "MkU3OEVBNTcwNTJENDM2Qg",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    for (arg, text) in [
        ("foo.version=1", "Unsupported feature: foo.version"),
        ("eligible.leader.replicas.version=0", "is not supported"),
        ("group.version=2", "is not supported"),
        ("group.version", "The format must be feature=level"),
    ] {
        let out = format(&["--feature", arg]);
        assert!(!out.status.success(), "{arg}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(text), "{arg}: {err}");
        assert!(!data.join("meta.properties").exists(), "{arg}");
    }
    let out = format(&[
        "--feature",
        "transaction.version=0",
        "--feature",
        "metadata.version=33",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file =
        std::fs::read_to_string(data.join("__cluster_metadata/bootstrap-features.json")).unwrap();
    let levels: BTreeMap<String, i16> = serde_json::from_str(&file).unwrap();
    assert_eq!(
        levels,
        BTreeMap::from([
            ("eligible.leader.replicas.version".to_string(), 1),
            ("group.version".to_string(), 1),
            ("metadata.version".to_string(), 33),
            ("share.version".to_string(), 2)
        ])
    );
}
