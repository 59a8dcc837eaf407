//! Appends written inline on the reactor with pwritev2(RWF_NOWAIT), on a
//! data directory that takes them (an XFS image loop-mounted there; root
//! only, xfsprogs from scripts/install-test-deps): every acknowledged
//! record survives a kill -9 and an orderly stop, in order, with its value,
//! and the shard's shutdown line shows that appends did go inline (on ext4
//! the same code falls back to the I/O thread, which every other test
//! covers).

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use rdkafka::message::Message;
use rdkafka::producer::FutureRecord;
use rdkafka::Offset;

/// Unmounts the XFS file system mounted on the data directory, after the
/// broker (declared later, dropped first) is gone.
struct Unmount(Option<PathBuf>);

impl Drop for Unmount {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = Command::new("umount").arg("-l").arg(&p).status();
            let _ = std::fs::remove_dir_all(&p);
            // The broker's temporary root, which its drop could not remove
            // while the data directory was a mount point.
            if let Some(root) = p.parent() {
                let _ = std::fs::remove_dir_all(root);
            }
        }
    }
}

/// Makes a 1 GiB XFS image beside `data` and mounts it on `data`.
fn mount_xfs(data: &Path) {
    let img = data.with_file_name("xfs.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let mkfs = Command::new("mkfs.xfs")
        .args(["-q", "-f"])
        .arg(&img)
        .status()
        .expect("mkfs.xfs (xfsprogs: run scripts/install-test-deps)");
    assert!(mkfs.success(), "mkfs.xfs failed");
    let mount = Command::new("mount")
        .args(["-o", "loop"])
        .arg(&img)
        .arg(data)
        .status()
        .unwrap();
    assert!(mount.success(), "mount -o loop of the XFS image failed");
}

fn value(round: usize, i: usize) -> String {
    format!("inline {round}/{i} ").repeat(1 + i % 13)
}

const PER_ROUND: usize = 3000;
const PARTITIONS: i32 = 4;

async fn produce_round(broker: &Broker, topic: &str, round: usize) {
    // Small batches: many appends per partition (the first write of a new
    // file is refused NOWAIT on XFS and goes to the I/O thread).
    let producer = broker.producer(&[
        ("acks", "all"),
        ("linger.ms", "0"),
        ("batch.num.messages", "20"),
    ]);
    let futs: Vec<_> = (0..PER_ROUND)
        .map(|i| {
            let v = value(round, i);
            let k = format!("{}", i % PARTITIONS as usize);
            producer
                .send_result(
                    FutureRecord::to(topic)
                        .partition(i as i32 % PARTITIONS)
                        .key(&k)
                        .payload(&v),
                )
                .map_err(|(e, _)| e)
                .expect("enqueue")
        })
        .collect();
    for f in futs {
        tokio::time::timeout(Duration::from_secs(60), f)
            .await
            .expect("delivery within 60 s")
            .expect("not cancelled")
            .unwrap_or_else(|(e, _)| panic!("delivery failed: {e}"));
    }
}

/// Every record of rounds `0..rounds`, per partition in produce order.
fn check_all(broker: &Broker, topic: &str, rounds: usize) {
    let consumer = broker.consumer(&[]);
    assign(
        &consumer,
        topic,
        &(0..PARTITIONS).collect::<Vec<_>>(),
        Offset::Beginning,
    );
    let msgs = consume_n(&consumer, rounds * PER_ROUND, Duration::from_secs(60));
    for p in 0..PARTITIONS {
        let got: Vec<String> = msgs
            .iter()
            .filter(|m| m.partition() == p)
            .map(|m| String::from_utf8(m.payload().unwrap().to_vec()).unwrap())
            .collect();
        let want: Vec<String> = (0..rounds)
            .flat_map(|r| {
                (0..PER_ROUND)
                    .filter(|i| *i as i32 % PARTITIONS == p)
                    .map(move |i| value(r, i))
            })
            .collect();
        assert_eq!(got.len(), want.len(), "partition {p}: record count");
        assert!(
            got == want,
            "partition {p}: records differ from those acknowledged"
        );
    }
    assert_no_more(&consumer, Duration::from_secs(1));
}

/// The appends the shards' shutdown lines say went inline.
fn inline_appends(log: &str) -> u64 {
    log.lines()
        .filter_map(|l| {
            let (_, rest) = l.split_once("other jobs; ")?;
            rest.split_whitespace().next()?.parse::<u64>().ok()
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inline_appends_on_xfs_survive_kill9_and_restart() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: no XFS loop mount here; the inline append path is not exercised");
        return;
    }
    let mut unmount = Unmount(None);
    let mut broker = Broker::start_prepared(&[], &[], |data| {
        mount_xfs(data);
        unmount.0 = Some(data.to_path_buf());
    });
    let topic = "inline-appends";
    broker.create_topic(topic, PARTITIONS).await;

    produce_round(&broker, topic, 0).await;
    broker.kill9();
    broker.restart();
    check_all(&broker, topic, 1);

    produce_round(&broker, topic, 1).await;
    broker.stop();
    let inline = inline_appends(&broker.stderr_text());
    eprintln!("appends written inline: {inline}");
    assert!(
        inline > 0,
        "no append went inline on XFS:\n{}",
        broker.stderr_text()
    );
    broker.restart();
    check_all(&broker, topic, 2);
    broker.stop();
    drop(broker);
}
