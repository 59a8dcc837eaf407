//! `fjord cluster`: the cluster id, brokers and controller
//! (DescribeCluster, KIP-700) and the metadata quorum (DescribeQuorum,
//! KIP-595/KIP-836), what `kafka-cluster.sh cluster-id`,
//! `kafka-broker-api-versions.sh` and `kafka-metadata-quorum.sh describe
//! --status --replication` show.

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use serde_json::{json, Value};

use super::client::{ClientError, Connection};
use super::output::{table, Report};

/// The metadata log's topic (KRaft).
pub const METADATA_TOPIC: &str = "__cluster_metadata";

/// Gives DescribeCluster's answer (brokers, controller, cluster id).
pub fn describe_cluster(c: &mut Connection) -> Result<DescribeClusterResponse, ClientError> {
    let v = c.version(ApiKey::DescribeCluster, 1)?;
    let mut req = DescribeClusterRequest::default();
    req.endpoint_type = 1;
    let resp: DescribeClusterResponse = c.send(ApiKey::DescribeCluster, v, &req)?;
    ClientError::check(
        "describe cluster",
        resp.error_code,
        resp.error_message.as_ref(),
    )?;
    Ok(resp)
}

/// Gives DescribeQuorum's answer for `__cluster_metadata-0`, or None when
/// the broker does not serve DescribeQuorum.
pub fn describe_quorum(
    c: &mut Connection,
) -> Result<Option<describe_quorum_response::PartitionData>, ClientError> {
    let v = match c.version(ApiKey::DescribeQuorum, 2) {
        Ok(v) => v,
        Err(ClientError::Unsupported(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut p = describe_quorum_request::PartitionData::default();
    p.partition_index = 0;
    let mut t = describe_quorum_request::TopicData::default();
    t.topic_name = TopicName(StrBytes::from_static_str(METADATA_TOPIC));
    t.partitions = vec![p];
    let mut req = DescribeQuorumRequest::default();
    req.topics = vec![t];
    let resp: DescribeQuorumResponse = c.send(ApiKey::DescribeQuorum, v, &req)?;
    ClientError::check(
        "describe quorum",
        resp.error_code,
        resp.error_message.as_ref(),
    )?;
    let part = resp
        .topics
        .into_iter()
        .flat_map(|t| t.partitions)
        .next()
        .ok_or_else(|| ClientError::Protocol("DescribeQuorum: no partition".into()))?;
    ClientError::check(
        "describe quorum",
        part.error_code,
        part.error_message.as_ref(),
    )?;
    Ok(Some(part))
}

fn replicas(
    rs: &[describe_quorum_response::ReplicaState],
    leader: i32,
    leader_leo: i64,
) -> (Vec<Value>, Vec<Vec<String>>) {
    let mut docs = Vec::new();
    let mut rows = Vec::new();
    for r in rs {
        let lag = (leader_leo - r.log_end_offset).max(0);
        let status = if r.replica_id.0 == leader {
            "Leader"
        } else {
            "Follower"
        };
        docs.push(json!({
            "node_id": r.replica_id.0,
            "log_end_offset": r.log_end_offset,
            "lag": lag,
            "last_fetch_timestamp": r.last_fetch_timestamp,
            "last_caught_up_timestamp": r.last_caught_up_timestamp,
        }));
        rows.push(vec![
            r.replica_id.0.to_string(),
            r.log_end_offset.to_string(),
            lag.to_string(),
            r.last_fetch_timestamp.to_string(),
            r.last_caught_up_timestamp.to_string(),
            status.to_string(),
        ]);
    }
    (docs, rows)
}

/// Takes a connection; gives the cluster and its quorum as a report (JSON
/// keys: cluster_id, controller_id, brokers [{node_id, host, port, rack,
/// fenced}], quorum {leader_id, leader_epoch, high_watermark, voters,
/// observers: [{node_id, log_end_offset, lag, …}]} or null).
pub fn report(c: &mut Connection) -> Result<Report, ClientError> {
    let cl = describe_cluster(c)?;
    // The quorum is a second question: a refusal of it (no DESCRIBE on the
    // CLUSTER resource) still leaves the cluster and its brokers to show.
    let (q, refused) = match describe_quorum(c) {
        Ok(q) => (q, None),
        Err(e @ ClientError::Kafka { .. }) => (None, Some(e.to_string())),
        Err(e) => return Err(e),
    };
    let mut brokers: Vec<&describe_cluster_response::DescribeClusterBroker> =
        cl.brokers.iter().collect();
    brokers.sort_by_key(|b| b.broker_id.0);
    let mut text = format!(
        "ClusterId: {}\nController: {}\n\n",
        cl.cluster_id, cl.controller_id.0
    );
    let rows: Vec<Vec<String>> = brokers
        .iter()
        .map(|b| {
            vec![
                b.broker_id.0.to_string(),
                format!("{}:{}", b.host, b.port),
                b.rack.as_ref().map(|r| r.to_string()).unwrap_or_default(),
                if b.is_fenced { "fenced" } else { "" }.to_string(),
            ]
        })
        .collect();
    text.push_str(&table(&["BROKER", "ENDPOINT", "RACK", "STATE"], &rows));
    let quorum = match &q {
        None => {
            match &refused {
                Some(e) => text.push_str(&format!("\n(quorum not described: {e})\n")),
                None => text.push_str("\n(the broker does not serve DescribeQuorum)\n"),
            }
            Value::Null
        }
        Some(p) => {
            let leader = p.leader_id.0;
            let leader_leo = p
                .current_voters
                .iter()
                .find(|r| r.replica_id.0 == leader)
                .map(|r| r.log_end_offset)
                .unwrap_or(p.high_watermark);
            let (voters, mut vrows) = replicas(&p.current_voters, leader, leader_leo);
            let (observers, orows) = replicas(&p.observers, leader, leader_leo);
            for r in orows {
                let mut r = r;
                if let Some(s) = r.last_mut() {
                    *s = "Observer".into();
                }
                vrows.push(r);
            }
            text.push_str(&format!(
                "\nLeaderId: {leader}\nLeaderEpoch: {}\nHighWatermark: {}\nMaxFollowerLag: {}\nCurrentVoters: [{}]\nCurrentObservers: [{}]\n\n",
                p.leader_epoch,
                p.high_watermark,
                p.current_voters
                    .iter()
                    .map(|r| (leader_leo - r.log_end_offset).max(0))
                    .max()
                    .unwrap_or(0),
                p.current_voters.iter().map(|r| r.replica_id.0.to_string()).collect::<Vec<_>>().join(","),
                p.observers.iter().map(|r| r.replica_id.0.to_string()).collect::<Vec<_>>().join(","),
            ));
            text.push_str(&table(
                &[
                    "NODE",
                    "LOG-END-OFFSET",
                    "LAG",
                    "LAST-FETCH-TIMESTAMP",
                    "LAST-CAUGHT-UP-TIMESTAMP",
                    "STATUS",
                ],
                &vrows,
            ));
            json!({
                "leader_id": leader,
                "leader_epoch": p.leader_epoch,
                "high_watermark": p.high_watermark,
                "voters": voters,
                "observers": observers,
            })
        }
    };
    let json = json!({
        "cluster_id": cl.cluster_id.to_string(),
        "controller_id": cl.controller_id.0,
        "brokers": brokers.iter().map(|b| json!({
            "node_id": b.broker_id.0,
            "host": b.host.to_string(),
            "port": b.port,
            "rack": b.rack.as_ref().map(|r| r.to_string()),
            "fenced": b.is_fenced,
        })).collect::<Vec<Value>>(),
        "quorum": quorum,
    });
    Ok(Report::new(json, text))
}
