//! Record batches: Produce validation, the topic rules that decompress and
//! recompress, and the record decoders of the coordinators' internal topics.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use bytes::{Buf, Bytes};

use super::requests::check_batches;
use super::Violation;
use crate::cluster::topic_config::{settings, TopicSettings};
use crate::config::Config;
use crate::group::membership::GroupCore;
use crate::shard::partition::produce_rules;
use crate::storage::recompress::{decompress, Codec};
use crate::storage::{
    log_append_time_header, replica_batches, validate_batches, BatchHeader, ValidatedBatch,
    RECORD_BATCH_HEADER_BYTES,
};

/// Broker time of every check (ms): fixed, so a run is repeatable.
const NOW_MS: i64 = 1_700_000_000_000;

/// Decompression bound of the comparisons (bytes).
const COMPARE_LIMIT: u64 = 16 << 20;

/// Topic settings the targets apply: each `compression.type` (and
/// `producer`), with CreateTime and LogAppendTime.
fn topic_settings() -> &'static [TopicSettings] {
    static ALL: OnceLock<Vec<TopicSettings>> = OnceLock::new();
    ALL.get_or_init(|| {
        let broker = Config::default();
        let mut out = Vec::new();
        for ts in ["CreateTime", "LogAppendTime"] {
            for codec in ["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"] {
                let topic: BTreeMap<String, String> = [
                    ("compression.type", codec),
                    ("message.timestamp.type", ts),
                    // A wide window: the seeds' timestamps are real ones.
                    ("message.timestamp.before.max.ms", "9223372036854775807"),
                    ("message.timestamp.after.max.ms", "9223372036854775807"),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
                out.push(settings(&broker, &topic));
            }
        }
        out
    })
}

/// Takes the `records` of one Produce partition; validates them as the
/// partition does (`storage::validate_batches` at Kafka's default
/// `message.max.bytes`) and as a follower does (`replica_batches`), then
/// runs each accepted batch through the topic rules of a `producer`
/// topic (the record walk of uncompressed batches) and the LogAppendTime
/// header rewrite; then the same with every batch's CRC fixed (so that
/// mutated batches reach the rules behind the CRC). Accepted batches must
/// lie inside the input; a rewritten header must still validate.
pub fn record_batches(data: &[u8]) -> Result<(), Violation> {
    let fixed = super::with_fixed_crcs(data);
    record_batches_once(data)?;
    if fixed != data {
        record_batches_once(&fixed)?;
    }
    Ok(())
}

fn record_batches_once(data: &[u8]) -> Result<(), Violation> {
    let records = Bytes::copy_from_slice(data);
    if let Ok(batches) = replica_batches(&records) {
        check_batches(&records, &batches, "replica_batches")?;
    }
    let Ok(batches) = validate_batches(&records, topic_settings()[0].max_message_bytes) else {
        return Ok(());
    };
    check_batches(&records, &batches, "validate_batches")?;
    for b in &batches {
        let one = records.slice(b.position..b.position + b.size);
        let _ = produce_rules::apply(&topic_settings()[0], &one, &at_zero(b), NOW_MS, false, 1);
        let mut rewritten = log_append_time_header(&one, NOW_MS).to_vec();
        rewritten.extend_from_slice(&one[RECORD_BATCH_HEADER_BYTES..]);
        if validate_batches(&rewritten, usize::MAX).is_err() {
            return Err(format!(
                "LogAppendTime header of the batch at {} does not validate",
                b.position
            ));
        }
    }
    Ok(())
}

fn at_zero(b: &ValidatedBatch) -> ValidatedBatch {
    ValidatedBatch { position: 0, ..*b }
}

/// Takes a selector byte and bytes: the low 3 bits pick a codec whose
/// decompressor (`storage::recompress::decompress`, 1 MiB bound) reads the
/// bytes as they are; the rest of the byte picks topic settings (codec,
/// timestamp type), and each Produce-valid batch in the bytes goes through
/// the topic rules (`produce_rules::apply`: recompression, the record walk,
/// the size and timestamp rules), as sent and with every CRC fixed. A
/// rebuilt batch must validate, keep every
/// header field but the codec, length and CRC, and decompress to the same
/// records.
pub fn compressed_batches(data: &[u8]) -> Result<(), Violation> {
    let Some((&selector, rest)) = data.split_first() else {
        return Ok(());
    };
    if let Some(codec) = Codec::from_bits(selector & 7) {
        let _ = decompress(codec, rest, 1 << 20);
    }
    let all = topic_settings();
    let topic = &all[usize::from(selector >> 3) % all.len()];
    let fixed = super::with_fixed_crcs(rest);
    topic_rules(topic, rest)?;
    if fixed != rest {
        topic_rules(topic, &fixed)?;
    }
    Ok(())
}

/// Each Produce-valid batch of `rest` through the topic rules of `topic`.
fn topic_rules(topic: &TopicSettings, rest: &[u8]) -> Result<(), Violation> {
    let records = Bytes::copy_from_slice(rest);
    let Ok(batches) = validate_batches(&records, topic.max_message_bytes) else {
        return Ok(());
    };
    for b in &batches {
        let one = records.slice(b.position..b.position + b.size);
        let Ok((bytes, out)) = produce_rules::apply(topic, &one, &at_zero(b), NOW_MS, true, 1)
        else {
            continue;
        };
        let whole = bytes
            .get(out.position..out.position + out.size)
            .ok_or("the batch to append is outside its bytes")?;
        let again = validate_batches(whole, usize::MAX)
            .map_err(|e| format!("the batch to append does not validate: {e}"))?;
        let [stored] = again.as_slice() else {
            return Err(format!("{} batches to append", again.len()));
        };
        same_but_codec(&b.header, &stored.header)?;
        same_records(&one, &b.header, whole, &stored.header)?;
    }
    Ok(())
}

/// Header fields recompression keeps.
fn same_but_codec(a: &BatchHeader, b: &BatchHeader) -> Result<(), Violation> {
    let keep = |h: &BatchHeader| {
        (
            h.base_offset,
            h.partition_leader_epoch,
            h.attributes & !0x07,
            h.last_offset_delta,
            h.base_timestamp,
            h.max_timestamp,
            h.producer_id,
            h.producer_epoch,
            h.base_sequence,
            h.records_count,
        )
    };
    if keep(a) != keep(b) {
        return Err(format!("header changed: {a:?} became {b:?}"));
    }
    Ok(())
}

/// Both batches hold the same record bytes once decompressed.
fn same_records(a: &[u8], ha: &BatchHeader, b: &[u8], hb: &BatchHeader) -> Result<(), Violation> {
    let plain = |batch: &[u8], h: &BatchHeader| {
        Codec::from_bits(h.compression()).and_then(|c| {
            decompress(c, batch.get(RECORD_BATCH_HEADER_BYTES..)?, COMPARE_LIMIT).ok()
        })
    };
    match (plain(a, ha), plain(b, hb)) {
        (Some(x), Some(y)) if x != y => Err(format!(
            "records changed: {} bytes became {} bytes",
            x.len(),
            y.len()
        )),
        (Some(_), None) => Err("the rebuilt batch does not decompress".into()),
        _ => Ok(()),
    }
}

/// Takes a selector byte and bytes. Selector even: the bytes are a
/// partition's stored batches (bit 1 set: with their CRCs fixed first) (`__consumer_offsets` or
/// `__transaction_state`), decoded with the protocol crate's record decoder
/// as the loaders read them (`shard::internal::for_each_record`), each
/// record replayed into a group coordinator (`group::load::replay_record`,
/// control records included) and a transaction coordinator
/// (`txn::load::Replay`). Selector odd: the bytes are (key, value) pairs,
/// each an `i16` key length and key then an `i32` value length (-1: a
/// tombstone) and value, given straight to both records decoders.
pub fn coordinator_records(data: &[u8]) -> Result<(), Violation> {
    let Some((&selector, rest)) = data.split_first() else {
        return Ok(());
    };
    let mut core = GroupCore::default();
    let mut txns = crate::txn::load::Replay::default();
    if selector & 1 == 0 {
        let mut buf = if selector & 2 == 0 {
            Bytes::copy_from_slice(rest)
        } else {
            Bytes::from(super::with_fixed_crcs(rest))
        };
        let Ok(sets) = crate::storage::records::decode_batches(&mut buf) else {
            return Ok(());
        };
        for set in &sets {
            for r in &set.records {
                crate::group::load::replay_record(&mut core, r, 0, 50, NOW_MS);
                if let (Some(key), false) = (&r.key, r.control) {
                    let _ = txns.apply(key, r.value.as_ref());
                }
            }
        }
    } else {
        let mut buf = Bytes::copy_from_slice(rest);
        while buf.remaining() >= 2 {
            let klen = usize::from(buf.get_u16()).min(buf.remaining());
            let key = buf.split_to(klen);
            if buf.remaining() < 4 {
                break;
            }
            let vlen = buf.get_i32();
            let value = usize::try_from(vlen)
                .ok()
                .map(|n| buf.split_to(n.min(buf.remaining())));
            if let Ok(rec) = crate::group::records::decode(&key, value.as_ref()) {
                crate::group::load::replay(&mut core, rec, NOW_MS);
            }
            let _ = txns.apply(&key, value.as_ref());
        }
    }
    let _ = core.take_effects();
    let _ = txns.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The input the `coordinator_records` fuzzer stopped on: a stored
    /// batch whose record timestamp (base + delta) overflows i64. The
    /// protocol crate's decoder adds them unchecked; debug builds (which
    /// the test suite uses) must wrap as release builds and Kafka's Java
    /// code do, not panic (Cargo.toml turns the crate's overflow checks
    /// off).
    #[test]
    fn a_record_timestamp_past_i64_max_decodes_without_a_panic() {
        let input = include_bytes!(
            "../../tests/fuzz/seeds/coordinator_records/crash-timestamp-delta-overflow"
        );
        assert_eq!(coordinator_records(input), Ok(()));
        let mut buf = Bytes::copy_from_slice(&input[1..]);
        // The record walk lets the overflowing record through to the
        // decoder (where it panicked), which wraps.
        let _ = crate::storage::records::decode_batches(&mut buf);
    }

    /// The input the `coordinator_records` fuzzer ran out of memory on: a
    /// stored record whose header count is near 2^31, which the protocol
    /// crate's decoder made a hash map's capacity (over 2 GiB touched).
    /// The record walk checks every record of a batch before the crate
    /// decodes any (here it stops at a later record's bad timestamp delta;
    /// a header count the record cannot hold is refused as such, see
    /// `storage::records` tests).
    #[test]
    fn a_header_count_the_record_cannot_hold_is_refused_without_an_allocation() {
        let input =
            include_bytes!("../../tests/fuzz/seeds/coordinator_records/crash-record-header-count");
        assert_eq!(coordinator_records(input), Ok(()));
        let mut buf = if input[0] & 2 == 0 {
            Bytes::copy_from_slice(&input[1..])
        } else {
            Bytes::from(super::super::with_fixed_crcs(&input[1..]))
        };
        let e = crate::storage::records::decode_batches(&mut buf).unwrap_err();
        assert!(
            matches!(e, crate::storage::batch::RecompressError::Framing(_)),
            "{e}"
        );
    }
}
