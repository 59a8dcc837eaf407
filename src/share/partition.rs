//! One share-partition (KIP-932): the in-flight window of a topic
//! partition read by a share group, as its leader keeps it.
//!
//! The window runs from the share-partition start offset (SPSO, persisted)
//! to the end offset (SPEO, the first offset not yet taken into the
//! window). Every offset in it is AVAILABLE (to be delivered), ACQUIRED (by
//! one member, until its acquisition lock expires), ACKNOWLEDGED,
//! ARCHIVING (rejected or given up while the group has a dead-letter
//! queue, KIP-1191: waiting for its dead-letter record to be written) or
//! ARCHIVED (done: accepted, rejected, or given up at the delivery-count
//! limit). A ShareFetch acquires available records, counting a delivery
//! each time; acknowledgements Accept, Release or Reject them (or Renew the
//! lock); an expired lock or a departed member releases them; the SPSO
//! moves past the leading run of finished offsets. Offsets in the window
//! that hold no record (compacted away, control batches) count as
//! archived.
//!
//! Pure: every call takes `now` (ms since the epoch); no I/O. The shard
//! that leads the topic partition holds one per (group, partition) and
//! persists [`SharePartition::snapshot`] through the share coordinator.

use std::collections::BTreeMap;

/// The state of one offset in the window (Kafka's `RecordState`, with the
/// persisted codes where it has one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordState {
    /// 0: may be acquired.
    Available,
    /// 1: delivered to `member`, locked until `deadline_ms`.
    Acquired {
        /// The member holding it.
        member: String,
        /// When the acquisition lock expires (ms since the epoch).
        deadline_ms: i64,
    },
    /// 2: accepted by a consumer.
    Acknowledged,
    /// 3 (KIP-1191): rejected or given up at the delivery-count limit
    /// while the group has a dead-letter queue; ARCHIVED once its
    /// dead-letter record is written (or could not be). Holds the SPSO.
    Archiving,
    /// 4: rejected, given up at the delivery-count limit, or no record.
    Archived,
}

impl RecordState {
    /// The code persisted in share-group state (acquired records persist
    /// as available: a new leader delivers them again).
    pub fn persisted_code(&self) -> i8 {
        match self {
            RecordState::Available | RecordState::Acquired { .. } => 0,
            RecordState::Acknowledged => 2,
            RecordState::Archiving => 3,
            RecordState::Archived => 4,
        }
    }

    fn finished(&self) -> bool {
        matches!(self, RecordState::Acknowledged | RecordState::Archived)
    }
}

/// An acknowledgement type (ShareAcknowledge / ShareFetch
/// `AcknowledgeTypes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckType {
    /// 0: offsets that hold no record; archived.
    Gap,
    /// 1: processed; acknowledged.
    Accept,
    /// 2: give back for another delivery (archived at the limit).
    Release,
    /// 3: unprocessable; archived, never delivered again.
    Reject,
    /// 4 (ShareAcknowledge v2): keep the lock for another lock duration.
    Renew,
}

impl AckType {
    /// The type for a wire code; None for an unknown one.
    pub fn from_code(code: i8) -> Option<AckType> {
        match code {
            0 => Some(AckType::Gap),
            1 => Some(AckType::Accept),
            2 => Some(AckType::Release),
            3 => Some(AckType::Reject),
            4 => Some(AckType::Renew),
            _ => None,
        }
    }
}

/// Why an acknowledgement was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShareError {
    /// INVALID_RECORD_STATE (121): an offset outside the window, not
    /// acquired, or acquired by another member.
    #[error("offset {offset} is not acquired by member {member}")]
    InvalidRecordState {
        /// The first offending offset.
        offset: i64,
        /// The member that acknowledged.
        member: String,
    },
    /// INVALID_REQUEST (42): a range that starts at or past the window's
    /// end (Kafka: "Batch record not found").
    #[error("acknowledgement from {first} is past the records acquired (end {end})")]
    PastWindow {
        /// First offset of the range.
        first: i64,
        /// The window's end offset (SPEO).
        end: i64,
    },
    /// INVALID_REQUEST (42): a range whose last offset is before its first.
    #[error("acknowledgement range {first}..={last} is empty")]
    InvalidRange {
        /// First offset.
        first: i64,
        /// Last offset.
        last: i64,
    },
}

/// The settings a share-partition runs with (Kafka's group and broker
/// `share.*` configs).
#[derive(Debug, Clone, PartialEq)]
pub struct ShareConfig {
    /// `share.record.lock.duration.ms` (30000): how long an acquired record
    /// stays with its member before it is released.
    pub lock_duration_ms: i64,
    /// `share.delivery.count.limit` (5): after this many deliveries a
    /// released or expired record is archived.
    pub delivery_count_limit: i16,
    /// `group.share.partition.max.record.locks` (2000): the most offsets in
    /// the window at once.
    pub max_record_locks: usize,
    /// Whether given-up records go to a dead-letter queue (KIP-1191: the
    /// group's `errors.deadletterqueue.topic.name` is set and
    /// `share.version` ≥ 2): they become ARCHIVING, not ARCHIVED.
    pub dead_letter: bool,
}

impl Default for ShareConfig {
    fn default() -> ShareConfig {
        ShareConfig {
            lock_duration_ms: 30_000,
            delivery_count_limit: 5,
            max_record_locks: 2000,
            dead_letter: false,
        }
    }
}

/// A run of acquired offsets as ShareFetch's `AcquiredRecords` gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcquiredRange {
    /// First offset.
    pub first: i64,
    /// Last offset (inclusive).
    pub last: i64,
    /// The delivery count of these records (1 on the first delivery).
    pub delivery_count: i16,
}

/// A run of offsets with one persisted state and delivery count (the
/// share-group state's batches).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateBatch {
    /// First offset.
    pub first: i64,
    /// Last offset (inclusive).
    pub last: i64,
    /// Persisted state code (0 available, 2 acknowledged, 3 archiving, 4
    /// archived).
    pub state: i8,
    /// Delivery count.
    pub delivery_count: i16,
}

/// Why a record goes to the dead-letter queue (KIP-1191's
/// `__dlq.errors.message`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadLetterCause {
    /// A consumer rejected it: "Offset rejected by client.".
    Rejected,
    /// It was delivered `share.delivery.count.limit` times: "Offset
    /// delivery count exceeded the threshold.".
    DeliveryCountExceeded,
}

impl DeadLetterCause {
    /// The `__dlq.errors.message` header's text, as Kafka 4.4 writes it.
    pub fn message(self) -> &'static str {
        match self {
            DeadLetterCause::Rejected => "Offset rejected by client.",
            DeadLetterCause::DeliveryCountExceeded => {
                "Offset delivery count exceeded the threshold."
            }
        }
    }
}

/// A run of ARCHIVING offsets whose dead-letter records are to be written
/// (KIP-1191): one record per offset, then
/// [`SharePartition::dead_lettered`] archives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetterRun {
    /// First offset.
    pub first: i64,
    /// Last offset (inclusive).
    pub last: i64,
    /// The records' delivery count (`__dlq.errors.delivery.count`).
    pub delivery_count: i16,
    /// Why (`__dlq.errors.message`).
    pub cause: DeadLetterCause,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct InFlight {
    state: RecordState,
    delivery_count: i16,
}

/// One share-partition's in-flight window.
#[derive(Debug, Clone)]
pub struct SharePartition {
    start: i64,
    end: i64,
    window: BTreeMap<i64, InFlight>,
    cfg: ShareConfig,
    /// ARCHIVING offsets not yet handed out for their dead-letter write
    /// (offset → delivery count, cause).
    to_dead_letter: BTreeMap<i64, (i16, DeadLetterCause)>,
}

impl SharePartition {
    /// A share-partition starting at `start_offset` (the offset
    /// `share.auto.offset.reset` chose when the group first read it).
    pub fn new(start_offset: i64, cfg: ShareConfig) -> SharePartition {
        SharePartition {
            start: start_offset,
            end: start_offset,
            window: BTreeMap::new(),
            cfg,
            to_dead_letter: BTreeMap::new(),
        }
    }

    /// A share-partition as its persisted state gives it: the SPSO and the
    /// batches after it (acquired records were persisted as available).
    /// ARCHIVING records resume their dead-letter write (the cause is not
    /// persisted: a delivery count at the limit is "delivery count
    /// exceeded", any other "rejected", as Kafka 4.4 resumes them).
    pub fn from_snapshot(
        start_offset: i64,
        batches: &[StateBatch],
        cfg: ShareConfig,
    ) -> SharePartition {
        let mut sp = SharePartition::new(start_offset, cfg);
        for b in batches {
            let state = match b.state {
                2 => RecordState::Acknowledged,
                3 => RecordState::Archiving,
                4 => RecordState::Archived,
                _ => RecordState::Available,
            };
            for offset in b.first.max(start_offset)..=b.last {
                sp.window.insert(
                    offset,
                    InFlight {
                        state: state.clone(),
                        delivery_count: b.delivery_count,
                    },
                );
                if state == RecordState::Archiving {
                    let cause = if b.delivery_count >= sp.cfg.delivery_count_limit {
                        DeadLetterCause::DeliveryCountExceeded
                    } else {
                        DeadLetterCause::Rejected
                    };
                    sp.to_dead_letter.insert(offset, (b.delivery_count, cause));
                }
                sp.end = sp.end.max(offset + 1);
            }
        }
        // Offsets between the batches were never delivered.
        for offset in sp.start..sp.end {
            sp.window.entry(offset).or_insert(InFlight {
                state: RecordState::Available,
                delivery_count: 0,
            });
        }
        sp.advance();
        sp
    }

    /// The share-partition start offset (SPSO).
    pub fn start_offset(&self) -> i64 {
        self.start
    }

    /// The end offset (SPEO): the first offset not taken into the window.
    pub fn end_offset(&self) -> i64 {
        self.end
    }

    /// Changes the settings (a group config changed); locks already taken
    /// keep their deadlines.
    pub fn configure(&mut self, cfg: ShareConfig) {
        self.cfg = cfg;
    }

    /// Where the next ShareFetch should read the log from: the first
    /// available offset in the window, or the end of the window.
    pub fn fetch_offset(&self) -> i64 {
        self.window
            .iter()
            .find(|(_, r)| r.state == RecordState::Available)
            .map_or(self.end, |(o, _)| *o)
    }

    /// The state and delivery count of `offset` (None outside the window;
    /// offsets before the SPSO are finished and forgotten).
    pub fn state(&self, offset: i64) -> Option<(RecordState, i16)> {
        self.window
            .get(&offset)
            .map(|r| (r.state.clone(), r.delivery_count))
    }

    /// A ShareFetch of `member`: acquires up to `max_records` available
    /// offsets among `records` (the log's record offsets read from
    /// [`SharePartition::fetch_offset`], ascending; offsets between them
    /// hold no record), first those already in the window, then new ones,
    /// as long as the window holds at most `max_record_locks` offsets.
    /// Each acquired record's delivery count goes up by one and its lock
    /// lasts `lock_duration_ms`. Gives the acquired runs.
    pub fn acquire(
        &mut self,
        member: &str,
        records: &[i64],
        max_records: usize,
        now: i64,
    ) -> Vec<AcquiredRange> {
        let deadline_ms = now + self.cfg.lock_duration_ms;
        let mut taken: Vec<(i64, i16)> = Vec::new();
        // The log was read from here: an available offset before the next
        // record read holds no record.
        let mut next_unseen = self.fetch_offset();
        for &offset in records {
            if taken.len() >= max_records {
                break;
            }
            if offset < self.start || offset < next_unseen {
                continue;
            }
            if offset >= self.end && (offset + 1 - self.start) as usize > self.cfg.max_record_locks
            {
                break;
            }
            self.no_record(next_unseen, offset);
            next_unseen = offset + 1;
            if offset >= self.end {
                self.end = offset + 1;
            }
            let r = self.window.entry(offset).or_insert(InFlight {
                state: RecordState::Available,
                delivery_count: 0,
            });
            if r.state != RecordState::Available {
                continue;
            }
            r.delivery_count = r.delivery_count.saturating_add(1);
            r.state = RecordState::Acquired {
                member: member.to_string(),
                deadline_ms,
            };
            taken.push((offset, r.delivery_count));
        }
        self.advance();
        runs(&taken)
    }

    /// Offsets `first..=last` hold records of an aborted transaction read
    /// under `share.isolation.level` = `read_committed`: those still
    /// available, and those beyond the window, are archived (never
    /// delivered), as Kafka 4.4 does.
    pub fn archive_aborted(&mut self, first: i64, last: i64) {
        if last < first || last < self.start {
            return;
        }
        // Offsets between the window's end and the batch were read past.
        self.no_record(first.min(self.end), last + 1);
        self.advance();
    }

    /// Offsets `from..to` were read past without a record: those in the
    /// window still available, and those beyond it, are archived.
    fn no_record(&mut self, from: i64, to: i64) {
        for offset in from.max(self.start)..to {
            match self.window.get_mut(&offset) {
                Some(r) if r.state == RecordState::Available => r.state = RecordState::Archived,
                Some(_) => {}
                None => {
                    self.window.insert(
                        offset,
                        InFlight {
                            state: RecordState::Archived,
                            delivery_count: 0,
                        },
                    );
                }
            }
        }
        self.end = self.end.max(to);
    }

    /// Acknowledges `first..=last` for `member` with `ack`: every offset
    /// must be acquired by `member` (INVALID_RECORD_STATE otherwise, and
    /// nothing changes), except that a Gap may also name offsets already
    /// archived. Accept acknowledges, Reject archives, Release makes them
    /// available again (archived at the delivery-count limit), Renew
    /// restarts their locks at `now`.
    pub fn acknowledge(
        &mut self,
        member: &str,
        first: i64,
        last: i64,
        ack: AckType,
        now: i64,
    ) -> Result<(), ShareError> {
        if last < first {
            return Err(ShareError::InvalidRange { first, last });
        }
        if first >= self.end {
            return Err(ShareError::PastWindow {
                first,
                end: self.end,
            });
        }
        for offset in first..=last {
            let ok = match self.window.get(&offset) {
                Some(InFlight {
                    state: RecordState::Acquired { member: m, .. },
                    ..
                }) => m == member,
                Some(InFlight {
                    state: RecordState::Archived,
                    ..
                }) => ack == AckType::Gap,
                _ => false,
            };
            if !ok {
                return Err(ShareError::InvalidRecordState {
                    offset,
                    member: member.to_string(),
                });
            }
        }
        let limit = self.cfg.delivery_count_limit;
        let dlq = self.cfg.dead_letter;
        let deadline_ms = now + self.cfg.lock_duration_ms;
        for offset in first..=last {
            let Some(r) = self.window.get_mut(&offset) else {
                continue;
            };
            r.state = match ack {
                AckType::Accept => RecordState::Acknowledged,
                AckType::Gap => RecordState::Archived,
                AckType::Reject if dlq => RecordState::Archiving,
                AckType::Reject => RecordState::Archived,
                AckType::Release => released(r.delivery_count, limit, dlq),
                AckType::Renew => RecordState::Acquired {
                    member: member.to_string(),
                    deadline_ms,
                },
            };
            if r.state == RecordState::Archiving {
                let cause = if ack == AckType::Reject {
                    DeadLetterCause::Rejected
                } else {
                    DeadLetterCause::DeliveryCountExceeded
                };
                self.to_dead_letter
                    .insert(offset, (r.delivery_count, cause));
            }
        }
        self.advance();
        Ok(())
    }

    /// Releases every lock that expired by `now` (available again, or
    /// archived at the delivery-count limit). Gives how many.
    pub fn expire(&mut self, now: i64) -> usize {
        self.release_where(
            |s| matches!(s, RecordState::Acquired { deadline_ms, .. } if *deadline_ms <= now),
        )
    }

    /// Releases every record `member` holds (it left the group or its
    /// share session closed). Gives how many.
    pub fn release_member(&mut self, member: &str) -> usize {
        self.release_where(|s| matches!(s, RecordState::Acquired { member: m, .. } if m == member))
    }

    /// Releases the acquired records `which` picks (available again, or
    /// given up at the delivery-count limit). Gives how many.
    fn release_where(&mut self, which: impl Fn(&RecordState) -> bool) -> usize {
        let limit = self.cfg.delivery_count_limit;
        let dlq = self.cfg.dead_letter;
        let mut n = 0;
        for (offset, r) in self.window.iter_mut() {
            if !matches!(r.state, RecordState::Acquired { .. }) || !which(&r.state) {
                continue;
            }
            r.state = released(r.delivery_count, limit, dlq);
            if r.state == RecordState::Archiving {
                self.to_dead_letter.insert(
                    *offset,
                    (r.delivery_count, DeadLetterCause::DeliveryCountExceeded),
                );
            }
            n += 1;
        }
        self.advance();
        n
    }

    /// Hands out the ARCHIVING runs not handed out yet, for their
    /// dead-letter writes (KIP-1191), as runs of one delivery count and
    /// cause.
    pub fn take_dead_letters(&mut self) -> Vec<DeadLetterRun> {
        let mut out: Vec<DeadLetterRun> = Vec::new();
        for (offset, (count, cause)) in std::mem::take(&mut self.to_dead_letter) {
            if !matches!(self.window.get(&offset), Some(r) if r.state == RecordState::Archiving) {
                continue;
            }
            match out.last_mut() {
                Some(r)
                    if r.last + 1 == offset && r.delivery_count == count && r.cause == cause =>
                {
                    r.last = offset
                }
                _ => out.push(DeadLetterRun {
                    first: offset,
                    last: offset,
                    delivery_count: count,
                    cause,
                }),
            }
        }
        out
    }

    /// The dead-letter writes of `first..=last` are over (written, or
    /// failed for good): their ARCHIVING offsets become ARCHIVED, so they
    /// no longer hold the SPSO. Gives whether anything changed.
    pub fn dead_lettered(&mut self, first: i64, last: i64) -> bool {
        let mut changed = false;
        for (_, r) in self.window.range_mut(first..=last) {
            if r.state == RecordState::Archiving {
                r.state = RecordState::Archived;
                changed = true;
            }
        }
        self.advance();
        changed
    }

    /// The earliest acquisition-lock deadline (ms), for the caller's timer.
    pub fn next_deadline(&self) -> Option<i64> {
        self.window
            .values()
            .filter_map(|r| match r.state {
                RecordState::Acquired { deadline_ms, .. } => Some(deadline_ms),
                _ => None,
            })
            .min()
    }

    /// Moves the SPSO to `offset` (AlterShareGroupOffsets, or the log start
    /// moved past it): the window before it is forgotten; after it, kept.
    /// Moving it past the end empties the window.
    pub fn reset(&mut self, offset: i64) {
        self.window = self.window.split_off(&offset);
        self.to_dead_letter = self.to_dead_letter.split_off(&offset);
        self.start = offset;
        self.end = self.end.max(offset);
        self.advance();
    }

    /// The persisted form: the SPSO and the window as runs of one state
    /// and delivery count.
    pub fn snapshot(&self) -> (i64, Vec<StateBatch>) {
        let mut out: Vec<StateBatch> = Vec::new();
        for (offset, r) in &self.window {
            let state = r.state.persisted_code();
            match out.last_mut() {
                Some(b)
                    if b.last + 1 == *offset
                        && b.state == state
                        && b.delivery_count == r.delivery_count =>
                {
                    b.last = *offset;
                }
                _ => out.push(StateBatch {
                    first: *offset,
                    last: *offset,
                    state,
                    delivery_count: r.delivery_count,
                }),
            }
        }
        (self.start, out)
    }

    /// Drops the leading finished offsets, moving the SPSO past them.
    fn advance(&mut self) {
        while let Some(entry) = self.window.first_entry() {
            if *entry.key() != self.start || !entry.get().state.finished() {
                break;
            }
            entry.remove();
            self.start += 1;
        }
        if self.window.is_empty() {
            self.start = self.start.max(self.end);
            self.end = self.start;
        }
    }
}

/// A released record's next state: available again, or, once it was
/// delivered `limit` times, archived (ARCHIVING with a dead-letter queue).
fn released(delivery_count: i16, limit: i16, dead_letter: bool) -> RecordState {
    if delivery_count < limit {
        RecordState::Available
    } else if dead_letter {
        RecordState::Archiving
    } else {
        RecordState::Archived
    }
}

/// Consecutive offsets with one delivery count as runs.
fn runs(taken: &[(i64, i16)]) -> Vec<AcquiredRange> {
    let mut out: Vec<AcquiredRange> = Vec::new();
    for &(offset, count) in taken {
        match out.last_mut() {
            Some(r) if r.last + 1 == offset && r.delivery_count == count => r.last = offset,
            _ => out.push(AcquiredRange {
                first: offset,
                last: offset,
                delivery_count: count,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests;
