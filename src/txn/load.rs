//! Loading a transaction coordinator from its `__transaction_state`
//! partition: the replay (last record of each transactional id wins, a
//! tombstone removes it) and the transactions found in a Prepare state,
//! whose markers must be written again before they complete.
//! The coordinator reads the partition in chunks
//! (`shard::internal::replay_log`) when this broker becomes its leader and
//! gives each record to [`Replay::apply_record`].

use std::collections::HashMap;

use bytes::Bytes;

use super::records::{self, TxnLogValue};
use super::state_machine::{pending_markers, Markers, TxnMetadata};
use crate::group::records::RecordError;
use kafka_protocol::records::Record;

/// What one `__transaction_state` partition holds.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Loaded {
    /// The metadata of every transactional id the partition knows.
    pub txns: HashMap<String, TxnMetadata>,
    /// The ids found in PrepareCommit / PrepareAbort / PrepareEpochFence
    /// with the markers still owed (sorted by id).
    pub pending: Vec<(String, Markers)>,
    /// Records read (tombstones and unreadable ones included).
    pub records: usize,
}

/// The replay of a `__transaction_state` partition, one record at a time
/// (control records are skipped by the caller).
#[derive(Debug, Default)]
pub struct Replay {
    txns: HashMap<String, TxnMetadata>,
    records: usize,
}

impl Replay {
    /// Applies one record (`value` `None` is a tombstone). Errors on a record
    /// that does not decode (the caller logs and skips it).
    pub fn apply(&mut self, key: &Bytes, value: Option<&Bytes>) -> Result<(), RecordError> {
        self.records += 1;
        match records::decode(key, value)? {
            (id, Some(value)) => {
                self.txns.insert(id, loaded(value));
            }
            (id, None) => {
                self.txns.remove(&id);
            }
        }
        Ok(())
    }

    /// Applies one stored record of the partition (control records and
    /// records without a key are skipped). Errors on a record that does not
    /// decode (the caller logs and skips it).
    pub fn apply_record(&mut self, r: &Record) -> Result<(), RecordError> {
        match &r.key {
            Some(key) if !r.control => self.apply(key, r.value.as_ref()),
            _ => Ok(()),
        }
    }

    /// The ids found and the markers owed by those in a Prepare state.
    pub fn finish(self) -> Loaded {
        let mut pending: Vec<(String, Markers)> = self
            .txns
            .iter()
            .filter_map(|(id, m)| pending_markers(&m.value).map(|mk| (id.clone(), mk)))
            .collect();
        pending.sort_by(|a, b| a.0.cmp(&b.0));
        Loaded {
            txns: self.txns,
            pending,
            records: self.records,
        }
    }
}

/// A replayed value: the epoch a fence replaced is not persisted, so it is
/// unknown (-1) after a load.
fn loaded(value: TxnLogValue) -> TxnMetadata {
    TxnMetadata {
        value,
        last_epoch: -1,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::txn::records::{txn_key, txn_value, TxnStatus};

    fn value(pid: i64, status: TxnStatus, parts: &[(&str, i32)]) -> TxnLogValue {
        TxnLogValue {
            producer_id: pid,
            producer_epoch: 2,
            timeout_ms: 60_000,
            status,
            partitions: parts.iter().map(|(t, p)| (t.to_string(), *p)).collect(),
            last_update_ms: 5,
            start_ms: 4,
            tagged: Default::default(),
        }
    }

    #[test]
    fn last_record_wins_tombstones_remove_and_prepare_states_are_pending() {
        let mut r = Replay::default();
        let put = |r: &mut Replay, id: &str, v: &TxnLogValue| {
            r.apply(&txn_key(id), Some(&txn_value(v))).unwrap();
        };
        put(&mut r, "a", &value(1, TxnStatus::Ongoing, &[("t", 0)]));
        put(
            &mut r,
            "a",
            &value(1, TxnStatus::PrepareCommit, &[("t", 0)]),
        );
        put(&mut r, "b", &value(2, TxnStatus::Empty, &[]));
        r.apply(&txn_key("b"), None).unwrap();
        put(&mut r, "c", &value(3, TxnStatus::CompleteAbort, &[]));
        put(
            &mut r,
            "d",
            &value(4, TxnStatus::PrepareEpochFence, &[("u", 1)]),
        );
        assert!(r.apply(&Bytes::from_static(&[0, 9]), None).is_err());
        let loaded = r.finish();
        assert_eq!(loaded.records, 7);
        let mut ids: Vec<_> = loaded.txns.keys().cloned().collect();
        ids.sort();
        assert_eq!(ids, ["a", "c", "d"]);
        assert_eq!(loaded.txns["a"].last_epoch, -1);
        let parts = |v: &[(&str, i32)]| -> BTreeSet<(String, i32)> {
            v.iter().map(|(t, p)| (t.to_string(), *p)).collect()
        };
        assert_eq!(
            loaded.pending,
            vec![
                (
                    "a".to_string(),
                    Markers {
                        producer_id: 1,
                        producer_epoch: 2,
                        commit: true,
                        partitions: parts(&[("t", 0)]),
                    }
                ),
                (
                    "d".to_string(),
                    Markers {
                        producer_id: 4,
                        producer_epoch: 2,
                        commit: false,
                        partitions: parts(&[("u", 1)]),
                    }
                ),
            ]
        );
    }
}
