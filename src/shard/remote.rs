//! What the domain asks of other brokers: transaction markers for the
//! partitions another broker leads (Kafka's coordinator sends them with
//! WriteTxnMarkers), and share-partition state calls to the share
//! coordinator of another broker (Kafka's persister, KIP-932), and the
//! dead-letter records of share groups (KIP-1191) for a DLQ partition another
//! broker leads. The shard layer speaks no protocol, so the way there
//! is a [`RemoteBrokers`] installed at start-up by `replication::remote`.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use super::Shard;
use crate::share::state::{ReadAnswer, StateKey, WriteRequest};

/// COMMIT or ABORT markers for partitions one other broker leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteMarkers {
    /// The transaction's producer id.
    pub producer_id: i64,
    /// Its producer epoch.
    pub producer_epoch: i16,
    /// COMMIT (true) or ABORT (false).
    pub commit: bool,
    /// The coordinator epoch written in the markers.
    pub coordinator_epoch: i32,
    /// (topic, partition) of each marker.
    pub partitions: Vec<(String, i32)>,
}

/// Why markers were not written on another broker.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteError {
    /// No way to the broker was installed (start-up not finished):
    /// COORDINATOR_NOT_AVAILABLE (15).
    #[error("no broker-to-broker client on this shard")]
    NotInstalled,
    /// The broker could not be reached, or did not answer in time:
    /// COORDINATOR_NOT_AVAILABLE (15).
    #[error("broker {broker} unreachable: {why}")]
    Unreachable {
        /// The broker.
        broker: i32,
        /// What failed.
        why: String,
    },
    /// The broker refused a marker: the code it answered with.
    #[error("{topic}-{partition}: broker {broker} answered error {code}")]
    Refused {
        /// The broker.
        broker: i32,
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// The Kafka error code it answered.
        code: i16,
    },
}

/// One share-partition's call to the share coordinator of another broker,
/// sent as the inter-broker RPC of the same name (v0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareStateCall {
    /// InitializeShareGroupState at (state epoch, start offset; -1: chosen
    /// by `share.auto.offset.reset` on first read).
    Initialize {
        /// The state epoch.
        state_epoch: i32,
        /// The start offset.
        start_offset: i64,
    },
    /// ReadShareGroupState at the share-partition leader's epoch.
    Read {
        /// The leader epoch.
        leader_epoch: i32,
    },
    /// WriteShareGroupState.
    Write(WriteRequest),
    /// DeleteShareGroupState.
    Delete,
    /// ReadShareGroupStateSummary (DescribeShareGroupOffsets).
    Summary,
}

/// What a [`ShareStateCall`] answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareStateReply {
    /// Initialize, Write or Delete succeeded.
    Done,
    /// Read's answer.
    Read(ReadAnswer),
    /// Summary's answer: (state epoch, leader epoch, start offset).
    Summary(crate::share::state::SummaryAnswer),
}

/// A future of a remote call, run on the calling shard.
pub type RemoteFuture<T> = Pin<Box<dyn Future<Output = T>>>;

/// The calls the domain makes to other brokers.
pub trait RemoteBrokers {
    /// Writes `markers` on broker `leader` (which leads their partitions);
    /// a partition that knows a newer epoch of the producer is skipped, as
    /// locally. Errors with the first failure.
    fn write_markers(
        &self,
        shard: Rc<Shard>,
        leader: i32,
        markers: RemoteMarkers,
    ) -> RemoteFuture<Result<(), RemoteError>>;

    /// Asks broker `coordinator` (the transaction coordinator of
    /// `transactional_id`) whether each of `partitions` is in the open
    /// transaction of (`producer_id`, `epoch`), in one AddPartitionsToTxn v4
    /// `verify_only` request (KIP-890), or with `add` (transactions v2,
    /// KIP-890 part 2) has it add them, the same request without
    /// `verify_only`. Gives the coordinator's code per partition, in order
    /// (0: it is, or was added), or why it could not be asked.
    #[allow(clippy::too_many_arguments)]
    fn verify_in_txn(
        &self,
        shard: Rc<Shard>,
        coordinator: i32,
        transactional_id: std::sync::Arc<str>,
        producer_id: i64,
        epoch: i16,
        partitions: Vec<(std::sync::Arc<str>, i32)>,
        add: bool,
    ) -> RemoteFuture<Result<Vec<i16>, RemoteError>>;

    /// Sends `call` for the share-partition `key` to broker `broker` (the
    /// leader of its `__share_group_state` partition). Gives its answer, or
    /// `Refused` with the code the broker answered (NOT_COORDINATOR,
    /// COORDINATOR_LOAD_IN_PROGRESS, INVALID_REQUEST, FENCED_*), or why it
    /// could not be asked.
    fn share_state(
        &self,
        shard: Rc<Shard>,
        broker: i32,
        key: StateKey,
        call: ShareStateCall,
    ) -> RemoteFuture<Result<ShareStateReply, RemoteError>>;

    /// Appends `records` (whole RecordBatch bytes, not transactional) to
    /// `topic`-`partition` on broker `leader`, which leads it, with a
    /// Produce (acks=-1): the share group dead-letter writer's way to a
    /// DLQ partition led elsewhere (KIP-1191). Errors: `Refused` with the
    /// partition's code, or why it could not be asked.
    fn produce(
        &self,
        shard: Rc<Shard>,
        leader: i32,
        topic: std::sync::Arc<str>,
        partition: i32,
        records: bytes::Bytes,
    ) -> RemoteFuture<Result<(), RemoteError>>;
}
