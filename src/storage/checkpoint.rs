//! The names of a partition directory's checkpoint files (offsets, and the
//! producer-state snapshots the partition writes), below the log,
//! retention, the cleaner and recovery, which all read or skip them.

use std::path::Path;

/// Name of the per-partition log start offset checkpoint (written by
/// retention and DeleteRecords, read when the log opens).
pub const LOG_START_CHECKPOINT: &str = "log-start-offset";

/// Name of the per-partition cleaner checkpoint (first dirty offset).
pub const CLEANER_CHECKPOINT: &str = "cleaner-offset";

/// Suffix of a producer-state snapshot (`<offset:020>.snapshot`, written
/// by `txn::snapshot`); recovery leaves these files alone.
pub const PRODUCER_SNAPSHOT_SUFFIX: &str = ".snapshot";

/// Suffix of a producer-state snapshot being written (`txn::snapshot`).
pub const PRODUCER_SNAPSHOT_TMP_SUFFIX: &str = ".snapshot.tmp";

/// Reads the checkpointed log start offset of a partition directory.
pub fn read_log_start_checkpoint(dir: &Path) -> Option<i64> {
    super::read_offset_file(dir, LOG_START_CHECKPOINT)
}

#[cfg(test)]
mod tests {
    /// The snapshot names recovery skips are those the snapshot writer uses.
    #[test]
    fn snapshot_suffixes_match_the_writer() {
        assert_eq!(
            super::PRODUCER_SNAPSHOT_SUFFIX,
            crate::txn::snapshot::SNAPSHOT_SUFFIX
        );
        assert_eq!(
            super::PRODUCER_SNAPSHOT_TMP_SUFFIX,
            crate::txn::snapshot::SNAPSHOT_TMP_SUFFIX
        );
    }
}
