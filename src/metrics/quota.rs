//! Client quota throttling per quota entity, as Kafka's quota managers
//! expose it (`kafka.server:type=Produce|Fetch|Request,user=U,client-id=C`,
//! attribute `throttle-time`), under the JMX exporter's prefixes
//! `kafka_server_produce_`, `kafka_server_fetch_` and
//! `kafka_server_request_`, labelled `user` and `client_id` with Kafka's
//! tags: those of the quota entity that matched, "" for a part the entity
//! leaves out (a `/clients/<id>` quota gives `user=""`).
//!
//! Kafka's `throttle-time` is an average over its quota window and its
//! `byte-rate` a windowed rate; Fjord serves counters instead, from which
//! any window's figures follow: `rate(..._throttle_time_ms_total) /
//! rate(..._quota_requests_total)` and `rate(..._bytes_total)`.
//! Only requests a configured quota applies to are counted (as Kafka keeps
//! sensors only for them), and at most [`MAX_ENTITIES`] entities are
//! served; later ones count only in the node's `fjord_quota_*` totals.
//!
//! The rates of every quota are kept on shard 0 (`quota::ShardUsage`), so
//! the counters are written there only, by its thread (`Relaxed`
//! atomics): an entity is registered under a mutex the first time, then
//! found in a shard-local cache.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Error;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::DescriptorEncoder;

use super::collect::{counters, Labels};
use crate::quota::model::SensorKey;
use crate::quota::Measure;
use crate::stall::ShardStallStats;

/// Most quota entities served per node.
pub const MAX_ENTITIES: usize = 1000;

/// The JMX exporter's prefix of each measure's MBean type, in the order
/// of [`EntityCounters`]' slots.
const KINDS: [(Measure, &str); 3] = [
    (Measure::Produce, "kafka_server_produce"),
    (Measure::Fetch, "kafka_server_fetch"),
    (Measure::Request, "kafka_server_request"),
];

/// One measure's counts for one quota entity.
#[derive(Debug, Default)]
pub struct MeasureCounters {
    /// Requests counted in the quota's rate.
    pub requests: AtomicU64,
    /// Of those, the ones this quota throttled.
    pub throttled: AtomicU64,
    /// Their throttle times by this quota, summed (ms).
    pub throttle_ms: AtomicU64,
    /// Bytes counted in the quota's rate (produce: request bytes, fetch:
    /// response bytes of unthrottled fetches; 0 for the request measure).
    pub bytes: AtomicU64,
}

/// One quota entity's counts, by measure (produce, fetch, request).
pub type EntityCounters = [MeasureCounters; 3];

/// The quota entities counted on one shard (shard 0).
#[derive(Debug, Default)]
pub struct QuotaEntities {
    list: Mutex<Vec<(SensorKey, Arc<EntityCounters>)>>,
}

impl QuotaEntities {
    /// A copy of the entities and their counters.
    pub fn entities(&self) -> Vec<(SensorKey, Arc<EntityCounters>)> {
        self.list.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

thread_local! {
    static CACHE: RefCell<HashMap<SensorKey, Arc<EntityCounters>>> = RefCell::new(HashMap::new());
}

/// The slot of `measure` in [`EntityCounters`].
fn slot(measure: Measure) -> usize {
    KINDS.iter().position(|(m, _)| *m == measure).unwrap_or(0)
}

/// Counts one request recorded in `measure`'s rate of quota entity
/// `sensor`, throttled by it for `throttle_ms` (0: not throttled), of
/// `bytes` (Kafka's `byte-rate` sensor; 0 for the request measure).
/// Nothing on a thread without shard metrics, or past [`MAX_ENTITIES`].
pub fn record(measure: Measure, sensor: &SensorKey, throttle_ms: u64, bytes: u64) {
    let add = |c: &EntityCounters| {
        if let Some(m) = c.get(slot(measure)) {
            m.requests.fetch_add(1, Relaxed);
            m.bytes.fetch_add(bytes, Relaxed);
            if throttle_ms > 0 {
                m.throttled.fetch_add(1, Relaxed);
                m.throttle_ms.fetch_add(throttle_ms, Relaxed);
            }
        }
    };
    CACHE.with(|cache| {
        let Ok(mut cache) = cache.try_borrow_mut() else {
            return;
        };
        if let Some(c) = cache.get(sensor) {
            add(c);
            return;
        }
        let Some(metrics) = super::shard::here() else {
            return;
        };
        let Ok(mut list) = metrics.quota.list.lock() else {
            return;
        };
        if list.len() >= MAX_ENTITIES {
            return;
        }
        let c: Arc<EntityCounters> = Arc::default();
        list.push((sensor.clone(), c.clone()));
        add(&c);
        cache.insert(sensor.clone(), c);
    });
}

/// Encodes `kafka_server_{produce,fetch,request}_throttle_time_ms_total`,
/// `..._throttled_total` and `..._quota_requests_total` by `user` and
/// `client_id`, summed over the shards.
pub fn encode(enc: &mut DescriptorEncoder<'_>, stats: &[ShardStallStats]) -> Result<(), Error> {
    let mut all: std::collections::BTreeMap<SensorKey, [[u64; 4]; 3]> = Default::default();
    for s in stats {
        for (key, c) in s.broker.quota.entities() {
            let sums = all.entry(key).or_default();
            for (sum, m) in sums.iter_mut().zip(c.iter()) {
                sum[0] += m.requests.load(Relaxed);
                sum[1] += m.throttled.load(Relaxed);
                sum[2] += m.throttle_ms.load(Relaxed);
                sum[3] += m.bytes.load(Relaxed);
            }
        }
    }
    let families = [
        (
            "quota_requests",
            "Requests counted in this quota's rate, by quota entity.",
        ),
        (
            "throttled",
            "Of those, the ones this quota throttled, by quota entity.",
        ),
        (
            "throttle_time_ms",
            "Their throttle times by this quota, summed (ms), by quota entity.",
        ),
        (
            "bytes",
            "Bytes counted in this quota's rate (rate() of it is Kafka's byte-rate), by quota entity.",
        ),
    ];
    for (k, (measure, prefix)) in KINDS.iter().enumerate() {
        for (f, (name, help)) in families.iter().enumerate() {
            // The request quota measures time, not bytes.
            if *name == "bytes" && *measure == Measure::Request {
                continue;
            }
            let series: Vec<(Labels, u64)> = all
                .iter()
                .filter(|(_, sums)| sums[k][0] > 0)
                .map(|(key, sums)| {
                    (
                        vec![
                            ("user", key.user.clone()),
                            ("client_id", key.client_id.clone()),
                        ],
                        sums[k][f],
                    )
                })
                .collect();
            counters(enc, &format!("{prefix}_{name}"), help, &series)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{parse, render};
    use crate::stall::registry;

    #[test]
    fn throttles_are_counted_by_entity_and_measure() {
        let stats = registry(1);
        super::super::shard::install(stats[0].broker.clone());
        let alice = SensorKey {
            user: "alice".into(),
            client_id: String::new(),
        };
        record(Measure::Produce, &alice, 0, 100);
        record(Measure::Produce, &alice, 250, 50);
        record(Measure::Request, &alice, 0, 0);
        let samples = parse(&render(&stats));
        let get = |name: &str| {
            samples
                .iter()
                .find(|s| s.name == name && s.labels == "user=\"alice\",client_id=\"\"")
                .map(|s| s.value)
        };
        assert_eq!(get("kafka_server_produce_quota_requests_total"), Some(2.0));
        assert_eq!(get("kafka_server_produce_throttled_total"), Some(1.0));
        assert_eq!(
            get("kafka_server_produce_throttle_time_ms_total"),
            Some(250.0)
        );
        assert_eq!(
            get("kafka_server_request_throttle_time_ms_total"),
            Some(0.0)
        );
        assert_eq!(get("kafka_server_fetch_throttle_time_ms_total"), None);
        assert_eq!(get("kafka_server_produce_bytes_total"), Some(150.0));
        assert_eq!(get("kafka_server_request_bytes_total"), None);
    }
}
