//! Record batches to append (RecordBatch v2, encoded with the protocol
//! crate) and records as the broker stores them.

use bytes::Bytes;

/// One RecordBatch v2 of `n` records `k{i}`/`v{i}` (timestamps from `ts`),
/// of producer (`pid`, `epoch`) from sequence `seq` (-1 for none),
/// transactional as asked.
pub fn batch(pid: i64, epoch: i16, seq: i32, n: i64, ts: i64, transactional: bool) -> Bytes {
    let recs: Vec<Rec> = (0..n)
        .map(|i| (Some(format!("k{i}")), Some(format!("v{i}")), ts + i))
        .collect();
    encode(pid, epoch, seq, &recs, transactional, false)
}

/// One RecordBatch v2 without a producer, of records (key, value) with
/// timestamps from `ts` (`None` key or value: null; a null value is a
/// tombstone).
pub fn keyed(kv: &[(Option<&str>, Option<&str>)], ts: i64) -> Bytes {
    let recs: Vec<Rec> = kv
        .iter()
        .zip(ts..)
        .map(|((k, v), t)| (k.map(str::to_string), v.map(str::to_string), t))
        .collect();
    encode(-1, -1, -1, &recs, false, false)
}

/// One batch without a producer of `values` (keys `k`), timestamps from
/// `ts`.
pub fn values_batch(values: &[String], ts: i64) -> Bytes {
    let kv: Vec<(Option<&str>, Option<&str>)> = values
        .iter()
        .map(|v| (Some("k"), Some(v.as_str())))
        .collect();
    keyed(&kv, ts)
}

/// One record to encode: key, value, timestamp (ms).
pub type Rec = (Option<String>, Option<String>, i64);

/// Encodes one RecordBatch v2 of producer (`pid`, `epoch`) from sequence
/// `seq` (-1: none); `control`: a control batch, whose records get the
/// COMMIT marker key.
pub fn encode(
    pid: i64,
    epoch: i16,
    seq: i32,
    recs: &[Rec],
    transactional: bool,
    control: bool,
) -> Bytes {
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };
    let recs: Vec<Record> = recs
        .iter()
        .enumerate()
        .map(|(i, (k, v, ts))| Record {
            transactional,
            control,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: pid,
            producer_epoch: epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            // The encoder keeps records of one batch while their sequences
            // follow each other: a batch without a producer starts at -1.
            sequence: if seq < 0 {
                i as i32 - 1
            } else {
                seq + i as i32
            },
            timestamp: *ts,
            key: if control {
                Some(Bytes::from_static(&[0, 0, 0, 1]))
            } else {
                k.clone().map(Bytes::from)
            },
            value: v.clone().map(Bytes::from),
            headers: Default::default(),
        })
        .collect();
    let mut buf = bytes::BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, recs.iter(), &opts).expect("encode batch");
    buf.freeze()
}

/// A record as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// Offset.
    pub offset: i64,
    /// Key, as text.
    pub key: Option<String>,
    /// Value, as text.
    pub value: Option<String>,
    /// Timestamp (ms).
    pub timestamp: i64,
    /// The batch's timestamp type is LogAppendTime.
    pub log_append_time: bool,
    /// Producer id (-1 for none).
    pub producer_id: i64,
    /// A control record (a transaction marker).
    pub control: bool,
}

/// Every record of `bytes` (whole stored batches), control records too.
pub fn stored(bytes: &Bytes) -> Vec<Stored> {
    let text = |b: Option<Bytes>| b.map(|b| String::from_utf8_lossy(&b).to_string());
    let mut buf = bytes.clone();
    let mut out = Vec::new();
    while !buf.is_empty() {
        let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut buf)
            .expect("stored batches decode");
        for r in set.records {
            out.push(Stored {
                offset: r.offset,
                log_append_time: r.timestamp_type
                    == kafka_protocol::records::TimestampType::LogAppend,
                timestamp: r.timestamp,
                producer_id: r.producer_id,
                control: r.control,
                key: text(r.key),
                value: text(r.value),
            });
        }
    }
    out
}

/// The (offset, value) of every record of `bytes` (whole stored batches),
/// control records left out.
pub fn records(bytes: &Bytes) -> Vec<(i64, String)> {
    stored(bytes)
        .into_iter()
        .filter(|r| !r.control)
        .map(|r| (r.offset, r.value.unwrap_or_default()))
        .collect()
}
