//! Fjord storage layer: Kafka's on-disk partition log format.
//!
//! A partition log is a directory `<topic>-<partition>/` holding segments
//! named by their 20-digit zero-padded base offset: `<base>.log` (RecordBatch
//! v2 bytes exactly as appended, with broker-assigned offsets), `<base>.index`
//! (sparse offset index), `<base>.timeindex` (sparse time index) and, when
//! the segment holds ABORT markers, `<base>.txnindex` (aborted transactions).
//!
//! - [`batch`]: zero-copy RecordBatch v2 header view and Produce validation.
//! - [`index`]: `.index` / `.timeindex` files.
//! - [`epoch_cache`]: the leader-epoch cache and its `leader-epoch-checkpoint`.
//! - [`file_jobs`]: the log's file work a shard runs off its reactor, in order.
//! - [`segment`]: one segment.
//! - [`log`]: [`PartitionLog`], append/read/list-offsets.
//! - [`recompress`]: broker-side compression (topic `compression.type`).
//! - [`recovery`]: opening a partition directory after a clean or unclean shutdown.
//! - [`txn_index`]: transaction markers and `.txnindex` files (KIP-98).

pub mod batch;
pub mod cache;
pub mod checkpoint;
pub mod cleaner;
pub mod epoch_cache;
pub mod file_jobs;
pub mod index;
pub mod log;
pub mod log_config;
pub mod recompress;
pub mod records;
pub mod recovery;
pub mod retention;
pub mod segment;
pub mod txn_index;

pub use self::batch::{
    log_append_time_header, replica_batches, validate_batches, BatchError, BatchHeader,
    ValidatedBatch, RECORD_BATCH_HEADER_BYTES,
};
pub use self::log::{AppendResult, FileRegion, LogConfig, PartitionLog, ReadResult, TimestampType};
pub use self::recompress::{Codec, TargetCodec};
pub use self::segment::ReadMode;

/// Errors of the storage layer. `crate::error` maps each variant to
/// the Kafka error code to answer with.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// An I/O error on a segment or index file. Kafka `KAFKA_STORAGE_ERROR` (56).
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// A fetch/read offset outside [log start offset, LEO].
    /// Kafka `OFFSET_OUT_OF_RANGE` (1).
    #[error("offset {requested} out of range [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        /// The offset asked for.
        requested: i64,
        /// Current log start offset.
        log_start_offset: i64,
        /// Current log end offset (LEO).
        log_end_offset: i64,
    },
    /// Unrecoverable on-disk state found while opening a log (e.g.
    /// overlapping segments). Startup diagnostics only; Kafka `KAFKA_STORAGE_ERROR` (56).
    #[error("corrupt log: {}: {damage}", dir.display())]
    Corrupt {
        /// The partition directory.
        dir: std::path::PathBuf,
        /// What is wrong.
        damage: LogDamage,
    },
    /// The in-memory state and the files disagree at runtime (e.g. a batch
    /// header not where the index says). Kafka `KAFKA_STORAGE_ERROR` (56).
    #[error("log inconsistency: {}{what}", path_prefix(path))]
    Inconsistent {
        /// The segment file or partition directory, when one is concerned.
        path: Option<std::path::PathBuf>,
        /// What disagrees.
        what: Inconsistency,
    },
    /// A read under [`ReadMode::NoWait`] found bytes that are not in the
    /// page cache (preadv2 `RWF_NOWAIT` answered EAGAIN). The caller warms
    /// `len` bytes of `file` from `position` off the shard and reads again;
    /// never sent to a client (mapped to KAFKA_STORAGE_ERROR (56) should it
    /// ever get that far).
    #[error("{}: {len} bytes at {position} not in the page cache", path.display())]
    NotCached {
        /// The `.log` file to warm.
        file: std::sync::Arc<std::fs::File>,
        /// Its path (for logs).
        path: std::path::PathBuf,
        /// Start of the range to warm (bytes).
        position: u64,
        /// Length of the range to warm (bytes).
        len: u64,
    },
    /// `append` was given batches that do not match the records bytes.
    /// Maps to the batch error's code (`CORRUPT_MESSAGE` (2) for a mismatch).
    #[error("invalid batch: {0}")]
    Batch(#[from] BatchError),
}

/// "`path`: " for an error text, or "".
fn path_prefix(path: &Option<std::path::PathBuf>) -> String {
    match path {
        Some(p) => format!("{}: ", p.display()),
        None => String::new(),
    }
}

/// What is wrong with a log found while opening it ([`StorageError::Corrupt`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogDamage {
    /// A segment starts below the next offset of the segment before it.
    #[error(
        "segment {} starts at {base_offset} but the previous one ends at offset {previous_next_offset}",
        segment.display()
    )]
    OverlappingSegments {
        /// The segment's `.log` file.
        segment: std::path::PathBuf,
        /// Its base offset.
        base_offset: i64,
        /// The next offset of the segment before it.
        previous_next_offset: i64,
    },
}

/// What disagrees between the in-memory state and the files
/// ([`StorageError::Inconsistent`]). Positions and sizes are bytes in a
/// segment's `.log` file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Inconsistency {
    /// No whole 61-byte batch header at `position` of a segment of `size` bytes.
    #[error("no whole batch header at position {position} (size {size})")]
    NoWholeHeader {
        /// Where the header was expected.
        position: u64,
        /// The segment's size.
        size: u64,
    },
    /// A stored batch header that does not parse.
    #[error("{0}")]
    BadHeader(BatchError),
    /// A stored batch whose length runs past the segment (or is below a header).
    #[error("bad batch length {batch_length} at position {position}")]
    BadBatchLength {
        /// The batchLength field.
        batch_length: i32,
        /// Where the batch starts.
        position: u64,
    },
    /// A stored batch whose records do not decode (the decoder's message).
    #[error("{reason}")]
    Decode {
        /// The record decoder's message.
        reason: String,
    },
    /// The cleaner could not encode the records it keeps of a batch (the
    /// encoder's message).
    #[error("re-encoding a batch: {reason}")]
    Encode {
        /// The record encoder's message.
        reason: String,
    },
    /// An append larger than a segment can hold.
    #[error("append of {bytes} bytes does not fit a segment")]
    AppendTooLarge {
        /// The append's size.
        bytes: u64,
    },
    /// A replica append whose first batch does not start at the offset the
    /// log expects next (a follower fetched out of step).
    #[error("replica append at offset {base_offset}, but the log continues at {expected}")]
    ReplicaOutOfStep {
        /// The first batch's base offset.
        base_offset: i64,
        /// The offset the log expects.
        expected: i64,
    },
    /// A commit whose base offset is not the log end offset.
    #[error("commit of offset {base_offset} out of order (LEO {log_end_offset})")]
    CommitOutOfOrder {
        /// The append's base offset.
        base_offset: i64,
        /// The log end offset.
        log_end_offset: i64,
    },
    /// The segment a pending append was reserved in no longer exists.
    #[error("segment {segment_base} of a pending append is gone")]
    SegmentGone {
        /// The segment's base offset.
        segment_base: i64,
    },
    /// A commit at a position other than the segment's end.
    #[error("commit at position {position} but the segment holds {segment_size} bytes")]
    CommitPosition {
        /// Where the append was reserved.
        position: u64,
        /// The segment's size.
        segment_size: u64,
    },
    /// A truncation asked for while reserved appends are not committed
    /// (their writes in flight): the caller truncates once they are.
    #[error("truncation to {offset} while appends up to {next_offset} are in flight (LEO {log_end_offset})")]
    TruncateWithPendingAppends {
        /// The offset asked for.
        offset: i64,
        /// The log end offset.
        log_end_offset: i64,
        /// The offset the next reservation would get.
        next_offset: i64,
    },
    /// A truncation asked for while a compaction pass rewrites the
    /// partition's segments: the caller truncates once it is done.
    #[error("truncation to {offset} while a compaction pass runs")]
    TruncateDuringCompaction {
        /// The offset asked for.
        offset: i64,
    },
    /// The append was dropped before its write finished.
    #[error("append abandoned")]
    AppendAbandoned,
    /// The append was committed without its write result.
    #[error("append committed unwritten")]
    CommittedUnwritten,
    /// The append's result was asked for before it was committed.
    #[error("append not committed")]
    NotCommitted,
}

/// Reads a one-number offset file of a partition directory (the log start
/// offset and cleaner checkpoints); `None` when missing or unreadable.
pub(crate) fn read_offset_file(dir: &std::path::Path, name: &str) -> Option<i64> {
    std::fs::read_to_string(dir.join(name))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Writes a one-number offset file atomically and durably: temporary file,
/// fsync, rename, fsync of the directory.
pub(crate) fn write_offset_file(
    dir: &std::path::Path,
    name: &str,
    offset: i64,
) -> std::io::Result<()> {
    write_file_durably(
        dir,
        name,
        &format!("{name}.tmp"),
        format!("{offset}\n").as_bytes(),
    )
}

/// Takes a directory, a file name, the name of the temporary file to write
/// first and the content; replaces the file atomically and durably:
/// writes the temporary file, fsyncs it, renames it over `name`, fsyncs the
/// directory (blocking, on the calling thread).
pub(crate) fn write_file_durably(
    dir: &std::path::Path,
    name: &str,
    tmp_name: &str,
    content: &[u8],
) -> std::io::Result<()> {
    let tmp = dir.join(tmp_name);
    std::fs::write(&tmp, content)?;
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, dir.join(name))?;
    std::fs::File::open(dir)?.sync_all()
}
