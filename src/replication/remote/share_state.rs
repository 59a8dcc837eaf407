//! Share-partition state calls to the share coordinator of another broker
//! (Kafka's persister, KIP-932): InitializeShareGroupState,
//! ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState and
//! ReadShareGroupStateSummary v0,
//! one share-partition per request, on the inter-broker listener (the
//! other broker checks CLUSTER_ACTION).

use std::rc::Rc;

use kafka_protocol::messages::{
    delete_share_group_state_request as del, initialize_share_group_state_request as init,
    read_share_group_state_request as read, read_share_group_state_summary_request as summary,
    write_share_group_state_request as write, DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest, ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest, WriteShareGroupStateRequest,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::{Pool, Remote};
use crate::shard::remote::{RemoteError, ShareStateCall, ShareStateReply};
use crate::shard::Shard;
use crate::share::partition::StateBatch;
use crate::share::state::{ReadAnswer, StateKey};

/// The one partition asked, found in the answer: `found` is it with its
/// error code. Errors: `Refused` with that code unless 0, or with
/// UNKNOWN_SERVER_ERROR when the answer lacks the partition.
fn answered<'a, P>(
    broker: i32,
    key: &StateKey,
    found: Option<(&'a P, i16)>,
) -> Result<&'a P, RemoteError> {
    let code = match found {
        Some((p, 0)) => return Ok(p),
        Some((_, code)) => code,
        None => ResponseError::UnknownServerError.code(),
    };
    Err(RemoteError::Refused {
        broker,
        topic: format!("{}:{}", key.0, key.1),
        partition: key.2,
        code,
    })
}

/// A request of type `$req` for the one share-partition `$key` of group
/// `$group` (`$data` its topic entry, `$part` its partition entry, filled
/// further by `$fill` through `$p`).
macro_rules! one_partition {
    ($req:ty, $data:ty, $part:ty, $group:expr, $key:expr, |$p:ident| $fill:block) => {{
        let mut $p = <$part>::default();
        $p.partition = $key.2;
        $fill
        let mut t = <$data>::default();
        t.topic_id = $key.1;
        t.partitions = vec![$p];
        let mut req = <$req>::default();
        req.group_id = $group;
        req.topics = vec![t];
        req
    }};
}

/// The entry of the asked partition in answer `$resp` (see [`answered`]).
macro_rules! partition_of {
    ($resp:expr, $broker:expr, $key:expr) => {
        answered(
            $broker,
            &$key,
            $resp
                .results
                .iter()
                .flat_map(|r| r.partitions.iter())
                .find(|p| p.partition == $key.2)
                .map(|p| (p, p.error_code)),
        )
    };
}

/// Sends `call` for `key` to `broker` and reads its answer.
pub(super) async fn send(
    idle: &Pool,
    shard: &Rc<Shard>,
    broker: i32,
    key: StateKey,
    call: ShareStateCall,
) -> Result<ShareStateReply, RemoteError> {
    let group = StrBytes::from_string(key.0.clone());
    match call {
        ShareStateCall::Initialize {
            state_epoch,
            start_offset,
        } => {
            let req = one_partition!(
                InitializeShareGroupStateRequest,
                init::InitializeStateData,
                init::PartitionData,
                group,
                key,
                |p| {
                    p.state_epoch = state_epoch;
                    p.start_offset = start_offset;
                }
            );
            let resp = Remote::call(idle, shard, broker, &req, 0).await?;
            partition_of!(resp, broker, key).map(|_| ShareStateReply::Done)
        }
        ShareStateCall::Read { leader_epoch } => {
            let req = one_partition!(
                ReadShareGroupStateRequest,
                read::ReadStateData,
                read::PartitionData,
                group,
                key,
                |p| {
                    p.leader_epoch = leader_epoch;
                }
            );
            let resp = Remote::call(idle, shard, broker, &req, 0).await?;
            let p = partition_of!(resp, broker, key)?;
            Ok(ShareStateReply::Read(ReadAnswer {
                state_epoch: p.state_epoch,
                start_offset: p.start_offset,
                batches: p
                    .state_batches
                    .iter()
                    .map(|b| StateBatch {
                        first: b.first_offset,
                        last: b.last_offset,
                        state: b.delivery_state,
                        delivery_count: b.delivery_count,
                    })
                    .collect(),
            }))
        }
        ShareStateCall::Write(w) => {
            let req = one_partition!(
                WriteShareGroupStateRequest,
                write::WriteStateData,
                write::PartitionData,
                group,
                key,
                |p| {
                    p.state_epoch = w.state_epoch;
                    p.leader_epoch = w.leader_epoch;
                    p.start_offset = w.start_offset;
                    p.state_batches = w
                        .batches
                        .iter()
                        .map(|b| {
                            let mut sb = write::StateBatch::default();
                            sb.first_offset = b.first;
                            sb.last_offset = b.last;
                            sb.delivery_state = b.state;
                            sb.delivery_count = b.delivery_count;
                            sb
                        })
                        .collect();
                }
            );
            let resp = Remote::call(idle, shard, broker, &req, 0).await?;
            partition_of!(resp, broker, key).map(|_| ShareStateReply::Done)
        }
        ShareStateCall::Delete => {
            let req = one_partition!(
                DeleteShareGroupStateRequest,
                del::DeleteStateData,
                del::PartitionData,
                group,
                key,
                |p| {}
            );
            let resp = Remote::call(idle, shard, broker, &req, 0).await?;
            partition_of!(resp, broker, key).map(|_| ShareStateReply::Done)
        }
        ShareStateCall::Summary => {
            let req = one_partition!(
                ReadShareGroupStateSummaryRequest,
                summary::ReadStateSummaryData,
                summary::PartitionData,
                group,
                key,
                |p| {}
            );
            let resp = Remote::call(idle, shard, broker, &req, 0).await?;
            let p = partition_of!(resp, broker, key)?;
            Ok(ShareStateReply::Summary((
                p.state_epoch,
                p.leader_epoch,
                p.start_offset,
            )))
        }
    }
}
