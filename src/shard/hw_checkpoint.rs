//! The shard's high-watermark checkpoint (Kafka's
//! `replication-offset-checkpoint`, one file per shard: see
//! [`crate::storage::checkpoint`]). At start-up each partition's high
//! watermark starts from the newest checkpoint that names it (at its log
//! start offset when none does), before the metadata image sets its role;
//! then every `replica.high.watermark.checkpoint.interval.ms` the shard
//! writes the high watermarks of the partitions it owns, on the blocking
//! pool and only when one moved, and once more at shutdown after the logs
//! are closed.
//!
//! Why: a leader's high watermark is the smallest LEO over the ISR, which
//! a restarted broker cannot know until its followers fetch again. Starting
//! from the recovered LEO would let a restarted leader serve records that no
//! other replica has (and that a later leader may not have), starting from
//! the checkpoint keeps what consumers see at or below what was replicated.

use std::rc::Rc;
use std::time::Duration;

use super::Shard;
use crate::storage::checkpoint::{write_hw_checkpoint, OffsetCheckpoint};

impl Shard {
    /// Takes a partition being opened; gives (and forgets) the high
    /// watermark the checkpoints read at start-up kept for it.
    pub(super) fn take_checkpointed_hw(&self, topic: &str, partition: i32) -> Option<i64> {
        self.hw_restore
            .borrow_mut()
            .remove(&(topic.to_string(), partition))
    }

    /// Gives the high watermark of every partition this shard owns.
    fn hw_entries(&self) -> OffsetCheckpoint {
        self.owned_partitions()
            .iter()
            .map(|p| ((p.topic().to_string(), p.index()), p.high_watermark()))
            .collect()
    }

    /// Starts the periodic high-watermark checkpoint: every
    /// `replica.high.watermark.checkpoint.interval.ms`, when any owned
    /// partition's high watermark moved (or the set of partitions changed)
    /// since the last write, the shard's file is rewritten on the blocking
    /// pool (atomically, fsynced). A failed write is logged and tried again
    /// at the next interval.
    pub fn start_hw_checkpoint(self: &Rc<Self>) {
        let every = Duration::from_millis(
            self.config
                .cluster
                .replica_high_watermark_checkpoint_interval_ms
                .max(1),
        );
        self.start_periodic("hw checkpoint", every, every, |shard| async move {
            let entries = shard.hw_entries();
            if shard.hw_written.borrow().as_ref() == Some(&entries) {
                return;
            }
            let (dir, id) = (shard.config.data_dir(), shard.id);
            let written = entries.clone();
            let result = glommio::executor()
                .spawn_blocking(move || write_hw_checkpoint(&dir, id, &written))
                .await;
            match result {
                Ok(()) => *shard.hw_written.borrow_mut() = Some(entries),
                Err(e) => log::warn!("shard {}: high-watermark checkpoint: {e}", shard.id),
            }
        });
    }

    /// Writes the high-watermark checkpoint of the given entries now, on
    /// the calling thread (shutdown, after the logs are closed).
    pub(super) fn write_hw_checkpoint_at_close(&self, entries: &OffsetCheckpoint) {
        if let Err(e) = write_hw_checkpoint(&self.config.data_dir(), self.id, entries) {
            log::warn!("shard {}: high-watermark checkpoint: {e}", self.id);
        }
    }
}
