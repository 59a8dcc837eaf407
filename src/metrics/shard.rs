//! One shard's Kafka-named metric set: written only by its shard thread
//! (single-writer `Relaxed` atomics), read and summed over the shards by
//! the metrics thread at scrape (`metrics::collect`).
//!
//! Hot-path counters take no lock: a topic's [`TopicCounters`] is resolved
//! once per shard (registered in the shard's list under a mutex the first
//! time the shard sees the topic, then found in a shard-local cache), and
//! request counters are plain arrays indexed by API key and version. The
//! figures that live in partitions, the metadata image or the group
//! coordinator are copied once a second into [`Snapshot`] by the shard's
//! `metrics sync` task.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::errors::{self, ERROR_SLOTS};
use crate::stall::COUNTED_API_KEYS;

/// Request versions counted one by one; larger versions share the last
/// slot.
pub const COUNTED_VERSIONS: usize = 24;

/// Upper bounds (ms) of the request-time histogram buckets
/// (`kafka_network_requestmetrics_totaltimems_bucket{le=...}`).
pub const TIME_BUCKETS_MS: [f64; 14] = [
    0.5, 1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0,
];

/// The stages of a request's time, as Kafka's `RequestMetrics` splits it,
/// by the suffix of their family (`kafka_network_requestmetrics_<suffix>`):
/// request queue (frame read → handler start), local (handler time minus
/// remote), remote (waiting on others), response queue (response ready →
/// its send starts) and response send (send start → bytes written).
pub const STAGES: [&str; 5] = [
    "requestqueuetimems",
    "localtimems",
    "remotetimems",
    "responsequeuetimems",
    "responsesendtimems",
];

/// Kafka's `BrokerTopicMetrics` of one topic on one shard (counts since
/// start).
#[derive(Debug, Default)]
pub struct TopicCounters {
    /// Records appended as leader (MessagesInPerSec).
    pub messages_in: AtomicU64,
    /// Bytes of the record batches appended as leader (BytesInPerSec).
    pub bytes_in: AtomicU64,
    /// Bytes read for consumers' fetches (BytesOutPerSec; followers'
    /// fetches are not counted, as Kafka counts them apart).
    pub bytes_out: AtomicU64,
    /// Bytes of produced batches refused as too large
    /// (BytesRejectedPerSec: MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE).
    pub bytes_rejected: AtomicU64,
    /// Produce requests' partitions of this topic refused or failed
    /// (FailedProduceRequestsPerSec).
    pub failed_produce: AtomicU64,
    /// Fetch requests' partitions of this topic answered with an error
    /// (FailedFetchRequestsPerSec).
    pub failed_fetch: AtomicU64,
    /// Produce requests' partitions of this topic (TotalProduceRequestsPerSec).
    pub total_produce: AtomicU64,
    /// Fetch requests' partitions of this topic, consumers' and followers'
    /// (TotalFetchRequestsPerSec).
    pub total_fetch: AtomicU64,
    /// Bytes of the record batches a follower here appended from its
    /// leader (ReplicationBytesInPerSec).
    pub replication_bytes_in: AtomicU64,
    /// Bytes read for followers' fetches from this leader
    /// (ReplicationBytesOutPerSec).
    pub replication_bytes_out: AtomicU64,
}

/// Request time (ms) of one API, as a histogram with [`TIME_BUCKETS_MS`].
#[derive(Debug, Default)]
pub struct TimeHistogram {
    /// Requests per bucket (not cumulative; summed at scrape).
    pub buckets: [AtomicU64; TIME_BUCKETS_MS.len()],
    /// Requests over the last bound.
    pub over: AtomicU64,
    /// Sum of the times in µs.
    pub sum_us: AtomicU64,
}

impl TimeHistogram {
    /// Counts one request that took `took`.
    fn observe(&self, took: Duration) {
        let ms = took.as_secs_f64() * 1e3;
        let slot = TIME_BUCKETS_MS.iter().position(|b| ms <= *b);
        match slot.and_then(|i| self.buckets.get(i)) {
            Some(b) => b.fetch_add(1, Relaxed),
            None => self.over.fetch_add(1, Relaxed),
        };
        let us = took.as_micros().min(u128::from(u64::MAX)) as u64;
        self.sum_us.fetch_add(us, Relaxed);
    }
}

/// One partition replica this shard holds, as of the last refresh.
#[derive(Debug, Clone, Default)]
pub struct PartitionFigures {
    /// Topic name.
    pub topic: Arc<str>,
    /// Partition index.
    pub partition: i32,
    /// Log size in bytes (`kafka_log_log_size`).
    pub size: u64,
    /// Segments (`kafka_log_log_numlogsegments`).
    pub segments: u64,
    /// Log start offset.
    pub log_start_offset: i64,
    /// Log end offset.
    pub log_end_offset: i64,
    /// High watermark (what consumers can read; consumer lag is against it).
    pub high_watermark: i64,
    /// Whether this broker leads it.
    pub leader: bool,
    /// Led here and its ISR is smaller than its replica set.
    pub under_replicated: bool,
    /// Led here and its ISR is smaller than `min.insync.replicas`.
    pub under_min_isr: bool,
}

/// A committed offset of a group this shard coordinates.
#[derive(Debug, Clone)]
pub struct CommittedOffset {
    /// Group id.
    pub group: String,
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// The committed offset (next to consume).
    pub offset: i64,
}

/// Classic groups counted by (state, protocol type).
pub type GroupCount = (&'static str, String, u64);

/// What the metadata image says, refreshed by shard 0 only.
#[derive(Debug, Clone, Default)]
pub struct ControllerFigures {
    /// Whether this node is the active controller (1) or not (0).
    pub active: u64,
    /// Partitions without a leader.
    pub offline_partitions: u64,
    /// Partitions in the cluster.
    pub global_partitions: u64,
    /// Topics in the cluster.
    pub global_topics: u64,
    /// The metadata log offset applied into this node's image.
    pub metadata_offset: u64,
}

/// The figures a shard copies once a second.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Every partition replica the shard holds.
    pub partitions: Vec<PartitionFigures>,
    /// Committed offsets of the groups the shard coordinates.
    pub committed: Vec<CommittedOffset>,
    /// Classic groups the shard coordinates, by (state, protocol type).
    pub groups: Vec<GroupCount>,
    /// Shard 0 only: the metadata image's figures.
    pub controller: Option<ControllerFigures>,
    /// Consumer and share groups the shard coordinates, by state.
    pub coordinator: super::coordinator::GroupStates,
    /// Shard 0 of a node in the metadata quorum: its Raft figures.
    pub raft: Option<super::raft::RaftFigures>,
}

/// One shard's Kafka-named metrics.
#[derive(Debug)]
pub struct ShardMetrics {
    /// Topics seen by this shard, each registered once (the mutex is taken
    /// when the shard first sees a topic, and by the metrics thread).
    topics: Mutex<Vec<(Arc<str>, Arc<TopicCounters>)>>,
    /// The counters of deleted topics this shard dropped, summed: they stay
    /// in the all-topics series (Kafka's AllTopics meters keep counting
    /// what deleted topics did) so that it never goes down.
    pub retired: TopicCounters,
    /// Requests by API key then version.
    pub requests: Box<[[AtomicU64; COUNTED_VERSIONS]]>,
    /// Request times (frame read → response sent) by API key.
    pub total_time: Box<[TimeHistogram]>,
    /// Request stage times by stage (as [`STAGES`]) then API key.
    pub stage_time: [Box<[TimeHistogram]>; STAGES.len()],
    /// Error codes answered, by API key then error slot
    /// ([`errors::slot`]): Kafka's `ErrorsPerSec`.
    pub errors: Box<[[AtomicU64; ERROR_SLOTS]]>,
    /// Fetch requests by kind (0: consumers', `FetchConsumer`; 1:
    /// followers', `FetchFollower`) then version.
    pub fetch_kinds: [[AtomicU64; COUNTED_VERSIONS]; 2],
    /// Fetch request times by kind (as `fetch_kinds`).
    pub fetch_kind_time: [TimeHistogram; 2],
    /// Fetch request stage times by kind (as `fetch_kinds`) then stage (as
    /// [`STAGES`]).
    pub fetch_kind_stage_time: [[TimeHistogram; STAGES.len()]; 2],
    /// ISR shrinks this shard's leaders had committed (IsrShrinksPerSec).
    pub isr_shrinks: AtomicU64,
    /// ISR expansions this shard's leaders had committed (IsrExpandsPerSec).
    pub isr_expands: AtomicU64,
    /// Jobs queued on the shard's I/O thread and not yet done, refreshed
    /// about once a second.
    pub io_queue_depth: AtomicU64,
    /// The group coordinator's counters (rebalances, offset commits).
    pub coordinator: super::coordinator::CoordinatorCounters,
    /// Throttle times by quota entity (shard 0, which keeps the quotas'
    /// rates).
    pub quota: super::quota::QuotaEntities,
    /// Figures refreshed once a second (taken once a second by the shard,
    /// at scrape by the metrics thread).
    snapshot: Mutex<Snapshot>,
}

impl Default for ShardMetrics {
    fn default() -> ShardMetrics {
        ShardMetrics {
            topics: Mutex::default(),
            retired: TopicCounters::default(),
            requests: (0..COUNTED_API_KEYS)
                .map(|_| std::array::from_fn(|_| AtomicU64::new(0)))
                .collect(),
            total_time: (0..COUNTED_API_KEYS)
                .map(|_| TimeHistogram::default())
                .collect(),
            stage_time: std::array::from_fn(|_| {
                (0..COUNTED_API_KEYS)
                    .map(|_| TimeHistogram::default())
                    .collect()
            }),
            errors: (0..COUNTED_API_KEYS)
                .map(|_| std::array::from_fn(|_| AtomicU64::new(0)))
                .collect(),
            fetch_kinds: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
            fetch_kind_time: std::array::from_fn(|_| TimeHistogram::default()),
            fetch_kind_stage_time: std::array::from_fn(|_| {
                std::array::from_fn(|_| TimeHistogram::default())
            }),
            isr_shrinks: AtomicU64::new(0),
            isr_expands: AtomicU64::new(0),
            io_queue_depth: AtomicU64::new(0),
            coordinator: Default::default(),
            quota: Default::default(),
            snapshot: Mutex::default(),
        }
    }
}

impl ShardMetrics {
    /// Gives a copy of the topics this shard counted and their counters.
    pub fn topics(&self) -> Vec<(Arc<str>, Arc<TopicCounters>)> {
        self.topics.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Gives a copy of the last refreshed figures.
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Replaces the refreshed figures (the shard's once-a-second task).
    pub fn set_snapshot(&self, s: Snapshot) {
        if let Ok(mut held) = self.snapshot.lock() {
            *held = s;
        }
    }

    /// Counts one request of `api_key` at `version` (Kafka's
    /// `RequestsPerSec`) whose [`Stages`] took `stages`: `total` in
    /// `totaltimems`, each stage in its histogram. A Fetch of a known kind
    /// (`fetch_follower`: Some(true) a follower's, Some(false) a
    /// consumer's) is counted under `FetchFollower` or `FetchConsumer` too.
    pub fn count_request(
        &self,
        api_key: i16,
        version: i16,
        fetch_follower: Option<bool>,
        stages: &Stages,
    ) {
        let key = usize::try_from(api_key)
            .unwrap_or(0)
            .min(COUNTED_API_KEYS - 1);
        let v = usize::try_from(version)
            .unwrap_or(0)
            .min(COUNTED_VERSIONS - 1);
        if let Some(slot) = self.requests.get(key).and_then(|r| r.get(v)) {
            slot.fetch_add(1, Relaxed);
        }
        if let Some(h) = self.total_time.get(key) {
            h.observe(stages.total);
        }
        for (hs, took) in self.stage_time.iter().zip(stages.split) {
            if let Some(h) = hs.get(key) {
                h.observe(took);
            }
        }
        let Some(kind) = fetch_follower.map(usize::from) else {
            return;
        };
        if let Some(slot) = self.fetch_kinds.get(kind).and_then(|k| k.get(v)) {
            slot.fetch_add(1, Relaxed);
        }
        if let Some(h) = self.fetch_kind_time.get(kind) {
            h.observe(stages.total);
        }
        if let Some(hs) = self.fetch_kind_stage_time.get(kind) {
            for (h, took) in hs.iter().zip(stages.split) {
                h.observe(took);
            }
        }
    }

    /// Counts the error codes `visit` gives (it calls its argument once per
    /// code occurrence) for a response of `api_key` (Kafka's
    /// `ErrorsPerSec`, one per code the response's `errorCounts()` counts).
    pub fn count_errors(&self, api_key: i16, visit: impl FnOnce(&mut dyn FnMut(i16))) {
        let key = usize::try_from(api_key)
            .unwrap_or(0)
            .min(COUNTED_API_KEYS - 1);
        let Some(by_code) = self.errors.get(key) else {
            return;
        };
        visit(&mut |code| {
            if let Some(n) = by_code.get(errors::slot(code)) {
                n.fetch_add(1, Relaxed);
            }
        });
    }
}

/// A request's time, split as Kafka's `RequestMetrics` splits it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stages {
    /// Frame read → response sent (`totaltimems`).
    pub total: Duration,
    /// By stage, as [`STAGES`]; they add up to `total`.
    pub split: [Duration; STAGES.len()],
}

impl Stages {
    /// Takes the instants a request passed: its frame `received` whole,
    /// its handler `started`, its response `ready` (of which `remote` was
    /// spent waiting on others), its send started (`send_start`) and done
    /// (`send_end`). Gives the stages; instants out of order count as 0.
    pub fn new(
        received: Instant,
        started: Instant,
        ready: Instant,
        remote: Duration,
        send_start: Instant,
        send_end: Instant,
    ) -> Stages {
        let handler = ready.saturating_duration_since(started);
        let remote = remote.min(handler);
        Stages {
            total: send_end.saturating_duration_since(received),
            split: [
                started.saturating_duration_since(received),
                handler - remote,
                remote,
                send_start.saturating_duration_since(ready),
                send_end.saturating_duration_since(send_start),
            ],
        }
    }
}

/// One request's way through the broker up to its response being ready;
/// counted (requests, times; [`ShardMetrics::count_request`]) on this
/// thread's shard when its send is done ([`RequestTiming::sent`]), or when
/// dropped unsent (a connection closed with the request in flight: the
/// send stages then end at the drop), so that every dispatched request is
/// counted once.
#[derive(Debug)]
pub struct RequestTiming {
    api_key: i16,
    version: i16,
    fetch_follower: Option<bool>,
    received: Instant,
    started: Instant,
    ready: Instant,
    remote: Duration,
    counted: bool,
}

impl RequestTiming {
    /// Takes the request's API key and version, its Fetch kind (see
    /// [`ShardMetrics::count_request`]) and the instants of
    /// [`Stages::new`] up to the response being ready.
    pub fn new(
        (api_key, version): (i16, i16),
        fetch_follower: Option<bool>,
        (received, started, ready): (Instant, Instant, Instant),
        remote: Duration,
    ) -> RequestTiming {
        RequestTiming {
            api_key,
            version,
            fetch_follower,
            received,
            started,
            ready,
            remote,
            counted: false,
        }
    }

    /// Counts the request, its response's send having started at
    /// `send_start` and ended at `send_end` (both the same instant when
    /// nothing was sent).
    pub fn sent(mut self, send_start: Instant, send_end: Instant) {
        self.count(send_start, send_end);
    }

    fn count(&mut self, send_start: Instant, send_end: Instant) {
        if std::mem::replace(&mut self.counted, true) {
            return;
        }
        let stages = Stages::new(
            self.received,
            self.started,
            self.ready,
            self.remote,
            send_start,
            send_end,
        );
        LOCAL.with(|l| {
            if let Ok(l) = l.try_borrow() {
                if let Some(l) = l.as_ref() {
                    l.metrics.count_request(
                        self.api_key,
                        self.version,
                        self.fetch_follower,
                        &stages,
                    );
                }
            }
        });
    }
}

impl Drop for RequestTiming {
    fn drop(&mut self) {
        if !self.counted {
            let now = Instant::now();
            self.count(now, now);
        }
    }
}

/// This thread's shard metrics and its topic cache.
struct Local {
    metrics: Arc<ShardMetrics>,
    topics: HashMap<Arc<str>, Arc<TopicCounters>>,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

/// Makes `metrics` this thread's (a shard's) metric set. Before this, the
/// recording functions count nothing.
pub fn install(metrics: Arc<ShardMetrics>) {
    LOCAL.with(|l| {
        *l.borrow_mut() = Some(Local {
            metrics,
            topics: HashMap::new(),
        })
    });
}

impl TopicCounters {
    /// The ten counters in the order the scrape lists them: messages in,
    /// bytes in, bytes out, failed produce, failed fetch, total produce,
    /// total fetch, bytes rejected, replication bytes in and out.
    pub fn all(&self) -> [&AtomicU64; 10] {
        [
            &self.messages_in,
            &self.bytes_in,
            &self.bytes_out,
            &self.failed_produce,
            &self.failed_fetch,
            &self.total_produce,
            &self.total_fetch,
            &self.bytes_rejected,
            &self.replication_bytes_in,
            &self.replication_bytes_out,
        ]
    }
}

/// Drops this shard's counters of the topics `keep` refuses (deleted ones:
/// Kafka removes a deleted topic's BrokerTopicMetrics), adding them to the
/// shard's retired totals first. Called about once a second.
pub fn retain_topics(keep: impl Fn(&str) -> bool) {
    LOCAL.with(|l| {
        let Ok(mut l) = l.try_borrow_mut() else {
            return;
        };
        let Some(l) = l.as_mut() else { return };
        if l.topics.keys().all(|t| keep(t)) {
            return;
        }
        let metrics = l.metrics.clone();
        l.topics.retain(|t, c| {
            if keep(t) {
                return true;
            }
            for (r, v) in metrics.retired.all().into_iter().zip(c.all()) {
                r.fetch_add(v.load(Relaxed), Relaxed);
            }
            false
        });
        if let Ok(mut all) = metrics.topics.lock() {
            all.retain(|(t, _)| keep(t));
        };
    });
}

/// Runs `f` with this shard's counters of `topic` (registered on first
/// use); nothing on a thread without [`install`].
pub fn with_topic(topic: &Arc<str>, f: impl FnOnce(&TopicCounters)) {
    LOCAL.with(|l| {
        let Ok(mut l) = l.try_borrow_mut() else {
            return;
        };
        let Some(l) = l.as_mut() else { return };
        if let Some(c) = l.topics.get(topic) {
            f(c);
            return;
        }
        let c = Arc::new(TopicCounters::default());
        if let Ok(mut all) = l.metrics.topics.lock() {
            all.push((topic.clone(), c.clone()));
        }
        f(&c);
        l.topics.insert(topic.clone(), c);
    });
}

/// Counts the error codes of a response of `api_key` on this shard (see
/// [`ShardMetrics::count_errors`]); nothing on a thread without
/// [`install`].
pub fn count_errors(api_key: i16, visit: impl FnOnce(&mut dyn FnMut(i16))) {
    LOCAL.with(|l| {
        if let Ok(l) = l.try_borrow() {
            if let Some(l) = l.as_ref() {
                l.metrics.count_errors(api_key, visit);
            }
        }
    });
}

/// Gives this shard's metric set, if installed.
pub fn here() -> Option<Arc<ShardMetrics>> {
    LOCAL.with(|l| {
        l.try_borrow()
            .ok()
            .and_then(|l| l.as_ref().map(|l| l.metrics.clone()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{parse, render};
    use crate::stall::registry;

    #[test]
    fn shards_are_summed_at_scrape() {
        let stats = registry(2);
        let topic: Arc<str> = Arc::from("t");
        for (i, n) in [(0usize, 3u64), (1, 4)] {
            install(stats[i].broker.clone());
            with_topic(&topic, |c| {
                c.messages_in.fetch_add(n, Relaxed);
            });
            // The cached handle is the registered one.
            with_topic(&topic, |c| {
                c.messages_in.fetch_add(1, Relaxed);
            });
        }
        // All of a request's time in one stage (the request queue).
        let took = |d: Duration| Stages {
            total: d,
            split: [
                d,
                Duration::ZERO,
                Duration::ZERO,
                Duration::ZERO,
                Duration::ZERO,
            ],
        };
        stats[0]
            .broker
            .count_request(0, 9, None, &took(Duration::from_micros(300)));
        stats[1]
            .broker
            .count_request(0, 9, None, &took(Duration::from_millis(30)));
        stats[1]
            .broker
            .count_request(1, 16, Some(false), &took(Duration::from_secs(20)));
        stats[0].broker.count_errors(0, |each| {
            for code in [0, 0, 3] {
                each(code);
            }
        });
        stats[1].broker.count_errors(0, |each| each(0));
        let samples = parse(&render(&stats));
        let get = |name: &str, labels: &str| {
            samples
                .iter()
                .find(|s| s.name == name && s.labels == labels)
                .map(|s| s.value)
        };
        let name = "kafka_server_brokertopicmetrics_messagesin_total";
        assert_eq!(get(name, "topic=\"t\""), Some(9.0));
        assert_eq!(get(name, ""), Some(9.0));
        assert_eq!(
            get(
                "kafka_network_requestmetrics_requests_total",
                "request=\"Produce\",version=\"9\""
            ),
            Some(2.0)
        );
        let bucket = "kafka_network_requestmetrics_totaltimems_bucket";
        assert_eq!(get(bucket, "request=\"Produce\",le=\"0.5\""), Some(1.0));
        assert_eq!(get(bucket, "request=\"Produce\",le=\"25\""), Some(1.0));
        assert_eq!(get(bucket, "request=\"Produce\",le=\"50\""), Some(2.0));
        assert_eq!(get(bucket, "request=\"Fetch\",le=\"10000\""), Some(0.0));
        assert_eq!(get(bucket, "request=\"Fetch\",le=\"+Inf\""), Some(1.0));
        // One bucket per bound and +Inf: no finite stand-in for infinity
        // (histogram_quantile would interpolate up to it).
        let fetch_buckets = samples
            .iter()
            .filter(|s| s.name == bucket && s.labels.starts_with("request=\"Fetch\","))
            .count();
        assert_eq!(fetch_buckets, TIME_BUCKETS_MS.len() + 1);
        assert_eq!(
            get(
                "kafka_network_requestmetrics_totaltimems_count",
                "request=\"Produce\""
            ),
            Some(2.0)
        );
        let errors = "kafka_network_requestmetrics_errors_total";
        assert_eq!(get(errors, "request=\"Produce\",error=\"NONE\""), Some(3.0));
        assert_eq!(
            get(
                errors,
                "request=\"Produce\",error=\"UNKNOWN_TOPIC_OR_PARTITION\""
            ),
            Some(1.0)
        );
        // Only the codes answered are listed.
        assert_eq!(get(errors, "request=\"Fetch\",error=\"NONE\""), None);
        for stage in STAGES {
            let count = format!("kafka_network_requestmetrics_{stage}_count");
            assert_eq!(get(&count, "request=\"Produce\""), Some(2.0), "{stage}");
            assert_eq!(
                get(&count, "request=\"FetchConsumer\""),
                Some(1.0),
                "{stage}"
            );
        }
        let queue = "kafka_network_requestmetrics_requestqueuetimems_bucket";
        assert_eq!(get(queue, "request=\"Produce\",le=\"0.5\""), Some(1.0));
        let local = "kafka_network_requestmetrics_localtimems_bucket";
        assert_eq!(get(local, "request=\"Produce\",le=\"0.5\""), Some(2.0));
        assert_eq!(
            get(
                "kafka_network_requestmetrics_requests_total",
                "request=\"FetchConsumer\",version=\"16\""
            ),
            Some(1.0)
        );
    }

    /// The stages add up to the total; remote time is taken out of the
    /// handler's.
    #[test]
    fn stages_split_the_total() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let s = Stages::new(
            at(0),
            at(2),
            at(12),
            Duration::from_millis(7),
            at(13),
            at(16),
        );
        let ms = |n: u64| Duration::from_millis(n);
        assert_eq!(s.total, ms(16));
        assert_eq!(s.split, [ms(2), ms(3), ms(7), ms(1), ms(3)]);
        assert_eq!(s.split.iter().sum::<Duration>(), s.total);
        // A remote time over the handler's is cut to it.
        let s = Stages::new(at(0), at(0), at(1), ms(5), at(1), at(1));
        assert_eq!(s.split, [ms(0), ms(0), ms(1), ms(0), ms(0)]);
    }
}
