//! The stages of an append to a [`PartitionLog`]: reserve (offsets and the
//! place in the active segment, on the shard), the write (the caller's: the
//! shard's I/O thread), commit (in reservation order: the segment's size,
//! the sparse indexes, the LEO and, for one replica, the high watermark);
//! a follower's reservation keeps the leader's batches as they are.

use super::*;

impl PartitionLog {
    /// Takes the Produce `records` bytes, the batches found in them by
    /// [`crate::storage::validate_batches`] and the broker time `now_ms` (ms); appends
    /// them on the calling thread and gives the offsets assigned: a
    /// [`Self::reserve`], the write with pwritev(2), then [`Self::commit`]
    /// with its index entries written at once. Used where no shard is
    /// running (tools, tests); a shard uses the three stages itself so that
    /// the write runs on its I/O thread.
    ///
    /// A failed `.log` write gives `Io` and leaves the log refusing appends
    /// (KAFKA_STORAGE_ERROR); a failed index write gives `Io` AFTER the data
    /// was appended (the index is rebuilt on the next open).
    pub fn append(
        &mut self,
        records: &[u8],
        batches: &[ValidatedBatch],
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendResult, StorageError> {
        let records = bytes::Bytes::copy_from_slice(records);
        let (write, ticket) = self.reserve(&records, batches, leader_epoch, now_ms)?;
        // Queued file work (deferred) lands before the write, as on a shard.
        for job in self.take_file_jobs() {
            if let Err(e) = job.run() {
                self.fail(&ticket, &e);
                return Err(e.into());
            }
        }
        if let Some(w) = write {
            if let Err(e) = w.write_now() {
                self.fail(&ticket, &e);
                return Err(e.into());
            }
        }
        let index_writes = self.commit(&ticket)?;
        for w in &index_writes {
            w.write_now()?;
        }
        Ok(ticket.result)
    }

    /// Stage 1 of an append (Redpanda's "dispatched"): takes the Produce
    /// `records` bytes, the batches found in them by
    /// [`crate::storage::validate_batches`], the partition leader epoch and the
    /// broker time `now_ms` (ms); assigns the batches their offsets (from the
    /// last reserved offset on) and their place at the end of the active
    /// segment, and gives the write to make and the ticket to
    /// [`Self::commit`] once it is made. Nothing is visible to readers yet
    /// (the LEO and high watermark move at commit). Reservations are
    /// committed in the order they were made.
    ///
    /// The write is the batches without copying record bytes: per batch a
    /// 16-byte prefix (new base offset, the batch's own batchLength, and
    /// `leader_epoch` as partitionLeaderEpoch — all outside the CRC) then
    /// `[batch 16..end]`, or under LogAppendTime `[prefix][new header
    /// 16..61][batch 61..end]` (see [`log_append_time_header`]; the new
    /// header holds the new CRC at 17..21).
    ///
    /// Rolls a new segment first (Kafka `LogSegment.shouldRoll`) when the
    /// active segment is non-empty and: it would exceed `segment_bytes`; an
    /// index is full (`segment_index_bytes`); `segment_ms` elapsed since its
    /// first append (or, after a restart, since its first batch's max
    /// timestamp); or relative offsets would overflow i32.
    ///
    /// When `leader_epoch` (>= 0) is newer than the leader-epoch cache's
    /// latest epoch, the entry (`leader_epoch`, first offset reserved) is
    /// added and `leader-epoch-checkpoint` written (fsynced) before the
    /// reservation's write: on the calling thread, or, with deferred file
    /// work, queued ahead of the write the owner queues next; an epoch of
    /// -1 is not recorded. A roll with deferred file work swaps in the
    /// prepared segment and queues its file work (see [`Self::roll`]).
    ///
    /// Empty `batches` gives no write and base/last offset -1. Batches not
    /// lying inside `records` → `Batch(CorruptMessage)`; a log whose earlier
    /// write failed, or a failed checkpoint write → `Io`
    /// (KAFKA_STORAGE_ERROR; the former until the broker restarts and
    /// recovery cuts the partial data).
    pub fn reserve(
        &mut self,
        records: &bytes::Bytes,
        batches: &[ValidatedBatch],
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<(Option<PendingWrite>, AppendTicket), StorageError> {
        if let Some(why) = &self.failed {
            return Err(StorageError::Io(std::io::Error::other(format!(
                "{}: an earlier write failed ({why}); the log takes no appends until restart",
                self.dir.display()
            ))));
        }
        if batches.is_empty() {
            return Ok((
                None,
                AppendTicket {
                    follows: self.next_offset,
                    segment_base: self.active.base_offset(),
                    batches: Vec::new(),
                    result: AppendResult {
                        base_offset: -1,
                        last_offset: -1,
                        log_append_time: -1,
                        log_start_offset: self.log_start_offset,
                        bytes: 0,
                        records: 0,
                    },
                },
            ));
        }
        // Re-read each header from the bytes being written so the offsets we
        // assign always match what lands on disk.
        let mut parts: Vec<(usize, BatchHeader)> = Vec::with_capacity(batches.len());
        let mut total_bytes: u64 = 0;
        let mut offsets_needed: i64 = 0;
        let mut record_count: u64 = 0;
        for b in batches {
            let bytes = b
                .position
                .checked_add(b.size)
                .and_then(|end| records.get(b.position..end))
                .ok_or_else(|| {
                    crate::storage::BatchError::CorruptMessage(
                        crate::storage::batch::Corruption::OutsideRecordsAt {
                            position: b.position,
                            size: b.size,
                            records_len: records.len(),
                        },
                    )
                })?;
            let h = BatchHeader::parse(bytes)?;
            if h.total_size() != b.size || h.last_offset_delta < 0 {
                return Err(crate::storage::BatchError::CorruptMessage(
                    crate::storage::batch::Corruption::SizeMismatch {
                        position: b.position,
                    },
                )
                .into());
            }
            total_bytes += b.size as u64;
            offsets_needed += i64::from(h.last_offset_delta) + 1;
            record_count += u64::try_from(h.records_count).unwrap_or(0);
            parts.push((b.position, h));
        }

        self.maybe_roll(total_bytes, offsets_needed, now_ms)?;
        if self.active_reserved + total_bytes > MAX_SEGMENT_BYTES {
            return Err(StorageError::Inconsistent {
                path: None,
                what: crate::storage::Inconsistency::AppendTooLarge { bytes: total_bytes },
            });
        }

        let lat = self.config.message_timestamp_type == TimestampType::LogAppendTime;
        let first_offset = self.next_offset;
        let at = self.active_reserved;
        // A newer epoch starts here: the leader-epoch checkpoint is written
        // before the reservation (rare; see docs/decisions/leader-epoch-cache.md).
        let jobs = &mut self.jobs;
        self.epochs
            .assign_durably([(leader_epoch, first_offset)], |c| {
                run_or_queue(jobs, FileJob::EpochCheckpoint(c))
            })?;

        // The bytes this append adds before each batch's own bytes: the
        // 16-byte prefix (assigned base offset, the batch's own batchLength,
        // the partition leader epoch — all outside the CRC, which starts at
        // the attributes), under LogAppendTime followed by the new header's
        // bytes 16..61. All of them in one small buffer.
        let per = if lat { RECORD_BATCH_HEADER_BYTES } else { 16 };
        let mut head = Vec::with_capacity(per * parts.len());
        let mut next = first_offset;
        for (position, h) in &parts {
            let bytes = &records[*position..*position + h.total_size()];
            head.extend_from_slice(&next.to_be_bytes());
            head.extend_from_slice(&bytes[8..12]);
            head.extend_from_slice(&leader_epoch.to_be_bytes());
            if lat {
                head.extend_from_slice(&log_append_time_header(bytes, now_ms)[16..]);
            }
            next += i64::from(h.last_offset_delta) + 1;
        }
        let head = bytes::Bytes::from(head);
        let mut slices: Vec<bytes::Bytes> = Vec::with_capacity(parts.len() * 2);
        let mut reserved = Vec::with_capacity(parts.len());
        let mut pos = at;
        let mut next = first_offset;
        for (i, (position, h)) in parts.iter().enumerate() {
            let size = h.total_size();
            slices.push(head.slice(i * per..(i + 1) * per));
            slices.push(records.slice(*position + per..*position + size));
            let last = next + i64::from(h.last_offset_delta);
            reserved.push(ReservedBatch {
                position: pos,
                size: size as u64,
                last_offset: last,
                max_timestamp: if lat { now_ms } else { h.max_timestamp },
            });
            pos += size as u64;
            next = last + 1;
        }
        if self.active.roll_base_ms.is_none() {
            self.active.roll_base_ms = Some(now_ms);
        }
        self.next_offset = next;
        self.active_reserved = pos;
        Ok((
            Some(PendingWrite {
                file: self.active.log_file(),
                at,
                parts: slices,
            }),
            AppendTicket {
                follows: first_offset,
                segment_base: self.active.base_offset(),
                batches: reserved,
                result: AppendResult {
                    base_offset: first_offset,
                    last_offset: next - 1,
                    log_append_time: if lat { now_ms } else { -1 },
                    log_start_offset: self.log_start_offset,
                    bytes: total_bytes,
                    records: record_count,
                },
            },
        ))
    }

    /// Stage 1 of a follower's append: takes batches fetched from the leader
    /// (`records`, and the batches [`crate::storage::validate_batches`] found in it)
    /// and reserves them at the end of the log exactly as they are — their
    /// base offsets, partition leader epochs, timestamps and CRCs unchanged.
    /// The first batch must start at or past the offset the log expects
    /// next, and each next batch at or past the end of the one before: a
    /// leader's compacted log has gaps where the cleaner removed whole
    /// batches, and Kafka's follower appends across them the same way
    /// (`UnifiedLog.appendAsFollower` refuses only an offset below the
    /// LEO). A batch starting before that is `Inconsistent` with
    /// `ReplicaOutOfStep`: the fetcher must fetch again from the LEO.
    /// A batch whose partitionLeaderEpoch is newer than the leader-epoch
    /// cache's latest epoch adds (that epoch, its base offset) to the cache,
    /// written as in [`Self::reserve`] (a failed write → `Io`).
    /// Gives the write and the ticket for [`Self::commit`], as
    /// [`Self::reserve`] does.
    pub fn reserve_replica(
        &mut self,
        records: &bytes::Bytes,
        batches: &[ValidatedBatch],
        now_ms: i64,
    ) -> Result<(Option<PendingWrite>, AppendTicket), StorageError> {
        if let Some(why) = &self.failed {
            return Err(StorageError::Io(std::io::Error::other(format!(
                "{}: an earlier write failed ({why}); the log takes no appends until restart",
                self.dir.display()
            ))));
        }
        let Some(first) = batches.first() else {
            return self.reserve(records, batches, -1, now_ms);
        };
        let follows = self.next_offset;
        let mut expected = self.next_offset;
        let mut total_bytes: u64 = 0;
        let mut record_count: u64 = 0;
        for b in batches {
            if b.header.base_offset < expected {
                return Err(StorageError::Inconsistent {
                    path: Some(self.dir.clone()),
                    what: crate::storage::Inconsistency::ReplicaOutOfStep {
                        base_offset: b.header.base_offset,
                        expected,
                    },
                });
            }
            expected = b.header.base_offset + i64::from(b.header.last_offset_delta) + 1;
            total_bytes += b.size as u64;
            record_count += u64::try_from(b.header.records_count).unwrap_or(0);
        }
        // From the LEO (a gap counts: the segment's relative offsets span it).
        let offsets_needed = expected - follows;
        self.maybe_roll(total_bytes, offsets_needed, now_ms)?;
        if self.active_reserved + total_bytes > MAX_SEGMENT_BYTES {
            return Err(StorageError::Inconsistent {
                path: None,
                what: crate::storage::Inconsistency::AppendTooLarge { bytes: total_bytes },
            });
        }
        // Each batch's own epoch, as the leader stamped it.
        let jobs = &mut self.jobs;
        self.epochs.assign_durably(
            batches
                .iter()
                .map(|b| (b.header.partition_leader_epoch, b.header.base_offset)),
            |c| run_or_queue(jobs, FileJob::EpochCheckpoint(c)),
        )?;
        let at = self.active_reserved;
        let mut pos = at;
        let mut slices = Vec::with_capacity(batches.len());
        let mut reserved = Vec::with_capacity(batches.len());
        for b in batches {
            let end = b.position + b.size;
            let Some(bytes) = (end <= records.len()).then(|| records.slice(b.position..end)) else {
                return Err(crate::storage::BatchError::CorruptMessage(
                    crate::storage::batch::Corruption::OutsideRecordsAt {
                        position: b.position,
                        size: b.size,
                        records_len: records.len(),
                    },
                )
                .into());
            };
            slices.push(bytes);
            reserved.push(ReservedBatch {
                position: pos,
                size: b.size as u64,
                last_offset: b.header.base_offset + i64::from(b.header.last_offset_delta),
                max_timestamp: b.header.max_timestamp,
            });
            pos += b.size as u64;
        }
        if self.active.roll_base_ms.is_none() {
            self.active.roll_base_ms = Some(now_ms);
        }
        let base = first.header.base_offset;
        self.next_offset = expected;
        self.active_reserved = pos;
        Ok((
            Some(PendingWrite {
                file: self.active.log_file(),
                at,
                parts: slices,
            }),
            AppendTicket {
                follows,
                segment_base: self.active.base_offset(),
                batches: reserved,
                result: AppendResult {
                    base_offset: base,
                    last_offset: expected - 1,
                    log_append_time: -1,
                    log_start_offset: self.log_start_offset,
                    bytes: total_bytes,
                    records: record_count,
                },
            },
        ))
    }

    /// Makes the high watermark independent of the LEO (a replicated
    /// partition) or lets it follow the LEO again (one replica); when it
    /// follows again it jumps to the LEO.
    pub fn set_replicated(&mut self, replicated: bool) {
        self.hw_follows_leo = !replicated;
        if !replicated {
            self.high_watermark = self.log_end_offset;
        }
    }

    /// Takes the high watermark a checkpoint kept for this partition (None:
    /// not in any) and starts the high watermark there, clamped to [log
    /// start offset, LEO]; a partition missing from the checkpoint starts at
    /// its log start offset, as Kafka starts one missing from
    /// `replication-offset-checkpoint`. Called once, right after the log is
    /// opened; a partition with one replica then jumps to its LEO when the
    /// image says so ([`Self::set_replicated`]), a leader moves it up as its
    /// followers fetch, a follower takes the leader's.
    pub fn restore_high_watermark(&mut self, checkpointed: Option<i64>) {
        self.set_high_watermark(checkpointed.unwrap_or(self.log_start_offset));
    }

    /// Sets the high watermark of a replicated partition (the leader: the
    /// smallest LEO of the ISR; a follower: the leader's, at most its own
    /// LEO), clamped to [log start offset, LEO]; gives the new value.
    pub fn set_high_watermark(&mut self, hw: i64) -> i64 {
        self.high_watermark = hw.clamp(self.log_start_offset, self.log_end_offset);
        self.high_watermark
    }

    /// Stage 3 of an append (Redpanda's "produced"): takes the ticket of a
    /// reservation whose write completed; it must be the oldest one not yet
    /// committed (else `Inconsistent`). Advances the segment's size and next
    /// offset, the in-memory indexes (as Kafka's `LogSegment.append`: an
    /// entry when more than `index.interval.bytes` were appended since the
    /// last), the LEO and the high watermark, so readers see the batches.
    /// Gives the index file writes still to make (in file order), for the
    /// shard's I/O thread. An empty reservation commits nothing.
    pub fn commit(&mut self, ticket: &AppendTicket) -> Result<Vec<IndexWrite>, StorageError> {
        let Some(first) = ticket.batches.first() else {
            return Ok(Vec::new());
        };
        if ticket.follows != self.log_end_offset {
            return Err(StorageError::Inconsistent {
                path: Some(self.dir.clone()),
                what: crate::storage::Inconsistency::CommitOutOfOrder {
                    base_offset: ticket.result.base_offset,
                    log_end_offset: self.log_end_offset,
                },
            });
        }
        let interval = self.config.index_interval_bytes;
        let seg = if self.active.base_offset() == ticket.segment_base {
            &mut self.active
        } else {
            match self
                .older
                .iter_mut()
                .rev()
                .find(|s| s.base_offset() == ticket.segment_base)
            {
                Some(s) => s,
                None => {
                    return Err(StorageError::Inconsistent {
                        path: Some(self.dir.clone()),
                        what: crate::storage::Inconsistency::SegmentGone {
                            segment_base: ticket.segment_base,
                        },
                    })
                }
            }
        };
        if seg.size() != first.position {
            return Err(StorageError::Inconsistent {
                path: Some(self.dir.clone()),
                what: crate::storage::Inconsistency::CommitPosition {
                    position: first.position,
                    segment_size: seg.size(),
                },
            });
        }
        let mut writes = Vec::new();
        for b in &ticket.batches {
            seg.note_batch_deferred(
                b.position,
                b.size,
                b.last_offset,
                b.max_timestamp,
                interval,
                &mut writes,
            );
        }
        self.log_end_offset = ticket.result.last_offset + 1;
        if self.hw_follows_leo {
            self.high_watermark = self.log_end_offset;
        }
        Ok(writes)
    }

    /// Takes the ticket of a reservation whose write failed with `error`:
    /// the log takes no more appends (Kafka takes the log directory offline
    /// on an I/O error); reservations after it are refused at commit.
    /// Restart recovery cuts whatever part of the write landed.
    pub fn fail(&mut self, ticket: &AppendTicket, error: &std::io::Error) {
        ::log::error!(
            "{}: write of offsets {}..={} failed: {error}; the partition takes no appends until restart",
            self.dir.display(),
            ticket.result.base_offset,
            ticket.result.last_offset
        );
        self.failed.get_or_insert_with(|| error.to_string());
    }
}
