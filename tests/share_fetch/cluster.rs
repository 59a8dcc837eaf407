//! Raw calls of the 3-node share tests: a request to one node that gives
//! an error instead of panicking while the cluster settles, the
//! coordinator FindCoordinator names, and a topic created with replication
//! factor 3.

use std::time::Duration;

use kafka_protocol::messages::*;
use uuid::Uuid;

use super::common::cluster::{try_kp_call, Cluster};
use super::common::poll_until;
use super::wire::s;

/// How long the cluster calls below keep asking.
pub(crate) const CLUSTER_DEADLINE: Duration = Duration::from_secs(60);

/// A call to node `id` of `c` on a fresh connection (an error instead of a
/// panic while the cluster settles).
pub(crate) fn ask<R: kafka_protocol::protocol::Request>(
    c: &Cluster,
    id: i32,
    version: i16,
    req: &R,
) -> Result<R::Response, String> {
    let mut s =
        std::net::TcpStream::connect(c.bootstrap(id)).map_err(|e| format!("node {id}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    try_kp_call(&mut s, version, 1, req).map_err(|e| format!("node {id}: {e}"))
}

/// The broker of `c` that FindCoordinator (asked of `asked`) names for
/// `key` of `key_type` (0 a group, 2 a share-partition's state, which
/// creates `__share_group_state` first).
pub(crate) fn coordinator_of(c: &Cluster, asked: i32, key_type: i8, key: &str) -> i32 {
    poll_until(CLUSTER_DEADLINE, "a coordinator", || {
        let r = ask(
            c,
            asked,
            6,
            &FindCoordinatorRequest::default()
                .with_key_type(key_type)
                .with_coordinator_keys(vec![s(key)]),
        )?;
        match r.coordinators.first() {
            Some(f) if f.error_code == 0 => Ok(f.node_id.0),
            other => Err(format!("FindCoordinator: {other:?}")),
        }
    })
}

/// Creates `topic` with `partitions` partitions and replication factor 3
/// through node `id` (asked again while the cluster settles); gives its id.
pub(crate) fn create_rf3(c: &Cluster, id: i32, topic: &str, partitions: i32) -> Uuid {
    poll_until(CLUSTER_DEADLINE, "CreateTopics", || {
        let req = CreateTopicsRequest::default()
            .with_topics(vec![create_topics_request::CreatableTopic::default()
                .with_name(s(topic).into())
                .with_num_partitions(partitions)
                .with_replication_factor(3)])
            .with_timeout_ms(15_000);
        let r = ask(c, id, 7, &req)?;
        match r.topics[0].error_code {
            0 => Ok(r.topics[0].topic_id),
            code => Err(format!("CreateTopics: {code}")),
        }
    })
}
