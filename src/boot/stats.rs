//! Each shard's counters for the metrics endpoint and the stall summary at
//! shutdown: copied from the shard's thread-local counters every
//! [`METRICS_SYNC`].

use std::time::Duration;

use crate::config::Config;
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
    }
}
