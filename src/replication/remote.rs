//! Calls to other brokers on behalf of the transaction coordinator and the
//! produce path, over broker-to-broker Kafka connections: WriteTxnMarkers
//! v1 to the leader of a transaction's partition on another broker (Kafka's
//! `TransactionMarkerChannelManager`), and AddPartitionsToTxn v4 with
//! `verify_only` to a transaction coordinator on another broker (KIP-890's
//! partition check, broker to broker), and the share-partition state calls
//! to another broker's share coordinator (`remote/share_state.rs`), and
//! Produce (acks=-1) of share group dead-letter records (KIP-1191). One
//! idle connection per broker is
//! kept per shard.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, ProduceRequest, ProducerId, TopicName, TransactionalId,
    WriteTxnMarkersRequest,
};
use kafka_protocol::protocol::{Request, StrBytes};
use kafka_protocol::ResponseError;

use super::client::BrokerConnection;
use crate::shard::remote::{
    RemoteBrokers, RemoteError, RemoteFuture, RemoteMarkers, ShareStateCall, ShareStateReply,
};
use crate::shard::Shard;
use crate::share::state::StateKey;

mod share_state;

/// The Produce version of the dead-letter writes (topic names, flexible).
const PRODUCE_VERSION: i16 = 9;

/// How long a call to another broker may take (connect and answer).
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// This shard's idle connections to other brokers, by broker id.
type Pool = Rc<RefCell<HashMap<i32, BrokerConnection>>>;

/// This shard's way to other brokers.
#[derive(Default)]
pub struct Remote {
    idle: Pool,
}

impl Remote {
    /// Installs a [`Remote`] on `shard` as its way to other brokers.
    pub fn install(shard: &Shard) {
        shard.set_remote(Rc::new(Remote::default()));
    }

    /// Sends `req` at `version` to broker `broker` (its first registered
    /// endpoint) and gives the response; the connection is kept for the
    /// next call when the exchange succeeded.
    async fn call<R: Request>(
        idle: &Pool,
        shard: &Shard,
        broker: i32,
        req: &R,
        version: i16,
    ) -> Result<R::Response, RemoteError> {
        let unreachable = |why: String| RemoteError::Unreachable { broker, why };
        let addr = shard
            .metadata()
            .registrations
            .get(&broker)
            .and_then(|b| b.endpoint_for(&shard.security.inter_broker.listener))
            .map(|e| format!("{}:{}", e.host, e.port))
            .ok_or_else(|| unreachable("no endpoint registered".into()))?;
        let pooled = idle.borrow_mut().remove(&broker);
        let mut conn = match pooled {
            Some(c) if c.addr() == addr => c,
            _ => BrokerConnection::connect(&addr, CALL_TIMEOUT, &shard.security.inter_broker)
                .await
                .map_err(|e| unreachable(e.to_string()))?,
        };
        let resp = conn
            .call(req, version, CALL_TIMEOUT)
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        idle.borrow_mut().insert(broker, conn);
        Ok(resp)
    }
}

impl RemoteBrokers for Remote {
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
    ) -> RemoteFuture<Result<Vec<i16>, RemoteError>> {
        let idle = self.idle.clone();
        Box::pin(async move {
            let mut topics: Vec<AddPartitionsToTxnTopic> = Vec::new();
            for (t, p) in &partitions {
                match topics.iter_mut().find(|x| x.name.0.as_str() == &**t) {
                    Some(x) => x.partitions.push(*p),
                    None => topics.push(
                        AddPartitionsToTxnTopic::default()
                            .with_name(TopicName(StrBytes::from_string(t.to_string())))
                            .with_partitions(vec![*p]),
                    ),
                }
            }
            let req = AddPartitionsToTxnRequest::default().with_transactions(vec![
                AddPartitionsToTxnTransaction::default()
                    .with_transactional_id(TransactionalId(StrBytes::from_string(
                        transactional_id.to_string(),
                    )))
                    .with_producer_id(ProducerId(producer_id))
                    .with_producer_epoch(epoch)
                    .with_verify_only(!add)
                    .with_topics(topics),
            ]);
            let resp = Remote::call(&idle, &shard, coordinator, &req, 4).await?;
            if resp.error_code != 0 {
                return Ok(vec![resp.error_code; partitions.len()]);
            }
            let answered = |t: &str, p: i32| {
                resp.results_by_transaction
                    .iter()
                    .flat_map(|r| r.topic_results.iter())
                    .filter(|x| x.name.0.as_str() == t)
                    .flat_map(|x| x.results_by_partition.iter())
                    .find(|x| x.partition_index == p)
                    .map_or(ResponseError::UnknownServerError.code(), |x| {
                        x.partition_error_code
                    })
            };
            Ok(partitions.iter().map(|(t, p)| answered(t, *p)).collect())
        })
    }

    fn write_markers(
        &self,
        shard: Rc<Shard>,
        leader: i32,
        markers: RemoteMarkers,
    ) -> RemoteFuture<Result<(), RemoteError>> {
        let idle = self.idle.clone();
        Box::pin(async move {
            let mut topics: Vec<WritableTxnMarkerTopic> = Vec::new();
            for (t, p) in &markers.partitions {
                match topics.iter_mut().find(|x| x.name.0.as_str() == t) {
                    Some(x) => x.partition_indexes.push(*p),
                    None => topics.push(
                        WritableTxnMarkerTopic::default()
                            .with_name(TopicName(StrBytes::from_string(t.clone())))
                            .with_partition_indexes(vec![*p]),
                    ),
                }
            }
            let req =
                WriteTxnMarkersRequest::default().with_markers(vec![WritableTxnMarker::default()
                    .with_producer_id(ProducerId(markers.producer_id))
                    .with_producer_epoch(markers.producer_epoch)
                    .with_transaction_result(markers.commit)
                    .with_coordinator_epoch(markers.coordinator_epoch)
                    .with_topics(topics)]);
            let resp = Remote::call(&idle, &shard, leader, &req, 1).await?;
            for m in &resp.markers {
                for t in &m.topics {
                    for p in &t.partitions {
                        let code = p.error_code;
                        if code == 0 {
                            continue;
                        }
                        if code == ResponseError::InvalidProducerEpoch.code() {
                            log::warn!(
                                "marker for {}-{} skipped on broker {leader}: it knows a newer epoch of producer {}",
                                t.name.0,
                                p.partition_index,
                                markers.producer_id
                            );
                            continue;
                        }
                        return Err(RemoteError::Refused {
                            broker: leader,
                            topic: t.name.0.to_string(),
                            partition: p.partition_index,
                            code,
                        });
                    }
                }
            }
            Ok(())
        })
    }

    fn share_state(
        &self,
        shard: Rc<Shard>,
        broker: i32,
        key: StateKey,
        call: ShareStateCall,
    ) -> RemoteFuture<Result<ShareStateReply, RemoteError>> {
        let idle = self.idle.clone();
        Box::pin(async move { share_state::send(&idle, &shard, broker, key, call).await })
    }

    fn produce(
        &self,
        shard: Rc<Shard>,
        leader: i32,
        topic: std::sync::Arc<str>,
        partition: i32,
        records: bytes::Bytes,
    ) -> RemoteFuture<Result<(), RemoteError>> {
        let idle = self.idle.clone();
        Box::pin(async move {
            let req = ProduceRequest::default()
                .with_acks(-1)
                .with_timeout_ms(CALL_TIMEOUT.as_millis() as i32)
                .with_topic_data(vec![TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                    .with_partition_data(vec![PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(records))])]);
            let resp = Remote::call(&idle, &shard, leader, &req, PRODUCE_VERSION).await?;
            let code = resp
                .responses
                .iter()
                .flat_map(|t| t.partition_responses.iter())
                .find(|p| p.index == partition)
                .map_or(ResponseError::UnknownServerError.code(), |p| p.error_code);
            if code == 0 {
                Ok(())
            } else {
                Err(RemoteError::Refused {
                    broker: leader,
                    topic: topic.to_string(),
                    partition,
                    code,
                })
            }
        })
    }
}
