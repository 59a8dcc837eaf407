//! This shard's response-writing statistics ([`WRITE_STATS`]): bytes sent
//! with sendfile(2) or copied, page-cache checks and warms. The response
//! writer (`net::sendfile`) and Fetch (`handlers::fetch`) count into them;
//! boot copies them into the shard's metrics about once a second.

use std::cell::Cell;

/// Bytes sent per path on this shard (for the benchmark report).
#[derive(Debug, Default)]
pub struct WriteStats {
    /// Bytes sent with sendfile(2).
    pub zero_copy_bytes: Cell<u64>,
    /// Bytes copied through user space because the socket was full.
    pub fallback_bytes: Cell<u64>,
    /// Bytes of file regions read and encrypted for TLS connections
    /// (sendfile cannot send them: the records are encrypted in user space).
    pub tls_copied_bytes: Cell<u64>,
    /// File regions checked for page-cache residency before sendfile.
    pub regions_checked: Cell<u64>,
    /// Regions found not (fully) cached and warmed off the shard first.
    pub regions_warmed: Cell<u64>,
    /// Bytes read on the blocking pool to warm regions before sendfile.
    pub bytes_warmed: Cell<u64>,
    /// Fetch reads of batch headers that found them out of the page cache
    /// and warmed them on the blocking pool before reading again.
    pub header_warms: Cell<u64>,
    /// Bytes read on the blocking pool for those header warms.
    pub header_bytes_warmed: Cell<u64>,
    /// Follower (replica) fetch connections this shard accepted and handed
    /// to the shard that owns the partitions they fetch (`net::handoff`).
    pub replica_connections_moved: Cell<u64>,
    /// Partitions of follower fetches served on this shard's connections.
    pub replica_reads: Cell<u64>,
    /// Of those, the partitions owned by another shard (each read crossed
    /// cores once).
    pub replica_reads_cross_shard: Cell<u64>,
    /// Responses of this shard's connections throttled by a client quota.
    pub quota_throttled_responses: Cell<u64>,
    /// Their throttle times, summed (ms).
    pub quota_throttle_ms: Cell<u64>,
}

thread_local! {
    /// This shard's write statistics.
    pub static WRITE_STATS: WriteStats = WriteStats::default();
}
