//! The transaction coordinator through its Rust API
//! (`fjord::txn::coordinator`), on the shard that coordinates each
//! transactional id, as the transaction handlers forward to it. Errors are
//! given as their Kafka codes (`KafkaCode`), the codes a client would get.

use std::collections::BTreeMap;

use fjord::shard::partition::ProducerSummary;
use fjord::txn::coordinator::{self, TxnDescription};
use fjord::txn::records::TxnVersion;
use fjord::txn::TRANSACTION_STATE_TOPIC;

use super::{KafkaCode, Node};

/// Codes a client retries (COORDINATOR_LOAD_IN_PROGRESS,
/// COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS).
const RETRIABLE: [i16; 4] = [14, 15, 16, 51];

impl Node {
    /// Creates `__transaction_state` as the first FindCoordinator of a
    /// transactional id does, and waits until both shards have loaded
    /// their partitions of it.
    pub fn txn_ready(&self) {
        let n = self.on(0, |s| async move {
            fjord::handlers::find_coordinator::ensure_transaction_state_topic(&s)
                .await
                .unwrap_or_else(|e| panic!("creating {TRANSACTION_STATE_TOPIC}: {e}"));
            s.config.txn.state_log_partitions
        });
        self.wait_served(TRANSACTION_STATE_TOPIC, n);
        self.wait_until("the transaction coordinators loaded", || {
            (0..2).all(|shard| {
                self.on(shard, |_| async {
                    !coordinator::TransactionCoordinator::here().any_loading()
                })
            })
        });
    }

    /// The shard coordinating transactional id `id`.
    pub fn txn_shard(&self, id: &str) -> usize {
        let id = id.to_string();
        self.on(0, move |s| async move {
            fjord::handlers::txn_owner(&s, &id).unwrap_or_else(|e| panic!("{id}: {e}"))
        })
    }

    /// InitProducerId for `id` with `timeout_ms`, once: (producer id,
    /// epoch) or the error code.
    pub fn try_init_producer_id(&self, id: &str, timeout_ms: i32) -> Result<(i64, i16), i16> {
        let id = id.to_string();
        self.on(self.txn_shard(&id), move |s| async move {
            coordinator::init_producer_id(s, id, timeout_ms, (-1, -1))
                .await
                .map_err(|e| e.code())
        })
    }

    /// InitProducerId for `id` with `timeout_ms`, retried as a client
    /// retries: (producer id, epoch).
    pub fn init_producer_id(&self, id: &str, timeout_ms: i32) -> (i64, i16) {
        self.poll(&format!("InitProducerId({id})"), || {
            match self.try_init_producer_id(id, timeout_ms) {
                Ok(p) => Ok(p),
                Err(c) if RETRIABLE.contains(&c) => Err(format!("error {c}")),
                Err(c) => panic!("InitProducerId({id}): error {c}"),
            }
        })
    }

    /// AddPartitionsToTxn: adds `partitions` to the open transaction of
    /// `id` (opening one); 0 or the error code.
    pub fn add_partitions(
        &self,
        id: &str,
        pid: i64,
        epoch: i16,
        partitions: &[(&str, i32)],
    ) -> i16 {
        let id = id.to_string();
        let parts: Vec<(String, i32)> = partitions
            .iter()
            .map(|(t, p)| (t.to_string(), *p))
            .collect();
        self.on(self.txn_shard(&id), move |s| async move {
            coordinator::add_partitions(s, id, pid, epoch, parts, TxnVersion::Tv0)
                .await
                .map_or_else(|e| e.code(), |()| 0)
        })
    }

    /// AddOffsetsToTxn for `group`: adds its `__consumer_offsets` partition
    /// to the open transaction of `id`; 0 or the error code.
    pub fn add_offsets(&self, id: &str, pid: i64, epoch: i16, group: &str) -> i16 {
        let p = self.offsets_partition(group);
        self.add_partitions(id, pid, epoch, &[(fjord::group::OFFSETS_TOPIC, p)])
    }

    /// AddPartitionsToTxn with `verify_only` (KIP-890): whether `partition`
    /// is in the open transaction of `id`; 0 or the error code.
    pub fn verify_partition(&self, id: &str, pid: i64, epoch: i16, partition: (&str, i32)) -> i16 {
        let id = id.to_string();
        let part = (partition.0.to_string(), partition.1);
        self.on(self.txn_shard(&id), move |s| async move {
            coordinator::verify_partition(&s, &id, pid, epoch, &part)
                .map_or_else(|e| e.code(), |()| 0)
        })
    }

    /// EndTxn: commits or aborts the open transaction of `id`; 0 or the
    /// error code.
    pub fn end_txn(&self, id: &str, pid: i64, epoch: i16, commit: bool) -> i16 {
        let id = id.to_string();
        self.on(self.txn_shard(&id), move |s| async move {
            coordinator::end_txn(s, id, pid, epoch, commit, TxnVersion::Tv0)
                .await
                .map_or_else(|e| e.code(), |_| 0)
        })
    }

    /// EndTxn v5 (transactions v2): the (producer id, epoch) to continue
    /// with, or the error code.
    pub fn end_txn_v2(
        &self,
        id: &str,
        pid: i64,
        epoch: i16,
        commit: bool,
    ) -> Result<(i64, i16), i16> {
        let id = id.to_string();
        self.on(self.txn_shard(&id), move |s| async move {
            coordinator::end_txn(s, id, pid, epoch, commit, TxnVersion::Tv2)
                .await
                .map_err(|e| e.code())
        })
    }

    /// DescribeTransactions for `id`: (error code, state, producer id,
    /// epoch, timeout, start, partitions).
    pub fn describe_txn(&self, id: &str) -> TxnView {
        let id = id.to_string();
        self.on(self.txn_shard(&id), move |s| async move {
            TxnView::from(coordinator::describe(&s, &id))
        })
    }

    /// ListTransactions over both shards: transactional id → state, of the
    /// ids in one of `states` (all when empty) with one of `pids` (all when
    /// empty).
    pub fn list_txns(&self, states: &[&str], pids: &[i64]) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for shard in 0..2 {
            let states: Vec<String> = states.iter().map(|s| s.to_string()).collect();
            let pids = pids.to_vec();
            let listed = self.on(shard, move |_| async move {
                coordinator::list(&states, &pids, -1)
                    .map(|l| {
                        l.into_iter()
                            .map(|d| (d.transactional_id, d.state))
                            .collect::<Vec<_>>()
                    })
                    .map_err(|e| e.code())
            });
            let listed = listed.unwrap_or_else(|c| panic!("ListTransactions: error {c}"));
            out.extend(listed.into_iter().map(|(id, st)| (id, st.to_string())));
        }
        out
    }

    /// The active producers of `topic`-`partition` (DescribeProducers).
    pub fn describe_producers(&self, topic: &str, partition: i32) -> Vec<ProducerSummary> {
        self.with_partition(topic, partition, |p| p.describe_producers())
    }

    /// TxnOffsetCommit of `offsets` ((topic, partition, offset)) for
    /// `group` in the open transaction of `id`, as the handler runs it:
    /// the group's partition notes the producer being verified, the
    /// transaction coordinator confirms the offsets partition is in the
    /// transaction, then the group coordinator writes the offsets. One
    /// code per partition.
    pub fn txn_offset_commit(
        &self,
        id: &str,
        group: &str,
        pid: i64,
        epoch: i16,
        offsets: &[(&str, i32, i64)],
    ) -> Vec<i16> {
        let n = offsets.len();
        let g = group.to_string();
        let begun = self.on(self.group_shard(group), move |s| async move {
            fjord::group::coordinator::begin_txn_commit(&s, &g, (pid, epoch)).map_err(|e| e.code())
        });
        if let Err(c) = begun {
            return vec![c; n];
        }
        let verified = self.verify_partition(
            id,
            pid,
            epoch,
            (fjord::group::OFFSETS_TOPIC, self.offsets_partition(group)),
        );
        if verified != 0 {
            return vec![verified; n];
        }
        let parts = self.commit_partitions(offsets);
        let g = group.to_string();
        self.on(self.group_shard(group), move |s| async move {
            fjord::group::coordinator::txn_commit(
                s,
                g,
                (pid, epoch),
                -1,
                String::new(),
                None,
                parts,
            )
            .await
            .iter()
            .map(fjord::error::group_code)
            .collect()
        })
    }
}

/// The parts of a DescribeTransactions answer the scenarios compare.
#[derive(Debug, Clone, PartialEq)]
pub struct TxnView {
    /// Error code (0: none).
    pub error_code: i16,
    /// State name.
    pub state: String,
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// `transaction.timeout.ms`.
    pub timeout_ms: i32,
    /// Start of the transaction (ms).
    pub start_ms: i64,
    /// Partitions in the transaction.
    pub partitions: std::collections::BTreeSet<(String, i32)>,
}

impl From<TxnDescription> for TxnView {
    fn from(d: TxnDescription) -> TxnView {
        TxnView {
            error_code: d.error.as_ref().map_or(0, |e| e.code()),
            state: d.state.to_string(),
            producer_id: d.producer_id,
            producer_epoch: d.producer_epoch,
            timeout_ms: d.timeout_ms,
            start_ms: d.start_ms,
            partitions: d.partitions,
        }
    }
}

/// A transactional producer as a client drives one: InitProducerId, then
/// per transaction AddPartitionsToTxn before the first batch on a
/// partition, transactional batches with sequences that go on per
/// partition, and EndTxn.
pub struct TxnProducer {
    /// `transactional.id`.
    pub id: String,
    /// Producer id.
    pub pid: i64,
    /// Producer epoch.
    pub epoch: i16,
    seqs: std::collections::HashMap<(String, i32), i32>,
    added: std::collections::BTreeSet<(String, i32)>,
}

impl TxnProducer {
    /// InitProducerId for `id` with `transaction.timeout.ms` = `timeout_ms`.
    pub fn init(node: &Node, id: &str, timeout_ms: i32) -> TxnProducer {
        let (pid, epoch) = node.init_producer_id(id, timeout_ms);
        TxnProducer {
            id: id.to_string(),
            pid,
            epoch,
            seqs: Default::default(),
            added: Default::default(),
        }
    }

    /// Sends `values` to `topic`-`partition` in the open transaction (one
    /// batch; the partition added first if new to it); the base offset.
    pub fn send(&mut self, node: &Node, topic: &str, partition: i32, values: &[String]) -> i64 {
        let key = (topic.to_string(), partition);
        if !self.added.contains(&key) {
            let code = node.add_partitions(&self.id, self.pid, self.epoch, &[(topic, partition)]);
            assert_eq!(
                code, 0,
                "AddPartitionsToTxn({}, {topic}-{partition})",
                self.id
            );
            self.added.insert(key.clone());
        }
        let seq = self.seqs.entry(key).or_insert(0);
        let ts = super::now_ms();
        let recs: Vec<super::Rec> = values
            .iter()
            .map(|v| (Some("k".to_string()), Some(v.clone()), ts))
            .collect();
        let records = super::encode(self.pid, self.epoch, *seq, &recs, true, false);
        *seq += values.len() as i32;
        let a = node.produce(1, topic, partition, records, Some(&self.id));
        assert!(
            a.error.is_none(),
            "transactional produce of {}: {:?}",
            self.id,
            a.error
        );
        a.base_offset
    }

    /// EndTxn (commit); 0 or the error code.
    pub fn commit(&mut self, node: &Node) -> i16 {
        self.added.clear();
        node.end_txn(&self.id, self.pid, self.epoch, true)
    }

    /// EndTxn (abort); 0 or the error code.
    pub fn abort(&mut self, node: &Node) -> i16 {
        self.added.clear();
        node.end_txn(&self.id, self.pid, self.epoch, false)
    }
}
