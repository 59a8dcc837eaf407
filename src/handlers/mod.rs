//! Request dispatch: one file per Kafka API. Dispatch reads the versions table
//! in `protocol::versions`, decodes the body with the protocol crate, calls the
//! API's handler and encodes its response.

mod acls;
mod add_offsets_to_txn;
mod add_partitions_to_txn;
mod alter_client_quotas;
mod alter_configs;
mod alter_partition_reassignments;
mod api_versions;
pub mod authz;
mod consumer_group_describe;
mod consumer_group_heartbeat;
mod create_partitions;
mod create_topics;
mod delete_groups;
mod delete_records;
mod delete_topics;
mod describe_client_quotas;
mod describe_cluster;
mod describe_configs;
mod describe_groups;
mod describe_log_dirs;
mod describe_producers;
mod describe_quorum;
mod describe_topic_partitions;
mod describe_transactions;
mod elect_leaders;
mod end_txn;
mod error_codes;
pub mod fetch;
pub mod find_coordinator;
mod group_configs;
mod heartbeat;
mod init_producer_id;
mod join_group;
mod leave_group;
mod list_groups;
mod list_offsets;
mod list_partition_reassignments;
mod list_transactions;
mod metadata;
mod offset_commit;
mod offset_delete;
mod offset_fetch;
mod offset_for_leader_epoch;
pub mod produce;
pub(crate) mod produce_legacy;
pub mod quota;
pub mod sasl;
pub mod share_fetch;
mod share_group_describe;
mod share_group_heartbeat;
mod share_group_offsets;
mod share_state;
mod sync_group;
mod txn_offset_commit;
mod unsupported;
mod update_features;
mod user_scram_credentials;
mod write_txn_markers;

use std::rc::Rc;

use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::Encodable;

pub use self::error_codes::ErrorCodes;
use crate::metrics::shard::RequestTiming;
use crate::protocol::ProtocolError;
use crate::protocol::{encode_response, supported_range, RequestFrame, Response};
use crate::shard::Shard;

/// What the connection does after a request.
#[derive(Debug)]
pub enum Outcome {
    /// Write this response.
    Respond(Response),
    /// Write nothing (Produce with acks=0).
    NoResponse,
    /// Close the connection, logging the reason at warn (malformed input, or a
    /// failed acks=0 produce, as Kafka does so the client refreshes metadata).
    Close(String),
    /// Over a client quota: the response (None for acks=0) carries
    /// `throttle_time_ms`, and the connection reads nothing for that long
    /// (`quota`, KIP-219).
    Throttled(quota::Throttled),
}

/// Encodes `body` as the response to `frame`, or closes the connection when
/// encoding fails. The error codes the response carries are counted
/// (Kafka's `ErrorsPerSec`, see [`ErrorCodes`]): every response built by a
/// handler passes here once.
pub fn respond<T: Encodable + ErrorCodes>(frame: &RequestFrame, body: &T) -> Outcome {
    count_errors(frame, body);
    match encode_response(
        frame.api_key,
        frame.prefix.api_version,
        frame.prefix.correlation_id,
        body,
    ) {
        Ok(r) => Outcome::Respond(r),
        Err(e) => Outcome::Close(e.to_string()),
    }
}

/// Counts the error codes of `body`, the response to `frame`, on this
/// shard (`kafka_network_requestmetrics_errors_total`).
pub fn count_errors<T: ErrorCodes>(frame: &RequestFrame, body: &T) {
    crate::metrics::shard::count_errors(frame.api_key as i16, |each| {
        body.error_codes(frame.prefix.api_version, each)
    });
}

/// Handles one request on `shard` (the shard that owns the connection),
/// for a caller without a socket: the request is counted in the request
/// metrics as sent when its response is ready.
pub async fn dispatch(shard: &Rc<Shard>, frame: RequestFrame) -> Outcome {
    let (outcome, timing) = dispatch_pipelined(shard, frame, None, std::time::Instant::now()).await;
    drop(timing);
    outcome
}

/// As [`dispatch`], for the connection: `received` is when the request's
/// frame was read whole, and the [`RequestTiming`] given with the outcome
/// (None for a request at a version outside the served range that gets no
/// answer: not counted) is to be
/// told when the response's send starts and ends (dropped unsent, it
/// counts the request at the drop). `dispatched` is a signal for the
/// connection: a Produce sends on it once every partition's append is
/// reserved (offsets assigned, writes submitted), so the connection may
/// read and dispatch its next request while this one's writes complete;
/// the order of reservations is then still the order of requests. Every
/// other request, and a Produce that must wait (a transaction to verify
/// first), drops it unsent: the connection then waits for the whole
/// answer.
pub async fn dispatch_pipelined(
    shard: &Rc<Shard>,
    frame: RequestFrame,
    dispatched: Option<futures_channel::oneshot::Sender<()>>,
    received: std::time::Instant,
) -> (Outcome, Option<RequestTiming>) {
    let produce_dispatched = if frame.api_key == ApiKey::Produce {
        dispatched
    } else {
        drop(dispatched);
        None
    };
    let what = (frame.api_key as i16, frame.prefix.api_version);
    if let Some(outcome) = unserved_version(&frame) {
        // Answered at the version asked (ApiVersions' UNSUPPORTED_VERSION
        // answer, Produce v0–v2): counted under it, as Kafka counts every
        // request it answers; a closed connection answers none.
        let timing = matches!(outcome, Outcome::Respond(_)).then(|| {
            let now = std::time::Instant::now();
            RequestTiming::new(what, None, (received, now, now), std::time::Duration::ZERO)
        });
        return (outcome, timing);
    }
    let started = std::time::Instant::now();
    let outcome = serve(shard, &frame, produce_dispatched).await;
    let timing = RequestTiming::new(
        what,
        frame.notes.fetch_follower(),
        (received, started, std::time::Instant::now()),
        frame.notes.remote(),
    );
    (outcome, Some(timing))
}

/// Meters, routes and answers a request at a served version.
async fn serve(
    shard: &Rc<Shard>,
    frame: &RequestFrame,
    produce_dispatched: Option<futures_channel::oneshot::Sender<()>>,
) -> Outcome {
    // Client quotas: measured here, throttled in one place (`quota`). A
    // metered Produce is not pipelined (its reservation signal is dropped):
    // its throttle, known only when it is done, must mute the connection
    // before the next request is read, as Kafka's one request at a time
    // per connection does (KIP-219).
    let metered = quota::meter(shard, frame);
    let produce_dispatched = produce_dispatched.filter(|_| metered.is_none());
    let (routed, busy) = if metered.is_some() {
        quota::timed(Box::pin(route(shard, frame, produce_dispatched))).await
    } else {
        (
            route(shard, frame, produce_dispatched).await,
            std::time::Duration::ZERO,
        )
    };
    let result = match routed {
        Some(result) => result,
        None => return unsupported::handle(frame),
    };
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(e) => Outcome::Close(e.to_string()),
    };
    match metered {
        Some(m) => m.finish(shard, frame, outcome, busy).await,
        None => outcome,
    }
}

/// The answer to a request at a version outside the served range (which
/// needs no shard): Produce v0–v2 gets UNSUPPORTED_VERSION per partition
/// (`produce_legacy`), ApiVersions its UNSUPPORTED_VERSION answer listing
/// the served ranges (KIP-511), any other API UNSUPPORTED_VERSION (35) or a
/// close. None when the version is served.
pub fn unserved_version(frame: &RequestFrame) -> Option<Outcome> {
    let version = frame.prefix.api_version;
    let supported =
        supported_range(frame.api_key).is_some_and(|(lo, hi)| (lo..=hi).contains(&version));
    if supported {
        return None;
    }
    Some(
        if frame.api_key == ApiKey::Produce && (0..3).contains(&version) {
            produce_legacy::handle(frame)
        } else if frame.api_key == ApiKey::ApiVersions {
            api_versions::unsupported_version(frame)
        } else {
            unsupported::handle(frame)
        },
    )
}

/// The dispatch table, written once: each served API and the call that
/// answers it. It gives both `is_routed` and `route`'s `match`, so the
/// unit test `every_supported_api_has_a_dispatch_arm` can hold it against
/// the versions table (`protocol::versions::SUPPORTED_APIS`).
macro_rules! dispatch_table {
    ($shard:ident, $frame:ident, $produce_dispatched:ident;
     $($key:ident => $call:expr,)*) => {
        /// Whether dispatch has an arm for `key` (the rest go to
        /// `unsupported`).
        #[cfg(test)]
        fn is_routed(key: ApiKey) -> bool {
            matches!(key, $(ApiKey::$key)|*)
        }

        /// Calls the handler of `frame`'s API; None when dispatch has no arm
        /// for it.
        async fn route(
            $shard: &Rc<Shard>,
            $frame: &RequestFrame,
            $produce_dispatched: Option<futures_channel::oneshot::Sender<()>>,
        ) -> Option<HandlerResult> {
            Some(match $frame.api_key {
                $(ApiKey::$key => $call,)*
                _ => {
                    drop($produce_dispatched);
                    return None;
                }
            })
        }
    };
}

dispatch_table! { shard, frame, produce_dispatched;
    ApiVersions => api_versions::handle(shard, frame),
    Metadata => metadata::handle(shard, frame).await,
    DescribeCluster => describe_cluster::handle(shard, frame),
    DescribeTopicPartitions => describe_topic_partitions::handle(shard, frame),
    DescribeQuorum => describe_quorum::handle(shard, frame).await,
    CreateTopics => create_topics::handle(shard, frame).await,
    DeleteTopics => delete_topics::handle(shard, frame).await,
    CreatePartitions => create_partitions::handle(shard, frame).await,
    ElectLeaders => elect_leaders::handle(shard, frame).await,
    AlterPartitionReassignments => alter_partition_reassignments::handle(shard, frame).await,
    ListPartitionReassignments => list_partition_reassignments::handle(shard, frame).await,
    Produce => produce::handle(shard, frame, produce_dispatched).await,
    Fetch => fetch::handle(shard, frame).await,
    ListOffsets => list_offsets::handle(shard, frame).await,
    OffsetForLeaderEpoch => offset_for_leader_epoch::handle(shard, frame).await,
    FindCoordinator => find_coordinator::handle(shard, frame).await,
    JoinGroup => join_group::handle(shard, frame).await,
    SyncGroup => sync_group::handle(shard, frame).await,
    Heartbeat => heartbeat::handle(shard, frame).await,
    ConsumerGroupHeartbeat => consumer_group_heartbeat::handle(shard, frame).await,
    ConsumerGroupDescribe => consumer_group_describe::handle(shard, frame).await,
    ShareGroupHeartbeat => share_group_heartbeat::handle(shard, frame).await,
    ShareGroupDescribe => share_group_describe::handle(shard, frame).await,
    LeaveGroup => leave_group::handle(shard, frame).await,
    OffsetCommit => offset_commit::handle(shard, frame).await,
    OffsetFetch => offset_fetch::handle(shard, frame).await,
    ListGroups => list_groups::handle(shard, frame).await,
    DescribeGroups => describe_groups::handle(shard, frame).await,
    DeleteGroups => delete_groups::handle(shard, frame).await,
    OffsetDelete => offset_delete::handle(shard, frame).await,
    DescribeConfigs => describe_configs::handle(shard, frame).await,
    AlterConfigs => alter_configs::handle_alter(shard, frame).await,
    IncrementalAlterConfigs => alter_configs::handle_incremental(shard, frame).await,
    DeleteRecords => delete_records::handle(shard, frame).await,
    DescribeLogDirs => describe_log_dirs::handle(shard, frame).await,
    InitProducerId => init_producer_id::handle(shard, frame).await,
    DescribeProducers => describe_producers::handle(shard, frame).await,
    AddPartitionsToTxn => add_partitions_to_txn::handle(shard, frame).await,
    AddOffsetsToTxn => add_offsets_to_txn::handle(shard, frame).await,
    EndTxn => end_txn::handle(shard, frame).await,
    TxnOffsetCommit => txn_offset_commit::handle(shard, frame).await,
    DescribeTransactions => describe_transactions::handle(shard, frame).await,
    ListTransactions => list_transactions::handle(shard, frame).await,
    WriteTxnMarkers => write_txn_markers::handle(shard, frame).await,
    SaslHandshake => sasl::without_session(frame),
    SaslAuthenticate => sasl::without_session(frame),
    DescribeUserScramCredentials => user_scram_credentials::describe(shard, frame),
    AlterUserScramCredentials => user_scram_credentials::alter(shard, frame).await,
    CreateAcls => acls::create(shard, frame).await,
    DescribeAcls => acls::describe(shard, frame),
    DeleteAcls => acls::delete(shard, frame).await,
    DescribeClientQuotas => describe_client_quotas::handle(shard, frame),
    AlterClientQuotas => alter_client_quotas::handle(shard, frame).await,
    UpdateFeatures => update_features::handle(shard, frame).await,
    ShareFetch => share_fetch::handle_fetch(shard, frame).await,
    ShareAcknowledge => share_fetch::handle_acknowledge(shard, frame).await,
    InitializeShareGroupState => share_state::initialize(shard, frame).await,
    ReadShareGroupState => share_state::read(shard, frame).await,
    WriteShareGroupState => share_state::write(shard, frame).await,
    DeleteShareGroupState => share_state::delete(shard, frame).await,
    ReadShareGroupStateSummary => share_state::summary(shard, frame).await,
    DescribeShareGroupOffsets => share_group_offsets::describe(shard, frame).await,
    AlterShareGroupOffsets => share_group_offsets::alter(shard, frame).await,
    DeleteShareGroupOffsets => share_group_offsets::delete(shard, frame).await,
}

// The controller call lives with the shards (the controller is shard 0's);
// handlers keep calling it by this path.
/// Sends `req` to the active controller (through shard 0); a failure to get
/// an answer is a [`MetadataError::Controller`](crate::cluster::error::MetadataError::Controller) (REQUEST_TIMED_OUT, 7).
pub async fn ask_controller(
    shard: &Rc<Shard>,
    req: crate::cluster::control::ControllerRequest,
) -> Result<crate::cluster::control::ControllerReply, crate::cluster::error::MetadataError> {
    crate::shard::submit(shard, req)
        .await
        .map_err(crate::cluster::error::MetadataError::from)
}

/// Decode errors close the connection; this alias keeps handler signatures short.
pub type HandlerResult = Result<Outcome, ProtocolError>;

/// The shard coordinating `group_id`: the owner of its `__consumer_offsets`
/// partition. Errors with [`crate::cluster::error::CoordinatorLookupError::TopicMissing`]
/// (COORDINATOR_NOT_AVAILABLE) while that topic does not exist yet
/// (FindCoordinator creates it).
pub fn group_owner(
    shard: &Shard,
    group_id: &str,
) -> Result<usize, crate::cluster::error::CoordinatorLookupError> {
    let n = shard.config.group.offsets_topic_partitions;
    if shard
        .metadata()
        .topic(crate::group::OFFSETS_TOPIC)
        .is_none()
    {
        return Err(
            crate::cluster::error::CoordinatorLookupError::TopicMissing {
                topic: crate::group::OFFSETS_TOPIC,
            },
        );
    }
    let p = crate::group::records::partition_for_group(group_id, n);
    crate::cluster::leadership::coordinator_here(
        &shard.metadata(),
        shard.config.node_id,
        crate::group::OFFSETS_TOPIC,
        p,
    )?;
    Ok(shard.owner(crate::group::OFFSETS_TOPIC, p))
}

/// The client id of a request, or "".
pub fn client_id(frame: &RequestFrame) -> String {
    frame
        .header
        .client_id
        .as_ref()
        .map(|c| c.to_string())
        .unwrap_or_default()
}

/// The client host as Kafka shows it (`/ip`).
pub fn client_host(frame: &RequestFrame) -> String {
    frame
        .peer
        .map(|p| format!("/{}", p.ip()))
        .unwrap_or_default()
}

pub use crate::txn::verify::txn_owner;

/// The codes the work below a handler gave for the items of its request
/// (one per item, in request order), taken one by one while the response is
/// built in the request's shape: an item left without a code is answered
/// [`AnswerError::Lost`](crate::shard::error::AnswerError::Lost)'s code, never
/// NONE.
pub struct Answers(std::vec::IntoIter<i16>);

impl Answers {
    /// The codes, in request order.
    pub fn new(codes: Vec<i16>) -> Answers {
        Answers(codes.into_iter())
    }

    /// The codes, in request order, of items answered before routing
    /// (`Some`: refused by an ACL) and of those `decided` by the owner (in
    /// order, one for each `None`).
    pub fn merged(pre: &[Option<i16>], decided: Vec<i16>) -> Answers {
        use crate::error::KafkaCode;
        use crate::shard::error::AnswerError;
        let mut decided = decided.into_iter();
        Answers::new(
            pre.iter()
                .map(|p| {
                    p.unwrap_or_else(|| decided.next().unwrap_or_else(|| AnswerError::Lost.code()))
                })
                .collect(),
        )
    }

    /// The code of the next item.
    pub fn next_code(&mut self) -> i16 {
        use crate::error::KafkaCode;
        use crate::shard::error::AnswerError;
        self.0.next().unwrap_or_else(|| AnswerError::Lost.code())
    }
}

/// PRODUCER_FENCED (90) is newer than some request versions (KIP-588):
/// below `first_version` it is answered as INVALID_PRODUCER_EPOCH (47), as
/// Kafka does for older clients.
pub fn fenced_for_version(code: i16, version: i16, first_version: i16) -> i16 {
    use kafka_protocol::ResponseError as E;
    if code == E::ProducerFenced.code() && version < first_version {
        E::InvalidProducerEpoch.code()
    } else {
        code
    }
}

#[cfg(test)]
mod answers_tests {
    use super::Answers;

    /// Items past the last code are answered UNKNOWN_SERVER_ERROR, not NONE.
    #[test]
    fn a_missing_answer_is_an_error() {
        let mut a = Answers::new(vec![0, 3]);
        assert_eq!([a.next_code(), a.next_code(), a.next_code()], [0, 3, -1]);
        assert_eq!(Answers::new(Vec::new()).next_code(), -1);
    }
}

#[cfg(test)]
mod dispatch_tests {
    use super::is_routed;
    use crate::protocol::versions::SUPPORTED_APIS;
    use kafka_protocol::messages::ApiKey;

    /// Every API the versions table serves (and ApiVersions lists) has a
    /// dispatch arm, and dispatch has no arm for an API the table does not
    /// serve (such a request is answered as unsupported before dispatch).
    #[test]
    fn every_supported_api_has_a_dispatch_arm() {
        for &(key, _, _) in SUPPORTED_APIS {
            assert!(
                is_routed(key),
                "{key:?} is in SUPPORTED_APIS but has no dispatch arm"
            );
        }
        for k in 0..=i16::MAX {
            let Ok(key) = ApiKey::try_from(k) else {
                continue;
            };
            assert_eq!(
                is_routed(key),
                SUPPORTED_APIS.iter().any(|(s, _, _)| *s == key),
                "{key:?}"
            );
        }
    }
}

/// The controller id Metadata and DescribeCluster give (see
/// `MetadataImage::client_controller_id`): this broker when the active
/// controller has not answered its heartbeats for `broker.session.timeout.ms`.
fn client_controller_id(shard: &Shard, image: &crate::cluster::metadata::MetadataImage) -> i32 {
    let window = i64::try_from(shard.config.cluster.broker_session_timeout_ms).unwrap_or(i64::MAX);
    let reachable = crate::cluster::quorum::lifecycle::controller_answered_within(
        crate::shard::now_ms(),
        window,
    );
    image.client_controller_id(shard.config.node_id, reachable)
}
