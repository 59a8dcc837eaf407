//! The scrape: a `prometheus-client` [`Collector`] that sums every
//! shard's metric set ([`ShardMetrics`], [`ShardStallStats`]) and encodes
//! the families under the names the Prometheus JMX exporter's common Kafka
//! rules give Kafka's MBeans (see docs/metrics.md), plus Fjord's own
//! `fjord_*` families.
//!
//! Counter families are registered without their `_total` suffix: the
//! encoder appends it (`messagesin` → `..._messagesin_total`).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Error;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use kafka_protocol::messages::ApiKey;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

use super::shard::{PartitionFigures, Snapshot};
use crate::stall::{ShardStallStats, BUCKET_LABELS_MS};

/// Labels of one series, in order.
pub(super) type Labels = Vec<(&'static str, String)>;

/// A family read from each item of type `T`: name, help and the reading.
type Family<T, V> = (&'static str, &'static str, fn(&T) -> V);

/// Every shard's metrics, encoded at scrape.
#[derive(Debug)]
pub struct FjordCollector {
    stats: Arc<[ShardStallStats]>,
}

impl FjordCollector {
    /// Takes every shard's stats (indexed by shard id).
    pub fn new(stats: Arc<[ShardStallStats]>) -> FjordCollector {
        FjordCollector { stats }
    }
}

/// Encodes one counter family of (labels, value) series.
pub(super) fn counters(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: &[(Labels, u64)],
) -> Result<(), Error> {
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, v) in series {
        ConstCounter::new(*v).encode(m.encode_family(labels)?)?;
    }
    Ok(())
}

/// Encodes one gauge family of (labels, value) series.
pub(super) fn gauges(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: &[(Labels, i64)],
) -> Result<(), Error> {
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, v) in series {
        ConstGauge::new(*v).encode(m.encode_family(labels)?)?;
    }
    Ok(())
}

/// Kafka's name of API key `key` (`"Produce"`), or the number.
pub(super) fn request_name(key: usize) -> String {
    i16::try_from(key)
        .ok()
        .and_then(|k| ApiKey::try_from(k).ok())
        .map_or_else(
            || key.to_string(),
            |k| crate::protocol::versions::api_name(k).to_string(),
        )
}

impl Collector for FjordCollector {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> Result<(), Error> {
        self.broker_topic_metrics(&mut enc)?;
        super::requests::request_metrics(&self.stats, &mut enc)?;
        let snaps: Vec<Snapshot> = self.stats.iter().map(|s| s.broker.snapshot()).collect();
        replica_manager(&mut enc, &snaps)?;
        let sum = |f: fn(&ShardStallStats) -> u64| -> Vec<(Labels, u64)> {
            vec![(Vec::new(), self.stats.iter().map(f).sum())]
        };
        counters(
            &mut enc,
            "kafka_server_replicamanager_isrshrinks",
            "ISR shrinks of partitions led here, committed by the controller.",
            &sum(|s| s.broker.isr_shrinks.load(Relaxed)),
        )?;
        counters(
            &mut enc,
            "kafka_server_replicamanager_isrexpands",
            "ISR expansions of partitions led here, committed by the controller.",
            &sum(|s| s.broker.isr_expands.load(Relaxed)),
        )?;
        log_metrics(&mut enc, &snaps)?;
        consumer_lag(&mut enc, &snaps)?;
        groups(&mut enc, &snaps)?;
        super::coordinator::encode(&mut enc, &self.stats, &snaps)?;
        super::quota::encode(&mut enc, &self.stats)?;
        controller(&mut enc, &snaps)?;
        super::raft::encode(&mut enc, &snaps)?;
        self.fjord(&mut enc)
    }
}

impl FjordCollector {
    /// `kafka_server_brokertopicmetrics_*`: per topic (`topic` label) and
    /// the all-topics series (no label), as Kafka's MBeans with and
    /// without `topic=`.
    fn broker_topic_metrics(&self, enc: &mut DescriptorEncoder<'_>) -> Result<(), Error> {
        // topic → the 10 counters summed over the shards.
        let mut by_topic: BTreeMap<Arc<str>, [u64; 10]> = BTreeMap::new();
        // What deleted topics counted: in the all-topics series only.
        let mut retired = [0u64; 10];
        for s in self.stats.iter() {
            for (slot, a) in retired.iter_mut().zip(s.broker.retired.all()) {
                *slot += a.load(Relaxed);
            }
            for (topic, c) in s.broker.topics() {
                let t = by_topic.entry(topic).or_default();
                for (slot, a) in t.iter_mut().zip(c.all()) {
                    *slot += a.load(Relaxed);
                }
            }
        }
        let families = [
            ("messagesin", "Records appended as leader."),
            ("bytesin", "Bytes of record batches appended as leader."),
            ("bytesout", "Bytes read for consumers' fetches."),
            (
                "failedproducerequests",
                "Produce requests' partitions refused or failed.",
            ),
            (
                "failedfetchrequests",
                "Fetch requests' partitions answered with an error.",
            ),
            ("totalproducerequests", "Produce requests' partitions."),
            (
                "totalfetchrequests",
                "Fetch requests' partitions (consumers and followers).",
            ),
            (
                "bytesrejected",
                "Bytes of produced batches refused as too large.",
            ),
            (
                "replicationbytesin",
                "Bytes of record batches appended as follower from the leader.",
            ),
            ("replicationbytesout", "Bytes read for followers' fetches."),
        ];
        for (i, (name, help)) in families.iter().enumerate() {
            let mut series: Vec<(Labels, u64)> = Vec::with_capacity(by_topic.len() + 1);
            let all: u64 = by_topic.values().map(|v| v[i]).sum::<u64>() + retired[i];
            series.push((Vec::new(), all));
            for (topic, v) in &by_topic {
                series.push((vec![("topic", topic.to_string())], v[i]));
            }
            counters(
                enc,
                &format!("kafka_server_brokertopicmetrics_{name}"),
                help,
                &series,
            )?;
        }
        Ok(())
    }

    /// Fjord's own `fjord_*` families, by shard.
    fn fjord(&self, enc: &mut DescriptorEncoder<'_>) -> Result<(), Error> {
        let per_shard = |f: &dyn Fn(&ShardStallStats) -> u64| -> Vec<(Labels, u64)> {
            self.stats
                .iter()
                .enumerate()
                .map(|(i, s)| (vec![("shard", i.to_string())], f(s)))
                .collect()
        };
        let as_gauge = |v: Vec<(Labels, u64)>| -> Vec<(Labels, i64)> {
            v.into_iter()
                .map(|(l, n)| (l, i64::try_from(n).unwrap_or(i64::MAX)))
                .collect()
        };
        let refreshed = " (refreshed about once a second).";
        counters(
            enc,
            "fjord_reactor_stalls",
            "Task polls that kept the shard's reactor busy longer than reactor.stall.threshold.us.",
            &per_shard(&|s| s.stalls.load(Relaxed)),
        )?;
        gauges(
            enc,
            "fjord_reactor_stall_max_us",
            "Longest stalled poll since start, in microseconds.",
            &as_gauge(per_shard(&|s| s.max_us.load(Relaxed))),
        )?;
        let shard_counters: [Family<ShardStallStats, u64>; 12] = [
            ("fjord_fetch_regions_checked", "File regions of fetch responses checked for page-cache residency before sendfile", |s| {
                s.fetch_regions_checked.load(Relaxed)
            }),
            ("fjord_fetch_page_cache_misses", "Of those, the regions not (fully) in the page cache, read on the blocking pool first", |s| {
                s.fetch_regions_missed.load(Relaxed)
            }),
            ("fjord_fetch_page_cache_miss_bytes", "Bytes read on the blocking pool for those misses", |s| {
                s.fetch_bytes_missed.load(Relaxed)
            }),
            ("fjord_fetch_header_page_cache_misses", "Fetch reads of batch headers that missed the page cache", |s| {
                s.fetch_header_misses.load(Relaxed)
            }),
            ("fjord_sendfile_zero_copy_bytes", "Bytes sent with sendfile(2)", |s| {
                s.sendfile_zero_copy_bytes.load(Relaxed)
            }),
            ("fjord_tls_copied_bytes", "File-region bytes read and encrypted for TLS connections", |s| {
                s.tls_copied_bytes.load(Relaxed)
            }),
            ("fjord_sendfile_fallback_bytes", "Bytes copied through user space because the socket was full", |s| {
                s.sendfile_fallback_bytes.load(Relaxed)
            }),
            ("fjord_quota_throttled_responses", "Responses to this shard's connections throttled by a client quota", |s| {
                s.quota_throttled_responses.load(Relaxed)
            }),
            ("fjord_quota_throttle_ms", "The throttle times of those responses, summed (ms)", |s| {
                s.quota_throttle_ms.load(Relaxed)
            }),
            ("fjord_replica_fetch_connections_moved", "Follower fetch connections accepted here and handed to the shard owning their partitions", |s| {
                s.replica_connections_moved.load(Relaxed)
            }),
            ("fjord_replica_fetch_partitions", "Partitions of follower fetches served on this shard's connections", |s| {
                s.replica_reads.load(Relaxed)
            }),
            ("fjord_replica_fetch_cross_shard_partitions", "Of those, the partitions read on another shard than their connection's", |s| {
                s.replica_reads_cross_shard.load(Relaxed)
            }),
        ];
        for (name, help, f) in shard_counters.iter() {
            counters(enc, name, &format!("{help}{refreshed}"), &per_shard(f))?;
        }
        let shard_gauges: [Family<ShardStallStats, u64>; 3] = [
            ("fjord_leader_partitions", "Partitions this shard leads", |s| {
                s.leader_partitions.load(Relaxed)
            }),
            ("fjord_under_replicated_partitions", "Partitions this shard leads whose ISR is smaller than their replicas", |s| {
                s.under_replicated_partitions.load(Relaxed)
            }),
            ("fjord_incremental_fetch_sessions", "Fetch sessions (KIP-227) this shard holds for consumers and followers: the fetch-session cache size", |s| {
                s.incremental_fetch_sessions.load(Relaxed)
            }),
        ];
        for (name, help, f) in shard_gauges {
            gauges(
                enc,
                name,
                &format!("{help}{refreshed}"),
                &as_gauge(per_shard(&f)),
            )?;
        }
        gauges(
            enc,
            "fjord_io_thread_queue_depth",
            &format!("Jobs queued on this shard's I/O thread and not yet done{refreshed}"),
            &as_gauge(per_shard(&|s| s.broker.io_queue_depth.load(Relaxed))),
        )?;
        let mut calls: Vec<(Labels, u64)> = Vec::new();
        for (i, s) in self.stats.iter().enumerate() {
            let c = &s.cross_shard_calls;
            calls.push((
                vec![("shard", i.to_string()), ("api_key", "none".into())],
                c.background.load(Relaxed),
            ));
            for (key, n) in c.by_api_key.iter().enumerate() {
                let n = n.load(Relaxed);
                if n > 0 {
                    calls.push((
                        vec![("shard", i.to_string()), ("api_key", key.to_string())],
                        n,
                    ));
                }
            }
        }
        counters(
            enc,
            "fjord_cross_shard_calls",
            "Tasks sent to another shard, by the API key of the request they serve (none: background work).",
            &calls,
        )?;
        // Kept under its first name (no `_total`): a gauge-typed count.
        let mut over: Vec<(Labels, i64)> = Vec::new();
        for (i, s) in self.stats.iter().enumerate() {
            for (label, n) in BUCKET_LABELS_MS.iter().zip(&s.over) {
                over.push((
                    vec![("shard", i.to_string()), ("gt", (*label).to_string())],
                    i64::try_from(n.load(Relaxed)).unwrap_or(i64::MAX),
                ));
            }
        }
        gauges(
            enc,
            "fjord_reactor_stalls_over_ms",
            "Stalls longer than gt milliseconds, since start.",
            &over,
        )
    }
}

/// Every partition replica of every shard.
fn partitions(snaps: &[Snapshot]) -> impl Iterator<Item = &PartitionFigures> {
    snaps.iter().flat_map(|s| s.partitions.iter())
}

/// `kafka_server_replicamanager_*` gauges, node-wide.
fn replica_manager(enc: &mut DescriptorEncoder<'_>, snaps: &[Snapshot]) -> Result<(), Error> {
    let count = |f: &dyn Fn(&PartitionFigures) -> bool| -> Vec<(Labels, i64)> {
        vec![(
            Vec::new(),
            partitions(snaps).filter(|p| f(p)).count() as i64,
        )]
    };
    gauges(
        enc,
        "kafka_server_replicamanager_partitioncount",
        "Partition replicas on this broker.",
        &count(&|_| true),
    )?;
    gauges(
        enc,
        "kafka_server_replicamanager_leadercount",
        "Partitions this broker leads.",
        &count(&|p| p.leader),
    )?;
    gauges(
        enc,
        "kafka_server_replicamanager_underreplicatedpartitions",
        "Partitions led here whose ISR is smaller than their replica set.",
        &count(&|p| p.under_replicated),
    )?;
    gauges(
        enc,
        "kafka_server_replicamanager_underminisrpartitioncount",
        "Partitions led here whose ISR is smaller than min.insync.replicas.",
        &count(&|p| p.under_min_isr),
    )
}

/// `kafka_log_log_*{topic,partition}` gauges.
fn log_metrics(enc: &mut DescriptorEncoder<'_>, snaps: &[Snapshot]) -> Result<(), Error> {
    let families: [Family<PartitionFigures, i64>; 4] = [
        (
            "kafka_log_log_size",
            "Bytes of the partition's log segments.",
            |p| i64::try_from(p.size).unwrap_or(i64::MAX),
        ),
        (
            "kafka_log_log_numlogsegments",
            "Segments of the partition's log.",
            |p| i64::try_from(p.segments).unwrap_or(i64::MAX),
        ),
        (
            "kafka_log_log_logstartoffset",
            "The partition's log start offset.",
            |p| p.log_start_offset,
        ),
        (
            "kafka_log_log_logendoffset",
            "The partition's log end offset.",
            |p| p.log_end_offset,
        ),
    ];
    for (name, help, f) in families {
        let series: Vec<(Labels, i64)> = partitions(snaps)
            .map(|p| {
                (
                    vec![
                        ("topic", p.topic.to_string()),
                        ("partition", p.partition.to_string()),
                    ],
                    f(p),
                )
            })
            .collect();
        gauges(enc, name, help, &series)?;
    }
    Ok(())
}

/// `kafka_consumergroup_lag{consumergroup,topic,partition}` (the name and
/// labels of the widely used Kafka lag exporter): the high watermark of a
/// partition with a replica here minus the group's committed offset, for
/// the groups this broker coordinates. The leader's high watermark where it
/// is led here, else this follower's (the leader's as of its last fetch
/// answer, as a Kafka follower keeps it).
fn consumer_lag(enc: &mut DescriptorEncoder<'_>, snaps: &[Snapshot]) -> Result<(), Error> {
    let mut hw: HashMap<(&str, i32), i64> = HashMap::new();
    for p in partitions(snaps).filter(|p| !p.leader) {
        hw.insert((&*p.topic, p.partition), p.high_watermark);
    }
    for p in partitions(snaps).filter(|p| p.leader) {
        hw.insert((&*p.topic, p.partition), p.high_watermark);
    }
    let mut lag: Vec<(Labels, i64)> = Vec::new();
    let mut current: Vec<(Labels, i64)> = Vec::new();
    for c in snaps.iter().flat_map(|s| s.committed.iter()) {
        let labels: Labels = vec![
            ("consumergroup", c.group.clone()),
            ("topic", c.topic.clone()),
            ("partition", c.partition.to_string()),
        ];
        current.push((labels.clone(), c.offset));
        if let Some(h) = hw.get(&(c.topic.as_str(), c.partition)) {
            lag.push((labels, (h - c.offset).max(0)));
        }
    }
    gauges(
        enc,
        "kafka_consumergroup_current_offset",
        "A group's committed offset, for the groups this broker coordinates.",
        &current,
    )?;
    gauges(
        enc,
        "kafka_consumergroup_lag",
        "High watermark minus committed offset, for the groups this broker coordinates and the partitions it holds a replica of.",
        &lag,
    )
}

/// Classic groups: Kafka's `GroupMetadataManager` gauges (all, and one
/// per state), committed offsets, and Fjord's count by state and protocol
/// type.
fn groups(enc: &mut DescriptorEncoder<'_>, snaps: &[Snapshot]) -> Result<(), Error> {
    let mut by: BTreeMap<(&str, &str), i64> = BTreeMap::new();
    for (state, protocol, n) in snaps.iter().flat_map(|s| s.groups.iter()) {
        *by.entry((state, protocol.as_str())).or_default() += i64::try_from(*n).unwrap_or(0);
    }
    let in_state = |want: Option<&str>| -> Vec<(Labels, i64)> {
        let n = by
            .iter()
            .filter(|((state, _), _)| want.is_none_or(|w| w == *state))
            .map(|(_, n)| *n)
            .sum();
        vec![(Vec::new(), n)]
    };
    gauges(
        enc,
        "kafka_coordinator_group_groupmetadatamanager_numgroups",
        "Classic groups this broker coordinates.",
        &in_state(None),
    )?;
    for (suffix, state) in [
        ("stable", "Stable"),
        ("preparingrebalance", "PreparingRebalance"),
        ("completingrebalance", "CompletingRebalance"),
        ("empty", "Empty"),
        ("dead", "Dead"),
    ] {
        gauges(
            enc,
            &format!("kafka_coordinator_group_groupmetadatamanager_numgroups{suffix}"),
            &format!("Classic groups this broker coordinates in state {state}."),
            &in_state(Some(state)),
        )?;
    }
    let offsets = snaps.iter().map(|s| s.committed.len()).sum::<usize>();
    gauges(
        enc,
        "kafka_coordinator_group_groupmetadatamanager_numoffsets",
        "Committed offsets of the groups this broker coordinates.",
        &[(Vec::new(), i64::try_from(offsets).unwrap_or(i64::MAX))],
    )?;
    let series: Vec<(Labels, i64)> = by
        .into_iter()
        .map(|((state, protocol), n)| {
            (
                vec![
                    ("state", state.to_string()),
                    ("protocol", protocol.to_string()),
                ],
                n,
            )
        })
        .collect();
    gauges(
        enc,
        "fjord_classic_groups",
        "Classic groups this broker coordinates, by state and protocol type.",
        &series,
    )
}

/// `kafka_controller_kafkacontroller_*` and the metadata offset, from the
/// image shard 0 holds.
fn controller(enc: &mut DescriptorEncoder<'_>, snaps: &[Snapshot]) -> Result<(), Error> {
    let Some(c) = snaps.iter().find_map(|s| s.controller.clone()) else {
        return Ok(());
    };
    let one = |v: u64| vec![(Labels::new(), i64::try_from(v).unwrap_or(i64::MAX))];
    gauges(
        enc,
        "kafka_controller_kafkacontroller_activecontrollercount",
        "1 on the active controller, 0 elsewhere.",
        &one(c.active),
    )?;
    gauges(
        enc,
        "kafka_controller_kafkacontroller_offlinepartitionscount",
        "Partitions without a leader.",
        &one(c.offline_partitions),
    )?;
    gauges(
        enc,
        "kafka_controller_kafkacontroller_globalpartitioncount",
        "Partitions in the cluster.",
        &one(c.global_partitions),
    )?;
    gauges(
        enc,
        "kafka_controller_kafkacontroller_globaltopiccount",
        "Topics in the cluster.",
        &one(c.global_topics),
    )?;
    gauges(
        enc,
        "kafka_server_brokermetadatametrics_last_applied_record_offset",
        "The metadata log offset applied into this node's image.",
        &one(c.metadata_offset),
    )
}
