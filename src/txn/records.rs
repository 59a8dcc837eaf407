//! Records of the internal topic `__transaction_state`, in Kafka's schemas so
//! that tools reading the topic understand them:
//!
//! * key `TransactionLogKey` v0: `transactional_id` (string);
//! * value `TransactionLogValue` v0: producer id (int64), producer epoch
//!   (int16), transaction timeout (int32, ms), status (int8), the partitions
//!   in the transaction (nullable array of topic + int32 partition array),
//!   last update and start timestamps (int64, ms).
//!
//! A null value is a tombstone (the transactional id expired). Encodings are
//! Kafka's non-flexible ones (int16-length strings, int32-length arrays).

use std::collections::BTreeSet;

use bytes::{BufMut, Bytes, BytesMut};

use crate::group::records::{get_i16, get_i32, get_i64, get_str, need, put_str, RecordError};

/// Kafka's `TransactionState` (status byte in `TransactionLogValue`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnStatus {
    /// No transaction in progress (after InitProducerId).
    Empty = 0,
    /// Partitions were added; the transaction is open.
    Ongoing = 1,
    /// EndTxn(commit) accepted; COMMIT markers are being written.
    PrepareCommit = 2,
    /// EndTxn(abort) or a timeout accepted; ABORT markers are being written.
    PrepareAbort = 3,
    /// Every COMMIT marker is written.
    CompleteCommit = 4,
    /// Every ABORT marker is written.
    CompleteAbort = 5,
    /// The transactional id expired.
    Dead = 6,
    /// The producer was fenced while its transaction was open (written by
    /// Kafka before the abort; read as PrepareAbort).
    PrepareEpochFence = 7,
}

impl TxnStatus {
    /// The status for a status byte; `None` for an unknown byte.
    pub fn from_i8(b: i8) -> Option<TxnStatus> {
        use TxnStatus::*;
        Some(match b {
            0 => Empty,
            1 => Ongoing,
            2 => PrepareCommit,
            3 => PrepareAbort,
            4 => CompleteCommit,
            5 => CompleteAbort,
            6 => Dead,
            7 => PrepareEpochFence,
            _ => return None,
        })
    }

    /// The name Kafka's admin APIs use (DescribeTransactions,
    /// ListTransactions state filters).
    pub fn name(self) -> &'static str {
        use TxnStatus::*;
        match self {
            Empty => "Empty",
            Ongoing => "Ongoing",
            PrepareCommit => "PrepareCommit",
            PrepareAbort => "PrepareAbort",
            CompleteCommit => "CompleteCommit",
            CompleteAbort => "CompleteAbort",
            Dead => "Dead",
            PrepareEpochFence => "PrepareEpochFence",
        }
    }
}

/// The value of a transaction-log record: one transactional id's metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct TxnLogValue {
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// `transaction.timeout.ms` the producer asked for.
    pub timeout_ms: i32,
    /// State.
    pub status: TxnStatus,
    /// Partitions in the current transaction.
    pub partitions: BTreeSet<(String, i32)>,
    /// Last change (ms since the epoch).
    pub last_update_ms: i64,
    /// When the current transaction started (ms), -1 when none.
    pub start_ms: i64,
}

/// Key of a transaction-log record (key version 0).
pub fn txn_key(transactional_id: &str) -> Bytes {
    let mut b = BytesMut::with_capacity(4 + transactional_id.len());
    b.put_i16(0);
    put_str(&mut b, transactional_id);
    b.freeze()
}

/// Value of a transaction-log record (value version 0).
pub fn txn_value(v: &TxnLogValue) -> Bytes {
    let mut b = BytesMut::with_capacity(64);
    b.put_i16(0);
    b.put_i64(v.producer_id);
    b.put_i16(v.producer_epoch);
    b.put_i32(v.timeout_ms);
    b.put_i8(v.status as i8);
    // Partitions grouped by topic, in order.
    let mut topics: Vec<(&str, Vec<i32>)> = Vec::new();
    for (t, p) in &v.partitions {
        match topics.last_mut() {
            Some((last, ps)) if *last == t.as_str() => ps.push(*p),
            _ => topics.push((t.as_str(), vec![*p])),
        }
    }
    b.put_i32(topics.len() as i32);
    for (t, ps) in topics {
        put_str(&mut b, t);
        b.put_i32(ps.len() as i32);
        for p in ps {
            b.put_i32(p);
        }
    }
    b.put_i64(v.last_update_ms);
    b.put_i64(v.start_ms);
    b.freeze()
}

/// Decodes a record: (transactional id, value or `None` for a tombstone).
/// Errors on truncated input or unknown versions (key v0, value v0–v1 are
/// read; v1's tagged fields are ignored).
pub fn decode(
    key: &Bytes,
    value: Option<&Bytes>,
) -> Result<(String, Option<TxnLogValue>), RecordError> {
    let mut k = key.clone();
    let kv = get_i16(&mut k, "key version")?;
    if kv != 0 {
        return Err(RecordError::UnknownVersion {
            what: "key",
            version: kv,
        });
    }
    let id = get_str(&mut k, "transactional id")?;
    let Some(value) = value else {
        return Ok((id, None));
    };
    let mut b = value.clone();
    let vv = get_i16(&mut b, "value version")?;
    if vv != 0 {
        return Err(RecordError::UnknownVersion {
            what: "value",
            version: vv,
        });
    }
    let producer_id = get_i64(&mut b, "producer id")?;
    let producer_epoch = get_i16(&mut b, "producer epoch")?;
    let timeout_ms = get_i32(&mut b, "timeout")?;
    need(&b, 1, "status")?;
    let status_byte = b[0] as i8;
    let _ = bytes::Buf::get_u8(&mut b);
    let status = TxnStatus::from_i8(status_byte).ok_or(RecordError::Truncated("status"))?;
    let n = get_i32(&mut b, "partitions")?;
    let mut partitions = BTreeSet::new();
    for _ in 0..n.max(0) {
        let topic = get_str(&mut b, "topic")?;
        let m = get_i32(&mut b, "partition ids")?;
        for _ in 0..m.max(0) {
            partitions.insert((topic.clone(), get_i32(&mut b, "partition id")?));
        }
    }
    let last_update_ms = get_i64(&mut b, "last update")?;
    let start_ms = get_i64(&mut b, "start")?;
    Ok((
        id,
        Some(TxnLogValue {
            producer_id,
            producer_epoch,
            timeout_ms,
            status,
            partitions,
            last_update_ms,
            start_ms,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_roundtrip_and_exact_bytes() {
        let mut partitions = BTreeSet::new();
        partitions.insert(("a".to_string(), 1));
        partitions.insert(("a".to_string(), 0));
        partitions.insert(("b".to_string(), 2));
        let v = TxnLogValue {
            producer_id: 7,
            producer_epoch: 3,
            timeout_ms: 60_000,
            status: TxnStatus::Ongoing,
            partitions,
            last_update_ms: 10,
            start_ms: 9,
        };
        let bytes = txn_value(&v);
        // version, pid, epoch, timeout, status, 2 topics: "a" [0,1], "b" [2], two timestamps
        assert_eq!(
            bytes.len(),
            2 + 8 + 2 + 4 + 1 + 4 + (3 + 4 + 8) + (3 + 4 + 4) + 16
        );
        assert_eq!(&bytes[..2], &[0, 0]);
        assert_eq!(bytes[16], 1);
        let key = txn_key("tx");
        assert_eq!(&key[..], &[0, 0, 0, 2, b't', b'x']);
        assert_eq!(decode(&key, Some(&bytes)), Ok(("tx".into(), Some(v))));
        assert_eq!(decode(&key, None), Ok(("tx".into(), None)));
        assert!(decode(&key, Some(&bytes.slice(..20))).is_err());
    }
}
