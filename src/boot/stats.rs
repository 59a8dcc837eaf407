//! Each shard's counters for the metrics endpoint and the stall summary at
//! shutdown: copied from the shard's thread-local counters every
//! [`METRICS_SYNC`].

use std::time::Duration;

use crate::config::Config;
use crate::metrics::shard::{ControllerFigures, PartitionFigures, Snapshot};
use crate::shard::stall::ShardStallStats;

/// Writes each shard's stall counters on stderr (orderly shutdown).
pub(super) fn print_stall_summary(config: &Config, stalls: &[ShardStallStats]) {
    if config.reactor_stall_threshold_us == 0 {
        return;
    }
    for (i, s) in stalls.iter().enumerate() {
        eprintln!(
            "shard {i}: reactor stalls over {} µs: {}",
            config.reactor_stall_threshold_us,
            s.summary()
        );
    }
}

/// How often a shard copies its thread-local sendfile counters into its
/// [`ShardStallStats`] for the metrics endpoint.
pub(super) const METRICS_SYNC: Duration = Duration::from_secs(1);

/// Copies this shard's `net::sendfile::WRITE_STATS` and its leader and
/// under-replicated partition counts into `stats`.
pub(super) fn sync_write_stats(stats: &ShardStallStats) {
    use std::sync::atomic::Ordering::Relaxed;
    crate::net::sendfile::WRITE_STATS.with(|w| {
        stats
            .sendfile_zero_copy_bytes
            .store(w.zero_copy_bytes.get(), Relaxed);
        stats
            .sendfile_fallback_bytes
            .store(w.fallback_bytes.get(), Relaxed);
        stats
            .tls_copied_bytes
            .store(w.tls_copied_bytes.get(), Relaxed);
        stats
            .replica_connections_moved
            .store(w.replica_connections_moved.get(), Relaxed);
        stats.replica_reads.store(w.replica_reads.get(), Relaxed);
        stats
            .replica_reads_cross_shard
            .store(w.replica_reads_cross_shard.get(), Relaxed);
        stats
            .quota_throttled_responses
            .store(w.quota_throttled_responses.get(), Relaxed);
        stats
            .quota_throttle_ms
            .store(w.quota_throttle_ms.get(), Relaxed);
        stats
            .fetch_regions_checked
            .store(w.regions_checked.get(), Relaxed);
        stats
            .fetch_regions_missed
            .store(w.regions_warmed.get(), Relaxed);
        stats
            .fetch_bytes_missed
            .store(w.bytes_warmed.get(), Relaxed);
        stats
            .fetch_header_misses
            .store(w.header_warms.get(), Relaxed);
    });
    if let Ok(shard) = crate::shard::current() {
        let (mut led, mut under) = (0u64, 0u64);
        for p in shard.owned_partitions() {
            if p.is_leader() {
                led += 1;
                under += u64::from(p.isr_size() < p.replica_count());
            }
        }
        stats.leader_partitions.store(led, Relaxed);
        stats.under_replicated_partitions.store(under, Relaxed);
        let sessions = shard.fetch_sessions.borrow().len() as u64;
        stats.incremental_fetch_sessions.store(sessions, Relaxed);
        {
            let image = shard.metadata();
            crate::metrics::shard::retain_topics(|t| image.topic(t).is_some());
        }
        stats.broker.set_snapshot(snapshot(&shard));
        if let Ok(depth) = crate::shard::io::with_io(|io| io.stats().queue_depth()) {
            stats.broker.io_queue_depth.store(depth, Relaxed);
        }
    }
}

/// The figures of `shard`'s partitions, groups and (shard 0) metadata
/// image for the Kafka-named metrics (`metrics::shard::Snapshot`).
fn snapshot(shard: &crate::shard::Shard) -> Snapshot {
    let partitions = shard
        .owned_partitions()
        .iter()
        .map(|p| {
            let leader = p.is_leader();
            let isr = p.isr_size();
            let min_isr = usize::try_from(p.settings().min_insync_replicas.max(1)).unwrap_or(1);
            PartitionFigures {
                topic: p.topic().clone(),
                partition: p.index(),
                size: p.size_bytes(),
                segments: p.segment_count() as u64,
                log_start_offset: p.log_start_offset(),
                log_end_offset: p.log_end_offset(),
                high_watermark: p.high_watermark(),
                leader,
                under_replicated: leader && isr < p.replica_count(),
                under_min_isr: leader && isr < min_isr,
            }
        })
        .collect();
    let (committed, groups) = crate::group::coordinator::metrics_figures();
    let controller = (shard.id == 0).then(|| {
        let image = shard.metadata();
        let (mut all, mut offline) = (0u64, 0u64);
        for t in image.topics.values() {
            for a in &t.assignments {
                all += 1;
                offline += u64::from(a.leader < 0);
            }
        }
        ControllerFigures {
            active: u64::from(image.controller_id == shard.config.node_id),
            offline_partitions: offline,
            global_partitions: all,
            global_topics: image.topics.len() as u64,
            metadata_offset: image.offset,
        }
    });
    let raft = if shard.id == 0 {
        shard.quorum().map(|q| q.raft_figures())
    } else {
        None
    };
    Snapshot {
        partitions,
        committed,
        groups,
        controller,
        coordinator: crate::group::coordinator::group_states(),
        raft,
    }
}
