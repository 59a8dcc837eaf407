//! [`join`]: a batch of partition leaders' adds decided one by one, one
//! record for the accepted ones, each add its own answer.

use std::collections::BTreeSet;

use super::*;
use crate::error::KafkaCode;
use crate::txn::records::{TxnLogTagged, TxnLogValue, TxnStatus};

const PID: i64 = 1000;
const EPOCH: i16 = 5;
const START: i64 = 1_000;
const NOW: i64 = 2_000;

fn tp(t: &str, p: i32) -> (String, i32) {
    (t.to_string(), p)
}

/// The metadata of an id in `status`, with partition t-0 when a
/// transaction is open.
fn meta(status: TxnStatus) -> TxnMetadata {
    let open = matches!(
        status,
        TxnStatus::Ongoing
            | TxnStatus::PrepareCommit
            | TxnStatus::PrepareAbort
            | TxnStatus::PrepareEpochFence
    );
    TxnMetadata {
        value: TxnLogValue {
            producer_id: PID,
            producer_epoch: EPOCH,
            timeout_ms: 60_000,
            status,
            partitions: if open {
                [tp("t", 0)].into_iter().collect()
            } else {
                BTreeSet::new()
            },
            last_update_ms: START,
            start_ms: START,
            tagged: TxnLogTagged::default(),
        },
        last_epoch: -1,
    }
}

fn add(producer_id: i64, epoch: i16, partitions: &[i32]) -> LeaderAdd {
    LeaderAdd {
        producer_id,
        epoch,
        partitions: partitions.iter().map(|p| tp("t", *p)).collect(),
    }
}

/// The batch's outcome as text: the record's state and partitions (or
/// "no write"), then each add's answer (its Kafka code for an error).
fn outcome(m: Option<&TxnMetadata>, adds: &[LeaderAdd]) -> String {
    let (write, verdicts) = join(m, adds, NOW);
    let record = match write {
        Some(t) => format!(
            "{} {:?}",
            t.value.status.name(),
            t.value
                .partitions
                .iter()
                .map(|(_, p)| *p)
                .collect::<Vec<_>>()
        ),
        None => "no write".to_string(),
    };
    let answers: Vec<String> = verdicts
        .iter()
        .map(|v| match v {
            Ok(Joined::AlreadyIn) => "in".to_string(),
            Ok(Joined::InWrite) => "write".to_string(),
            Err(e) => format!("err {}", e.code()),
        })
        .collect();
    format!("{record}; {}", answers.join(", "))
}

#[test]
fn a_batch_is_one_record_and_each_add_its_own_answer() {
    let empty = meta(TxnStatus::Empty);
    let ongoing = meta(TxnStatus::Ongoing);
    let complete = meta(TxnStatus::CompleteCommit);
    let prepare = meta(TxnStatus::PrepareCommit);
    let dead = meta(TxnStatus::Dead);
    let rows: Vec<(&str, Option<&TxnMetadata>, Vec<LeaderAdd>, &str)> = vec![
        (
            "two owners open a transaction",
            Some(&empty),
            vec![add(PID, EPOCH, &[1]), add(PID, EPOCH, &[2])],
            "Ongoing [1, 2]; write, write",
        ),
        (
            "after a commit",
            Some(&complete),
            vec![add(PID, EPOCH, &[3]), add(PID, EPOCH, &[1, 2])],
            "Ongoing [1, 2, 3]; write, write",
        ),
        (
            "already in, then a new partition",
            Some(&ongoing),
            vec![add(PID, EPOCH, &[0]), add(PID, EPOCH, &[1])],
            "Ongoing [0, 1]; in, write",
        ),
        (
            "a partition the batch adds, named again",
            Some(&ongoing),
            vec![add(PID, EPOCH, &[1]), add(PID, EPOCH, &[1])],
            "Ongoing [0, 1]; write, write",
        ),
        (
            "all already in",
            Some(&ongoing),
            vec![add(PID, EPOCH, &[0]), add(PID, EPOCH, &[0])],
            "no write; in, in",
        ),
        (
            "an old epoch joined with the current one",
            Some(&empty),
            vec![add(PID, EPOCH - 1, &[1]), add(PID, EPOCH, &[2])],
            "Ongoing [2]; err 90, write",
        ),
        (
            "the current epoch joined with a newer one",
            Some(&ongoing),
            vec![add(PID, EPOCH, &[1]), add(PID, EPOCH + 1, &[2])],
            "Ongoing [0, 1]; write, err 90",
        ),
        (
            "another producer id",
            Some(&ongoing),
            vec![add(PID + 1, EPOCH, &[1]), add(PID, EPOCH, &[2])],
            "Ongoing [0, 2]; err 49, write",
        ),
        (
            "every add refused",
            Some(&ongoing),
            vec![add(PID + 1, EPOCH, &[1]), add(PID, EPOCH - 1, &[2])],
            "no write; err 49, err 90",
        ),
        (
            "markers being written",
            Some(&prepare),
            vec![add(PID, EPOCH, &[1]), add(PID, EPOCH - 1, &[2])],
            "no write; err 51, err 90",
        ),
        (
            "dead",
            Some(&dead),
            vec![add(PID, EPOCH, &[1])],
            "no write; err 48",
        ),
        (
            "unknown transactional id",
            None,
            vec![add(PID, EPOCH, &[1]), add(PID, EPOCH, &[2])],
            "no write; err 49, err 49",
        ),
    ];
    for (name, m, adds, want) in rows {
        assert_eq!(outcome(m, &adds), want, "{name}");
    }
}

/// The record is a transactions-v2 one, opened at `now` from Empty.
#[test]
fn the_record_is_transactions_v2() {
    let empty = meta(TxnStatus::Empty);
    let (write, _) = join(
        Some(&empty),
        &[add(PID, EPOCH, &[1]), add(PID, EPOCH, &[2])],
        NOW,
    );
    let t = write.expect("a record");
    assert_eq!(t.value.tagged.client_tv, TxnVersion::Tv2);
    assert_eq!(t.value.tagged.previous_producer_id, PID);
    assert_eq!((t.value.start_ms, t.value.last_update_ms), (NOW, NOW));
    assert_eq!((t.value.producer_id, t.value.producer_epoch), (PID, EPOCH));
}
