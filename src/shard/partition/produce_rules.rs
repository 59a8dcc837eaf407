//! The topic rules a Produce batch meets on its owner before it is appended
//! (Kafka's `LogValidator` part that depends on topic configs):
//!
//! * `min.insync.replicas` above the size of the partition's ISR: acks=all
//!   gets NOT_ENOUGH_REPLICAS (19) before the append (Kafka
//!   `Partition.appendRecordsToLeader`);
//! * `compression.type` other than `producer`: a batch with another codec is
//!   rebuilt with the topic's codec and level (`storage::recompress`),
//!   refusing records above `max.decompressed.message.bytes` and a rebuilt
//!   batch above `max.message.bytes` (MESSAGE_TOO_LARGE);
//! * CreateTime topics: every record timestamp must lie in
//!   `[now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms]`,
//!   else INVALID_TIMESTAMP (32). The timestamps are the records' own when
//!   the batch is uncompressed or was rebuilt; a compressed batch kept as
//!   sent is checked by its header's base and max timestamps (see
//!   docs/decisions/timestamp-window-on-compressed-batches.md).

use bytes::Bytes;

use crate::cluster::topic_config::TopicSettings;
use crate::storage::batch::{BatchError, Corruption, TimestampBound, TimestampOutOfRange};
use crate::storage::recompress::{self, RecordsSummary};
use crate::storage::{BatchHeader, TimestampType, ValidatedBatch};

/// Why a batch is refused: NOT_ENOUGH_REPLICAS, or a batch error (its code
/// comes from `crate::error`).
#[derive(Debug)]
pub enum Refused {
    /// `min.insync.replicas` exceeds the ISR's size (acks=all only).
    NotEnoughReplicas {
        /// The topic's `min.insync.replicas`.
        required: i32,
        /// The ISR's size.
        isr: usize,
    },
    /// The batch breaks a rule (timestamp window, decompression, size).
    Batch(BatchError),
}

impl From<BatchError> for Refused {
    fn from(e: BatchError) -> Refused {
        Refused::Batch(e)
    }
}

/// Takes a partition's settings, its one validated batch (`records` holds
/// exactly that batch), the broker time, whether the produce is acks=all
/// and the size of the partition's ISR; gives the bytes to append and their batch (rebuilt with the
/// topic's codec, or the same bytes), or why the batch is refused.
pub fn apply(
    settings: &TopicSettings,
    records: &Bytes,
    batch: &ValidatedBatch,
    now_ms: i64,
    acks_all: bool,
    isr: usize,
) -> Result<(Bytes, ValidatedBatch), Refused> {
    if acks_all && usize::try_from(settings.min_insync_replicas).is_ok_and(|m| m > isr) {
        return Err(Refused::NotEnoughReplicas {
            required: settings.min_insync_replicas,
            isr,
        });
    }
    let whole = records
        .get(batch.position..batch.position + batch.size)
        .ok_or(BatchError::CorruptMessage(Corruption::OutsideRecords))?;
    let rebuilt = match settings.compression {
        Some(target) => recompress::recompress(
            whole,
            &batch.header,
            target,
            settings.max_decompressed_message_bytes,
        )
        .map_err(BatchError::from)?,
        None => None,
    };
    let (bytes, out, summary) = match rebuilt {
        Some(r) => {
            let header = BatchHeader::parse(&r.bytes)?;
            let size = r.bytes.len();
            // As Kafka, the size limit holds for the batch as stored too.
            if size > settings.max_message_bytes {
                return Err(Refused::Batch(BatchError::MessageTooLarge {
                    size,
                    max: settings.max_message_bytes,
                }));
            }
            let out = ValidatedBatch {
                position: 0,
                size,
                header,
            };
            (Bytes::from(r.bytes), out, r.summary)
        }
        None => {
            // Every record is checked, a compressed batch's after
            // decompression, as Kafka's LogValidator does: no batch is
            // stored whose records a reader cannot walk.
            let (_, summary) = recompress::walk_batch(
                whole,
                &batch.header,
                settings.max_decompressed_message_bytes,
            )
            .map_err(BatchError::from)?;
            (records.clone(), *batch, summary)
        }
    };
    check_timestamps(settings, summary, now_ms)?;
    Ok((bytes, out))
}

/// The timestamp window of CreateTime topics (Kafka
/// `LogValidator.validateTimestamp`) over every record's timestamp, from the
/// record walk's summary; LogAppendTime topics are not checked.
fn check_timestamps(
    settings: &TopicSettings,
    summary: RecordsSummary,
    now_ms: i64,
) -> Result<(), BatchError> {
    if settings.log.message_timestamp_type == TimestampType::LogAppendTime {
        return Ok(());
    }
    // Records without a timestamp (-1) are left out of the summary, as
    // Kafka does not check them.
    let (min, max) = (summary.min_timestamp, summary.max_timestamp);
    if min > max {
        return Ok(());
    }
    let earliest = now_ms.saturating_sub(settings.timestamp_before_max_ms);
    let latest = now_ms.saturating_add(settings.timestamp_after_max_ms);
    // The bound that is crossed names its config: too old is
    // `before.max.ms`, too new (in the future) is `after.max.ms`.
    let crossed = if min < earliest {
        Some((min, TimestampBound::BeforeMax))
    } else if max > latest {
        Some((max, TimestampBound::AfterMax))
    } else {
        None
    };
    match crossed {
        None => Ok(()),
        Some((timestamp, bound)) => Err(BatchError::InvalidTimestamp(TimestampOutOfRange {
            timestamp,
            earliest,
            latest,
            bound,
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::topic_config::settings;
    use crate::config::Config;
    use crate::storage::validate_batches;
    use kafka_protocol::records::Compression;
    use std::collections::BTreeMap;

    fn batch(compression: Compression, timestamps: &[i64]) -> Bytes {
        let recs: Vec<_> = timestamps
            .iter()
            .enumerate()
            .map(|(i, ts)| {
                crate::protocol::plain_record(i as i64, *ts, None, Some(Bytes::from("v")))
            })
            .collect();
        Bytes::from(crate::storage::batch::testutil::encode_records(
            &recs,
            compression,
        ))
    }

    fn topic(pairs: &[(&str, &str)]) -> TopicSettings {
        let t: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        settings(&Config::default(), &t)
    }

    fn run(
        s: &TopicSettings,
        b: &Bytes,
        now: i64,
        acks_all: bool,
    ) -> Result<(Bytes, ValidatedBatch), Refused> {
        let v = validate_batches(b, usize::MAX).unwrap();
        apply(s, b, &v[0], now, acks_all, 1)
    }

    #[test]
    fn future_timestamps_past_the_window_are_refused() {
        let now = 10_000_000;
        let s = topic(&[]);
        assert!(run(
            &s,
            &batch(Compression::None, &[now, now + 3_600_000]),
            now,
            false
        )
        .is_ok());
        // A record an hour and a bit ahead, behind an earlier first record.
        let late = batch(Compression::None, &[now, now + 3_600_001]);
        assert!(matches!(
            run(&s, &late, now, false),
            Err(Refused::Batch(BatchError::InvalidTimestamp(_)))
        ));
        let s = topic(&[("message.timestamp.type", "LogAppendTime")]);
        assert!(run(&s, &late, now, false).is_ok());
    }

    #[test]
    fn the_message_names_the_bound_crossed() {
        let now = 10_000_000;
        let s = topic(&[
            ("message.timestamp.before.max.ms", "1000"),
            ("message.timestamp.after.max.ms", "1000"),
        ]);
        let message = |ts: &[i64]| match run(&s, &batch(Compression::None, ts), now, false) {
            Err(Refused::Batch(BatchError::InvalidTimestamp(m))) => m.to_string(),
            other => panic!("expected INVALID_TIMESTAMP, got {other:?}"),
        };
        // A whole batch in the future crosses the after bound.
        assert!(message(&[now + 5000, now + 6000]).contains("message.timestamp.after.max.ms"));
        assert!(message(&[now - 5000]).contains("message.timestamp.before.max.ms"));
    }

    #[test]
    fn records_without_a_timestamp_are_not_checked() {
        let s = topic(&[("message.timestamp.before.max.ms", "0")]);
        assert!(run(&s, &batch(Compression::None, &[-1, -1]), 10_000, false).is_ok());
        assert!(run(&s, &batch(Compression::Gzip, &[-1]), 10_000, false).is_ok());
        assert!(run(&s, &batch(Compression::None, &[-1, 9_999]), 10_000, false).is_err());
    }

    #[test]
    fn the_oldest_record_counts_not_the_first() {
        let now = 10_000_000;
        let s = topic(&[("message.timestamp.before.max.ms", "1000")]);
        // The first record is recent; the second is older than allowed.
        let b = batch(Compression::None, &[now, now - 1001]);
        assert!(matches!(
            run(&s, &b, now, false),
            Err(Refused::Batch(BatchError::InvalidTimestamp(_)))
        ));
        assert!(run(&s, &batch(Compression::None, &[now - 1000]), now, false).is_ok());
    }

    #[test]
    fn topic_codec_rebuilds_other_codecs_only() {
        let now = 1_000;
        let s = topic(&[("compression.type", "snappy")]);
        let plain = batch(Compression::None, &[now; 10]);
        let (bytes, v) = run(&s, &plain, now, false).unwrap();
        assert_eq!(v.header.compression(), crate::storage::Codec::Snappy as u8);
        assert_eq!(v.size, bytes.len());
        let snappy = batch(Compression::Snappy, &[now; 10]);
        let (bytes, _) = run(&s, &snappy, now, false).unwrap();
        assert_eq!(bytes, snappy, "same codec: the bytes are kept");
        let s = topic(&[("compression.type", "producer")]);
        let (bytes, _) = run(&s, &plain, now, false).unwrap();
        assert_eq!(bytes, plain);
    }

    #[test]
    fn a_rebuilt_batch_must_fit_max_message_bytes() {
        let now = 1_000;
        let plain = batch(Compression::Gzip, &[now; 50]);
        let limit = plain.len().to_string();
        let s = topic(&[
            ("compression.type", "uncompressed"),
            ("max.message.bytes", &limit),
        ]);
        assert!(matches!(
            run(&s, &plain, now, false),
            Err(Refused::Batch(BatchError::MessageTooLarge { .. }))
        ));
    }

    #[test]
    fn min_insync_above_one_refuses_acks_all_only() {
        let s = topic(&[("min.insync.replicas", "2")]);
        let b = batch(Compression::None, &[1_000]);
        assert!(matches!(
            run(&s, &b, 1_000, true),
            Err(Refused::NotEnoughReplicas {
                required: 2,
                isr: 1
            })
        ));
        assert!(run(&s, &b, 1_000, false).is_ok());
        let v = validate_batches(&b, usize::MAX).unwrap();
        assert!(apply(&s, &b, &v[0], 1_000, true, 2).is_ok());
    }
}
