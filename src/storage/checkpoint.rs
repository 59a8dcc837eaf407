//! The names of a partition directory's checkpoint files (offsets, and the
//! producer-state snapshots the partition writes), below the log,
//! retention, the cleaner and recovery, which all read or skip them; and
//! the data directory's high-watermark checkpoints in Kafka's offset
//! checkpoint format (`replication-offset-checkpoint`).
//!
//! Kafka keeps one `replication-offset-checkpoint` per log directory,
//! written every `replica.high.watermark.checkpoint.interval.ms` and at
//! shutdown, and starts each partition's high watermark from it. Fjord's
//! shards own their partitions outright, so each shard writes its own file,
//! `replication-offset-checkpoint-<shard>`, in the same format; at start-up
//! every such file (and Kafka's own, from a migrated directory) is read, and
//! a partition named in two files (the shard count changed, or a migrated
//! Kafka file) takes the entry of the most recently written one.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Name of the per-partition log start offset checkpoint (written by
/// retention and DeleteRecords, read when the log opens).
pub const LOG_START_CHECKPOINT: &str = "log-start-offset";

/// Name of the per-partition cleaner checkpoint (first dirty offset).
pub const CLEANER_CHECKPOINT: &str = "cleaner-offset";

/// Suffix of a producer-state snapshot (`<offset:020>.snapshot`, written
/// by `producer_state::snapshot`); recovery leaves these files alone.
pub const PRODUCER_SNAPSHOT_SUFFIX: &str = ".snapshot";

/// Suffix of a producer-state snapshot being written (`producer_state::snapshot`).
pub const PRODUCER_SNAPSHOT_TMP_SUFFIX: &str = ".snapshot.tmp";

/// Reads the checkpointed log start offset of a partition directory.
pub fn read_log_start_checkpoint(dir: &Path) -> Option<i64> {
    super::read_offset_file(dir, LOG_START_CHECKPOINT)
}

/// Kafka's name of the high-watermark checkpoint of a log directory; the
/// prefix of each shard's file.
pub const HW_CHECKPOINT: &str = "replication-offset-checkpoint";

/// Takes a shard index; gives the name of that shard's high-watermark
/// checkpoint file in the data directory.
pub fn hw_checkpoint_file(shard: usize) -> String {
    format!("{HW_CHECKPOINT}-{shard}")
}

/// (topic, partition) → offset, as a checkpoint file lists them.
pub type OffsetCheckpoint = BTreeMap<(String, i32), i64>;

/// Parses Kafka's offset checkpoint file format (version 0: a version line,
/// a count line, then `topic partition offset` lines) into
/// (topic, partition) → offset. Errors name the file and the line.
pub fn read_kafka_checkpoint(path: &Path) -> std::io::Result<OffsetCheckpoint> {
    let text = std::fs::read_to_string(path)?;
    parse_kafka_checkpoint(&text).map_err(|what| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: {what}", path.display()),
        )
    })
}

/// Takes the text of an offset checkpoint file; gives its entries as
/// [`read_kafka_checkpoint`] does, or what is wrong (naming the line).
pub fn parse_kafka_checkpoint(text: &str) -> Result<OffsetCheckpoint, String> {
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some("0") {
        return Err("only version 0 is known".into());
    }
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| "no entry count on line 2".to_string())?;
    let mut out = BTreeMap::new();
    for (i, line) in lines.enumerate().take(count) {
        let mut f = line.split_whitespace();
        let bad = || format!("line {} is not `topic partition offset`", i + 3);
        let (Some(t), Some(p), Some(o), None) = (f.next(), f.next(), f.next(), f.next()) else {
            return Err(bad());
        };
        let (Ok(p), Ok(o)) = (p.parse::<i32>(), o.parse::<i64>()) else {
            return Err(bad());
        };
        out.insert((t.to_string(), p), o);
    }
    if out.len() != count {
        return Err(format!("{count} entries announced, {} found", out.len()));
    }
    Ok(out)
}

/// Takes the entries; gives them in Kafka's offset checkpoint format
/// (version 0, the count, one `topic partition offset` line each).
pub fn encode_checkpoint(entries: &OffsetCheckpoint) -> Vec<u8> {
    let mut out = format!("0\n{}\n", entries.len());
    for ((topic, partition), offset) in entries {
        out.push_str(&format!("{topic} {partition} {offset}\n"));
    }
    out.into_bytes()
}

/// Takes the data directory; gives the high watermark of every partition
/// named in its `replication-offset-checkpoint*` files (each shard's, and
/// Kafka's own from a migrated directory), from the most recently modified
/// file that names it. A file that cannot be read or parsed is skipped with
/// a warning: its partitions start as Kafka starts a partition missing from
/// the checkpoint (at the log start offset).
pub fn read_hw_checkpoints(data_dir: &Path) -> HashMap<(String, i32), i64> {
    let mut out: HashMap<(String, i32), i64> = HashMap::new();
    let Ok(entries) = std::fs::read_dir(data_dir) else {
        return out;
    };
    let mut files: Vec<(std::time::SystemTime, std::path::PathBuf)> = entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(HW_CHECKPOINT) && !n.ends_with(".tmp"))
        })
        .map(|e| {
            let modified = e
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            (modified, e.path())
        })
        .collect();
    files.sort();
    for (_, path) in files {
        match read_kafka_checkpoint(&path) {
            Ok(m) => out.extend(m),
            Err(err) => log::warn!("high-watermark checkpoint skipped: {err}"),
        }
    }
    out
}

/// Takes the data directory, a shard index and that shard's entries;
/// replaces the shard's high-watermark checkpoint atomically and durably
/// (temporary file, fsync, rename, directory fsync). Blocking: the shard
/// calls it on the blocking pool.
pub fn write_hw_checkpoint(
    data_dir: &Path,
    shard: usize,
    entries: &OffsetCheckpoint,
) -> std::io::Result<()> {
    let name = hw_checkpoint_file(shard);
    super::write_file_durably(
        data_dir,
        &name,
        &format!("{name}.tmp"),
        &encode_checkpoint(entries),
    )
}

#[cfg(test)]
mod tests {
    /// The snapshot names recovery skips are those the snapshot writer uses.
    #[test]
    fn snapshot_suffixes_match_the_writer() {
        assert_eq!(
            super::PRODUCER_SNAPSHOT_SUFFIX,
            crate::producer_state::snapshot::SNAPSHOT_SUFFIX
        );
        assert_eq!(
            super::PRODUCER_SNAPSHOT_TMP_SUFFIX,
            crate::producer_state::snapshot::SNAPSHOT_TMP_SUFFIX
        );
    }

    /// What the writer writes the reader reads, in Kafka's format; where
    /// two files name one partition the newer file wins; a torn file is
    /// skipped.
    #[test]
    fn hw_checkpoints_round_trip_and_the_newest_file_wins() {
        let dir = tempfile::tempdir().unwrap();
        let age = |name: &str, secs: u64| {
            let f = std::fs::File::options()
                .write(true)
                .open(dir.path().join(name))
                .unwrap();
            f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
                .unwrap();
        };
        let mut a = super::OffsetCheckpoint::new();
        a.insert(("t".into(), 0), 10);
        a.insert(("u".into(), 3), 7);
        super::write_hw_checkpoint(dir.path(), 0, &a).unwrap();
        let text =
            std::fs::read_to_string(dir.path().join("replication-offset-checkpoint-0")).unwrap();
        assert_eq!(text, "0\n2\nt 0 10\nu 3 7\n");
        let mut b = super::OffsetCheckpoint::new();
        b.insert(("t".into(), 0), 4);
        super::write_hw_checkpoint(dir.path(), 1, &b).unwrap();
        std::fs::write(
            dir.path().join("replication-offset-checkpoint-2"),
            "0\n5\nt 0",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("replication-offset-checkpoint"),
            "0\n2\nk 1 99\nt 0 1\n",
        )
        .unwrap();
        age("replication-offset-checkpoint", 1_000);
        age("replication-offset-checkpoint-1", 2_000);
        age("replication-offset-checkpoint-0", 3_000);
        let m = super::read_hw_checkpoints(dir.path());
        assert_eq!(m.get(&("t".to_string(), 0)), Some(&10));
        assert_eq!(m.get(&("u".to_string(), 3)), Some(&7));
        assert_eq!(m.get(&("k".to_string(), 1)), Some(&99));
        assert_eq!(m.len(), 3);
        age("replication-offset-checkpoint-1", 4_000);
        let m = super::read_hw_checkpoints(dir.path());
        assert_eq!(m.get(&("t".to_string(), 0)), Some(&4));
    }
}
