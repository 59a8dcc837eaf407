//! Where client quotas meet requests: the one place that measures a
//! request (produce bytes, fetch bytes, handler time), records it in the
//! broker's [`ShardUsage`] on shard 0 (one call over the mesh, made only
//! for a request that has a quota) for its throttle time, writes
//! `throttle_time_ms` into the encoded response, and tells the connection
//! how long to mute ([`Outcome::Throttled`]). KIP-219: a response whose
//! version lets the client back off itself is sent at once, then the
//! connection reads nothing for the throttle time; an older version's
//! response is held for that time instead (Kafka's
//! `shouldClientThrottle`). `net::connection::deliver` does the waiting.
//!
//! Controller mutations (KIP-599) are counted in the broker's token
//! buckets on shard 0 ([`mutations`]); CreateTopics, DeleteTopics and
//! CreatePartitions ask before they go to the controller.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::ApiKey;

use super::Outcome;
use crate::protocol::{RequestFrame, Response, ResponseChunk};
use crate::quota::model::{self, SensorKey};
use crate::quota::{Measure, MutationThrottled, ShardUsage};
use crate::shard::Shard;

thread_local! {
    /// The broker's usage, on shard 0 (one shard is one thread).
    static USAGE: RefCell<Option<ShardUsage>> = const { RefCell::new(None) };
}

/// Milliseconds on a monotonic clock, far from 0 so that a token bucket's
/// first refill fills it (as Kafka's wall-clock buckets are).
pub fn now_ms() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1_000_000_000
}

fn with_usage<R>(shard: &Shard, f: impl FnOnce(&mut ShardUsage) -> R) -> R {
    USAGE.with(|cell| {
        let mut u = cell.borrow_mut();
        let usage = u.get_or_insert_with(|| {
            ShardUsage::new(
                shard.config.quota_windows,
                shard.config.controller_quota_windows,
            )
        });
        f(usage)
    })
}

/// How a throttled response is delivered (KIP-219).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Sent at once; the client backs off itself; the connection then
    /// reads nothing for the throttle time.
    ClientBacksOff,
    /// An older version: the response is held for the throttle time.
    Held,
}

/// A response (None: acks=0) with the time its connection mutes.
#[derive(Debug)]
pub struct Throttled {
    /// The response, `throttle_time_ms` written into it.
    pub response: Option<Response>,
    /// How long the connection reads nothing (ms).
    pub ms: u64,
    /// Sent before or after that time.
    pub mode: Mode,
}

/// Where `throttle_time_ms` is in a response body, and from which version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// The body's first field.
    First,
    /// After the top-level error code (OffsetDelete).
    AfterErrorCode,
    /// After the responses array (Produce).
    ProduceTail,
}

/// The field's place for `api` at `version`; None when the response has
/// no throttle time (such requests are not throttled).
fn field(api: ApiKey, version: i16) -> Option<Field> {
    use ApiKey as K;
    let first_from = match api {
        K::Produce => return (version >= 1).then_some(Field::ProduceTail),
        K::OffsetDelete => return Some(Field::AfterErrorCode),
        K::Fetch | K::FindCoordinator | K::Heartbeat | K::LeaveGroup | K::SyncGroup => 1,
        K::DescribeGroups | K::ListGroups | K::DeleteTopics => 1,
        K::ListOffsets | K::OffsetForLeaderEpoch | K::JoinGroup | K::CreateTopics => 2,
        K::Metadata | K::OffsetCommit | K::OffsetFetch => 3,
        K::DeleteRecords
        | K::InitProducerId
        | K::AddPartitionsToTxn
        | K::AddOffsetsToTxn
        | K::EndTxn
        | K::TxnOffsetCommit
        | K::DescribeAcls
        | K::CreateAcls
        | K::DeleteAcls
        | K::DescribeConfigs
        | K::AlterConfigs
        | K::DescribeLogDirs
        | K::CreatePartitions
        | K::ElectLeaders
        | K::IncrementalAlterConfigs
        | K::AlterPartitionReassignments
        | K::ListPartitionReassignments
        | K::DescribeClientQuotas
        | K::AlterClientQuotas
        | K::ConsumerGroupHeartbeat
        | K::ConsumerGroupDescribe
        | K::ShareGroupHeartbeat
        | K::ShareGroupDescribe
        | K::UpdateFeatures
        | K::DescribeUserScramCredentials
        | K::AlterUserScramCredentials
        | K::DescribeCluster
        | K::DescribeProducers
        | K::DescribeTransactions
        | K::ListTransactions
        | K::DescribeTopicPartitions
        | K::ShareFetch
        | K::ShareAcknowledge
        | K::DescribeShareGroupOffsets
        | K::AlterShareGroupOffsets
        | K::DeleteShareGroupOffsets
        | K::DeleteGroups => 0,
        // No throttle time (ApiVersions is answered before a session is
        // known, the SASL exchange, broker-to-broker calls).
        _ => return None,
    };
    (version >= first_from).then_some(Field::First)
}

/// Kafka's `shouldClientThrottle`: whether this response version tells
/// the client to back off by itself.
fn client_backs_off(api: ApiKey, version: i16) -> bool {
    use ApiKey as K;
    let since = match api {
        K::Produce => 6,
        K::Fetch => 8,
        K::Metadata => 6,
        K::ListOffsets | K::CreateTopics => 3,
        K::OffsetCommit | K::OffsetFetch => 4,
        K::JoinGroup => 3,
        K::FindCoordinator
        | K::Heartbeat
        | K::LeaveGroup
        | K::SyncGroup
        | K::DescribeGroups
        | K::ListGroups
        | K::DeleteTopics
        | K::DescribeConfigs => 2,
        K::AddOffsetsToTxn
        | K::AddPartitionsToTxn
        | K::AlterConfigs
        | K::CreateAcls
        | K::DeleteAcls
        | K::DescribeAcls
        | K::CreatePartitions
        | K::DeleteGroups
        | K::DeleteRecords
        | K::DescribeLogDirs
        | K::EndTxn
        | K::InitProducerId
        | K::TxnOffsetCommit => 1,
        K::IncrementalAlterConfigs
        | K::OffsetDelete
        | K::AlterPartitionReassignments
        | K::ListPartitionReassignments
        | K::AlterUserScramCredentials
        | K::DescribeUserScramCredentials
        | K::DescribeTopicPartitions
        | K::ConsumerGroupHeartbeat
        | K::ConsumerGroupDescribe
        | K::ShareGroupHeartbeat
        | K::ShareGroupDescribe
        | K::ShareFetch
        | K::ShareAcknowledge
        | K::DescribeShareGroupOffsets
        | K::AlterShareGroupOffsets
        | K::DeleteShareGroupOffsets
        | K::ElectLeaders => 0,
        _ => return false,
    };
    version >= since
}

/// Writes `ms` as `throttle_time_ms` into `resp` (a response of `api` at
/// `version`, as `protocol::encode_response` built it: size, header,
/// body in its first chunk). False when the field's place is not found.
fn set_throttle(resp: &mut Response, api: ApiKey, version: i16, ms: i32) -> bool {
    let Some(place) = field(api, version) else {
        return false;
    };
    let Some(ResponseChunk::Bytes(first)) = resp.chunks.first() else {
        return false;
    };
    let header = 4 + if api.response_header_version(version) >= 1 {
        5
    } else {
        4
    };
    let at = match place {
        Field::First => header,
        Field::AfterErrorCode => header + 2,
        Field::ProduceTail => {
            if resp.chunks.len() != 1 {
                return false;
            }
            if version <= 8 {
                // The last field of a non-flexible body.
                first.len().saturating_sub(4)
            } else {
                return reencode_produce(resp, version, ms);
            }
        }
    };
    if first.len() < at + 4 {
        return false;
    }
    let mut b = BytesMut::with_capacity(first.len());
    b.put_slice(first);
    b[at..at + 4].copy_from_slice(&ms.to_be_bytes());
    resp.chunks[0] = ResponseChunk::Bytes(b.freeze());
    true
}

/// A flexible Produce response (v9+) ends with tagged fields after the
/// throttle time: decoded, set, encoded again (small; only when
/// throttled).
fn reencode_produce(resp: &mut Response, version: i16, ms: i32) -> bool {
    use kafka_protocol::messages::ProduceResponse;
    use kafka_protocol::protocol::Decodable;
    let Some(ResponseChunk::Bytes(first)) = resp.chunks.first() else {
        return false;
    };
    if first.len() < 9 {
        return false;
    }
    let correlation_id = i32::from_be_bytes([first[4], first[5], first[6], first[7]]);
    let mut body = first.slice(9..);
    let Ok(mut r) = ProduceResponse::decode(&mut body, version) else {
        return false;
    };
    r.throttle_time_ms = ms;
    match crate::protocol::encode_response(ApiKey::Produce, version, correlation_id, &r) {
        Ok(again) => {
            *resp = again;
            true
        }
        Err(_) => false,
    }
}

/// What a request is counted against: its user (the principal's name) and
/// client id. None for a request made inside the broker.
fn who(frame: &RequestFrame) -> Option<(String, String)> {
    let ctx = frame.context.as_ref()?;
    let user = ctx.principal.name.clone();
    let client = frame
        .header
        .client_id
        .as_ref()
        .map(|c| c.to_string())
        .unwrap_or_default();
    Some((user, client))
}

/// A request being measured: from dispatch's start to its outcome.
pub struct Metered {
    user: String,
    client_id: String,
}

/// The measurement of `frame`, or None when it is not counted: no quota
/// is configured (the common case, which costs one look at the image), a
/// request made inside the broker, or an API whose response has no
/// throttle time.
pub fn meter(shard: &Shard, frame: &RequestFrame) -> Option<Metered> {
    if shard.metadata().client_quotas.is_empty() {
        return None;
    }
    field(frame.api_key, frame.prefix.api_version)?;
    let (user, client_id) = who(frame)?;
    Some(Metered { user, client_id })
}

/// The cap on a consumer fetch's `max_bytes` under its `consumer_byte_rate`
/// (bytes): what one quota window may hold, so a fetch that fits is never
/// throttled for its own size alone (Kafka's `handleFetchRequest` caps
/// `max_bytes` with `getMaxValueInQuotaWindow`). None without a quota.
pub fn fetch_max_bytes_cap(shard: &Shard, frame: &RequestFrame) -> Option<u64> {
    let image = shard.metadata();
    if image.client_quotas.is_empty() {
        return None;
    }
    let (user, client_id) = who(frame)?;
    let q = model::resolve(
        &image.client_quotas,
        Measure::Fetch.key(),
        &user,
        &client_id,
    )?;
    let cap = crate::quota::max_in_window(shard.config.quota_windows, q.limit);
    Some((cap as u64).max(1))
}

/// A future with the time spent in its polls (this shard's time working
/// on the request, not the time it waited).
pub struct Timed<F> {
    inner: F,
    busy: Duration,
}

impl<F: Future + Unpin> Future for Timed<F> {
    type Output = (F::Output, Duration);
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let start = Instant::now();
        let r = Pin::new(&mut self.inner).poll(cx);
        self.busy += start.elapsed();
        match r {
            Poll::Ready(v) => Poll::Ready((v, self.busy)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// `fut`, timed.
pub fn timed<F: Future + Unpin>(fut: F) -> Timed<F> {
    Timed {
        inner: fut,
        busy: Duration::ZERO,
    }
}

/// Whether a Fetch comes from a follower (not counted: replication is
/// not a client's traffic).
fn follower_fetch(frame: &RequestFrame) -> bool {
    frame
        .decode::<kafka_protocol::messages::FetchRequest>()
        .map(|r| {
            super::fetch::requester(&r, frame.prefix.api_version)
                != crate::cluster::leadership::Requester::Client
        })
        .unwrap_or(false)
}

impl Metered {
    /// Records the request and gives its outcome with the throttle time:
    /// produce bytes (the request's size, Kafka's `request.sizeInBytes`
    /// less the header), fetch bytes (the response's size), and `busy`,
    /// the handler's time, as a percentage of one second; the throttle is
    /// the largest of theirs (and of `mutation_ms`, a controller
    /// mutation's).
    pub async fn finish(
        self,
        shard: &Rc<Shard>,
        frame: &RequestFrame,
        outcome: Outcome,
        busy: Duration,
    ) -> Outcome {
        let image = shard.metadata();
        let table = &image.client_quotas;
        let api = frame.api_key;
        let version = frame.prefix.api_version;
        let resolve = |m: Measure| model::resolve(table, m.key(), &self.user, &self.client_id);
        let (response, mut ms, acks0) = match outcome {
            Outcome::Respond(r) => (Some(r), 0, false),
            Outcome::NoResponse => (None, 0, true),
            Outcome::Throttled(t) => {
                let acks0 = t.response.is_none();
                (t.response, t.ms, acks0)
            }
            close @ Outcome::Close(_) => return close,
        };
        let counted = ms > 0;
        let follower = api == ApiKey::Fetch && follower_fetch(frame);
        if follower {
            return match response {
                Some(r) => Outcome::Respond(r),
                None => Outcome::NoResponse,
            };
        }
        let mut fetch_throttled = false;
        // What to record: (measure, sensor, limit, value).
        let mut records: Vec<(Measure, SensorKey, f64, f64)> = Vec::with_capacity(2);
        match api {
            ApiKey::Produce => {
                if let Some(q) = resolve(Measure::Produce) {
                    records.push((Measure::Produce, q.sensor, q.limit, frame.body.len() as f64));
                }
            }
            ApiKey::Fetch => {
                if let (Some(q), Some(r)) = (resolve(Measure::Fetch), &response) {
                    records.push((Measure::Fetch, q.sensor, q.limit, r.len() as f64));
                }
            }
            _ => {}
        }
        // Kafka counts no request time for acks=0 Produce.
        if !acks0 {
            if let Some(q) = resolve(Measure::Request) {
                let pct = busy.as_nanos() as f64 * 100.0 / 1e9;
                records.push((Measure::Request, q.sensor, q.limit, pct));
            }
        }
        drop(image);
        if !records.is_empty() {
            let recorded = shard
                .invoke_on(0, move |s| async move {
                    let now = now_ms();
                    with_usage(&s, |u| {
                        let each: Vec<u64> = records
                            .iter()
                            .map(|(m, sensor, limit, value)| {
                                u.record(*m, sensor, *limit, *value, now)
                            })
                            .collect();
                        let ms = each.iter().copied().max().unwrap_or(0);
                        for ((m, sensor, _, value), one) in records.iter().zip(&each) {
                            // Bytes as Kafka's byte-rate counts them: a
                            // throttled fetch is answered empty (below).
                            let bytes = match m {
                                Measure::Request => 0,
                                Measure::Fetch if ms > 0 => 0,
                                Measure::Produce | Measure::Fetch => *value as u64,
                            };
                            crate::metrics::quota::record(*m, sensor, *one, bytes);
                        }
                        // A throttled consumer fetch is answered empty:
                        // its bytes are taken back (Kafka's
                        // `unrecordQuotaSensor`).
                        if ms > 0 {
                            for (m, sensor, _, value) in &records {
                                if *m == Measure::Fetch {
                                    u.unrecord(*m, sensor, *value, now);
                                }
                            }
                        }
                        ms
                    })
                })
                .await;
            // Shard 0 not answering (shutting down): not throttled.
            let recorded = recorded.unwrap_or(0);
            if recorded > 0 && api == ApiKey::Fetch {
                // KIP-219 as Kafka answers a throttled consumer fetch: no
                // data, the throttle time, and the session kept only when
                // the request was incremental (`getThrottledResponse`).
                fetch_throttled = true;
            }
            ms = ms.max(recorded);
        }
        if ms == 0 {
            return match response {
                Some(r) => Outcome::Respond(r),
                None => Outcome::NoResponse,
            };
        }
        if !counted {
            count(ms);
        }
        let ms_i32 = i32::try_from(ms).unwrap_or(i32::MAX);
        let response = if fetch_throttled {
            empty_fetch(frame, ms_i32).or(response)
        } else {
            response
        };
        let response = response.map(|mut r| {
            if !set_throttle(&mut r, api, version, ms_i32) {
                log::debug!("no throttle_time_ms found in a {api:?} v{version} response");
            }
            r
        });
        log::debug!(
            "throttling user {} client {} for {ms} ms after {api:?}",
            self.user,
            self.client_id
        );
        Outcome::Throttled(Throttled {
            response,
            ms,
            mode: if client_backs_off(api, version) {
                Mode::ClientBacksOff
            } else {
                Mode::Held
            },
        })
    }
}

/// The answer to a throttled consumer Fetch (Kafka's
/// `FetchContext.getThrottledResponse`): no partitions, `throttle_time_ms`
/// `ms`, error NONE, and the request's session id when it was incremental
/// (epoch > 0), else 0 (a new full session is not created). None when the
/// request does not decode (it did once, for the handler).
fn empty_fetch(frame: &RequestFrame, ms: i32) -> Option<Response> {
    let req = frame
        .decode::<kafka_protocol::messages::FetchRequest>()
        .ok()?;
    let version = frame.prefix.api_version;
    let mut resp = kafka_protocol::messages::FetchResponse::default();
    resp.throttle_time_ms = ms;
    if version >= 7 && req.session_epoch > 0 {
        resp.session_id = req.session_id;
    }
    crate::protocol::encode_response(ApiKey::Fetch, version, frame.prefix.correlation_id, &resp)
        .ok()
}

/// Counts a throttled response in this shard's metrics.
fn count(ms: u64) {
    crate::shard::write_stats::WRITE_STATS.with(|w| {
        w.quota_throttled_responses
            .set(w.quota_throttled_responses.get() + 1);
        w.quota_throttle_ms.set(w.quota_throttle_ms.get() + ms);
    });
}

/// The controller mutation quota of a request (CreateTopics,
/// DeleteTopics, CreatePartitions): `permits` partitions per topic, in
/// request order (None: a topic not asked of the controller, left as is).
/// Strict from `strict_since` (KIP-599: refused topics answered
/// THROTTLING_QUOTA_EXCEEDED), permissive below it (taken, the response
/// throttled). Gives each topic's verdict and the response's throttle
/// time (ms). The buckets are the broker's, on shard 0.
pub async fn mutations(
    shard: &Rc<Shard>,
    frame: &RequestFrame,
    permits: &[Option<f64>],
    strict_since: i16,
) -> (Vec<Result<(), MutationThrottled>>, u64) {
    let pass = || (permits.iter().map(|_| Ok(())).collect(), 0);
    let image = shard.metadata();
    let Some((user, client_id)) = who(frame) else {
        return pass();
    };
    let Some(q) = model::resolve(
        &image.client_quotas,
        model::CONTROLLER_MUTATION_RATE,
        &user,
        &client_id,
    ) else {
        return pass();
    };
    let strict = frame.prefix.api_version >= strict_since;
    let permits = permits.to_vec();
    let asked = shard
        .invoke_on(0, move |s| async move {
            let now = now_ms();
            with_usage(&s, |u| {
                let mut throttle = 0;
                let verdicts: Vec<Result<(), MutationThrottled>> = permits
                    .iter()
                    .map(|p| match p {
                        None => Ok(()),
                        Some(p) => match u.mutate(&q.sensor, q.limit, *p, strict, now) {
                            Ok(t) => {
                                throttle = throttle.max(t);
                                Ok(())
                            }
                            Err(t) => {
                                throttle = throttle.max(t);
                                Err(MutationThrottled { throttle_ms: t })
                            }
                        },
                    })
                    .collect();
                if strict {
                    throttle = throttle.max(u.mutation_throttle(&q.sensor, q.limit, now));
                }
                (verdicts, throttle)
            })
        })
        .await;
    match asked {
        Ok(v) => v,
        // Shard 0 did not answer: the controller call fails the same way.
        Err(_) => pass(),
    }
}

/// `outcome` with a controller mutation's throttle time (0: unchanged);
/// dispatch adds the request quota's to it.
pub fn with_throttle(frame: &RequestFrame, outcome: Outcome, ms: u64) -> Outcome {
    if ms == 0 {
        return outcome;
    }
    let api = frame.api_key;
    let version = frame.prefix.api_version;
    match outcome {
        Outcome::Respond(mut r) => {
            count(ms);
            set_throttle(&mut r, api, version, i32::try_from(ms).unwrap_or(i32::MAX));
            Outcome::Throttled(Throttled {
                response: Some(r),
                ms,
                mode: if client_backs_off(api, version) {
                    Mode::ClientBacksOff
                } else {
                    Mode::Held
                },
            })
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{
        DescribeClientQuotasResponse, FetchResponse, MetadataResponse, OffsetDeleteResponse,
        ProduceResponse, ResponseKind,
    };
    use kafka_protocol::protocol::Encodable;

    fn check<T: Encodable>(api: ApiKey, version: i16, body: &T) -> i32 {
        let mut r = crate::protocol::encode_response(api, version, 7, body).unwrap();
        assert!(
            set_throttle(&mut r, api, version, 1234),
            "{api:?} v{version}"
        );
        let ResponseChunk::Bytes(b) = &r.chunks[0] else {
            panic!()
        };
        let header = if api.response_header_version(version) >= 1 {
            5
        } else {
            4
        };
        let mut body = b.slice(4 + header..);
        let back = ResponseKind::decode(api, &mut body, version).unwrap();
        match back {
            ResponseKind::Produce(x) => x.throttle_time_ms,
            ResponseKind::Fetch(x) => x.throttle_time_ms,
            ResponseKind::Metadata(x) => x.throttle_time_ms,
            ResponseKind::OffsetDelete(x) => x.throttle_time_ms,
            ResponseKind::DescribeClientQuotas(x) => x.throttle_time_ms,
            other => panic!("{other:?}"),
        }
    }

    /// The throttle time lands in the field, whatever the version's shape.
    #[test]
    fn throttle_time_is_written_in_place() {
        let mut produce = ProduceResponse::default();
        produce.responses = vec![Default::default()];
        for v in 3..=11 {
            assert_eq!(check(ApiKey::Produce, v, &produce), 1234, "Produce v{v}");
        }
        for v in [4, 12, 16, 18] {
            assert_eq!(check(ApiKey::Fetch, v, &FetchResponse::default()), 1234);
        }
        for v in [3, 9, 13] {
            assert_eq!(
                check(ApiKey::Metadata, v, &MetadataResponse::default()),
                1234
            );
        }
        assert_eq!(
            check(ApiKey::OffsetDelete, 0, &OffsetDeleteResponse::default()),
            1234
        );
        let mut d = DescribeClientQuotasResponse::default();
        d.entries = Some(Vec::new());
        for v in 0..=1 {
            assert_eq!(check(ApiKey::DescribeClientQuotas, v, &d), 1234);
        }
        assert_eq!(field(ApiKey::Metadata, 2), None);
        assert!(client_backs_off(ApiKey::Produce, 6) && !client_backs_off(ApiKey::Produce, 5));
    }

    /// Every served API has a throttle time, except the ones Kafka's
    /// responses lack it in.
    #[test]
    fn every_served_api_is_placed() {
        for (api, _, max) in crate::protocol::versions::SUPPORTED_APIS {
            let none = matches!(
                api,
                ApiKey::ApiVersions
                    | ApiKey::SaslHandshake
                    | ApiKey::SaslAuthenticate
                    | ApiKey::WriteTxnMarkers
                    | ApiKey::DescribeQuorum
                    | ApiKey::InitializeShareGroupState
                    | ApiKey::ReadShareGroupState
                    | ApiKey::WriteShareGroupState
                    | ApiKey::DeleteShareGroupState
                    | ApiKey::ReadShareGroupStateSummary
            );
            assert_eq!(field(*api, *max).is_none(), none, "{api:?}");
        }
    }
}
