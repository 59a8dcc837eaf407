//! Records of the internal topic `__transaction_state`, in Kafka's schemas so
//! that tools reading the topic understand them:
//!
//! * key `TransactionLogKey` v0: `transactional_id` (string);
//! * value `TransactionLogValue` v0: producer id (int64), producer epoch
//!   (int16), transaction timeout (int32, ms), status (int8), the partitions
//!   in the transaction (nullable array of topic + int32 partition array),
//!   last update and start timestamps (int64, ms);
//! * value `TransactionLogValue` v1 (KIP-890 part 2, Kafka's flexible
//!   encoding: compact strings and arrays, tagged fields): the same fields
//!   plus the tagged PreviousProducerId (tag 0), NextProducerId (tag 1),
//!   ClientTransactionVersion (tag 2) and NextProducerEpoch (tag 3).
//!
//! A null value is a tombstone (the transactional id expired). A value is
//! written as v1 when one of its tagged fields differs from its default (a
//! transactions-v2 client wrote it), as v0 otherwise, so a broker that only
//! reads v0 still reads every transactions-v1 record; both are read.

use std::collections::BTreeSet;

use bytes::{BufMut, Bytes, BytesMut};

use crate::group::records::{get_i16, get_i32, get_i64, get_str, need, put_str, RecordError};

/// The transaction protocol a client speaks (Kafka's `TransactionVersion`,
/// stored as ClientTransactionVersion). Kafka decides it from each request's
/// version, not from the finalized `transaction.version` feature: EndTxn v5+,
/// AddPartitionsToTxn v4+, Produce v12+ and TxnOffsetCommit v5+ are
/// transactions v2 (KIP-890 part 2), older versions level 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TxnVersion {
    /// Level 0: transactions v1 (explicit AddPartitionsToTxn, one epoch per
    /// producer session).
    Tv0 = 0,
    /// Level 1: only the flexible TransactionLogValue v1; the protocol of
    /// level 0.
    Tv1 = 1,
    /// Level 2: transactions v2 (the epoch bumped at every EndTxn, partitions
    /// added by their leaders).
    Tv2 = 2,
}

impl TxnVersion {
    /// The level of a ClientTransactionVersion field; a level above 2 (a
    /// newer Kafka) is read as 2, a negative one as 0.
    pub fn from_level(level: i16) -> TxnVersion {
        match level {
            i16::MIN..=0 => TxnVersion::Tv0,
            1 => TxnVersion::Tv1,
            2..=i16::MAX => TxnVersion::Tv2,
        }
    }

    /// Kafka's `supportsEpochBump`: level 2 and above.
    pub fn bumps_epoch(self) -> bool {
        self >= TxnVersion::Tv2
    }

    /// EndTxn's version: v5+ is transactions v2
    /// (`TransactionVersion.transactionVersionForEndTxn`).
    pub fn for_end_txn(api_version: i16) -> TxnVersion {
        if api_version > 4 {
            TxnVersion::Tv2
        } else {
            TxnVersion::Tv0
        }
    }

    /// AddPartitionsToTxn's version: v4+ (sent by brokers) is transactions
    /// v2 (`TransactionVersion.transactionVersionForAddPartitionsToTxn`).
    pub fn for_add_partitions(api_version: i16) -> TxnVersion {
        if api_version > 3 {
            TxnVersion::Tv2
        } else {
            TxnVersion::Tv0
        }
    }
}

/// The tagged fields of `TransactionLogValue` v1 (KIP-890 part 2), each at
/// its schema default when unused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TxnLogTagged {
    /// PreviousProducerId (tag 0, default -1): the producer id before the
    /// last rotation, so a retried EndTxn of the old id is recognised.
    pub previous_producer_id: i64,
    /// NextProducerId (tag 1, default -1): the id allocated up front when an
    /// EndTxn exhausts the epoch; the Complete state switches to it.
    pub next_producer_id: i64,
    /// ClientTransactionVersion (tag 2, default 0).
    pub client_tv: TxnVersion,
    /// NextProducerEpoch (tag 3, default -1): Kafka's two-phase commit
    /// (KIP-939) field, kept as read.
    pub next_producer_epoch: i16,
}

impl Default for TxnLogTagged {
    fn default() -> TxnLogTagged {
        TxnLogTagged {
            previous_producer_id: -1,
            next_producer_id: -1,
            client_tv: TxnVersion::Tv0,
            next_producer_epoch: -1,
        }
    }
}

impl TxnLogTagged {
    /// Whether every field is at its default (the value is written as v0).
    pub fn is_default(&self) -> bool {
        *self == TxnLogTagged::default()
    }
}

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
    /// The fields of transactions v2 (tagged in value v1).
    pub tagged: TxnLogTagged,
}

/// Key of a transaction-log record (key version 0).
pub fn txn_key(transactional_id: &str) -> Bytes {
    let mut b = BytesMut::with_capacity(4 + transactional_id.len());
    b.put_i16(0);
    put_str(&mut b, transactional_id);
    b.freeze()
}

/// Value of a transaction-log record: version 0, or version 1 when a
/// tagged field is set (see the module's notes).
pub fn txn_value(v: &TxnLogValue) -> Bytes {
    let flexible = !v.tagged.is_default();
    let mut b = BytesMut::with_capacity(64);
    b.put_i16(if flexible { 1 } else { 0 });
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
    if flexible {
        put_uvarint(&mut b, topics.len() as u64 + 1);
    } else {
        b.put_i32(topics.len() as i32);
    }
    for (t, ps) in topics {
        if flexible {
            put_uvarint(&mut b, t.len() as u64 + 1);
            b.put_slice(t.as_bytes());
            put_uvarint(&mut b, ps.len() as u64 + 1);
        } else {
            put_str(&mut b, t);
            b.put_i32(ps.len() as i32);
        }
        for p in ps {
            b.put_i32(p);
        }
        if flexible {
            // The partitions entry's own tagged fields: none.
            put_uvarint(&mut b, 0);
        }
    }
    b.put_i64(v.last_update_ms);
    b.put_i64(v.start_ms);
    if flexible {
        put_tagged(&mut b, &v.tagged);
    }
    b.freeze()
}

/// The value's tagged fields in tag order, each only when not its default.
fn put_tagged(b: &mut BytesMut, t: &TxnLogTagged) {
    let d = TxnLogTagged::default();
    let mut fields: Vec<(u64, Vec<u8>)> = Vec::new();
    if t.previous_producer_id != d.previous_producer_id {
        fields.push((0, t.previous_producer_id.to_be_bytes().to_vec()));
    }
    if t.next_producer_id != d.next_producer_id {
        fields.push((1, t.next_producer_id.to_be_bytes().to_vec()));
    }
    if t.client_tv != d.client_tv {
        fields.push((2, (t.client_tv as i16).to_be_bytes().to_vec()));
    }
    if t.next_producer_epoch != d.next_producer_epoch {
        fields.push((3, t.next_producer_epoch.to_be_bytes().to_vec()));
    }
    put_uvarint(b, fields.len() as u64);
    for (tag, data) in fields {
        put_uvarint(b, tag);
        put_uvarint(b, data.len() as u64);
        b.put_slice(&data);
    }
}

fn put_uvarint(b: &mut BytesMut, mut v: u64) {
    while v >= 0x80 {
        b.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    b.put_u8(v as u8);
}

fn get_uvarint(b: &mut Bytes, what: &'static str) -> Result<u64, RecordError> {
    let mut v = 0u64;
    for shift in (0..35).step_by(7) {
        need(b, 1, what)?;
        let byte = bytes::Buf::get_u8(b);
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(RecordError::Truncated(what))
}

/// A compact length (uvarint of length + 1); `None` for null (0).
fn get_compact_len(b: &mut Bytes, what: &'static str) -> Result<Option<usize>, RecordError> {
    Ok(get_uvarint(b, what)?.checked_sub(1).map(|n| n as usize))
}

fn get_compact_str(b: &mut Bytes, what: &'static str) -> Result<String, RecordError> {
    let n = get_compact_len(b, what)?.unwrap_or(0);
    need(b, n, what)?;
    let raw = b.split_to(n);
    Ok(String::from_utf8_lossy(&raw).into_owned())
}

/// Skips or reads a tagged-field section; `tagged` receives the value's
/// known tags (`None` for a nested struct's section, whose tags are all
/// skipped).
fn get_tagged(b: &mut Bytes, mut tagged: Option<&mut TxnLogTagged>) -> Result<(), RecordError> {
    let n = get_uvarint(b, "tagged fields")?;
    for _ in 0..n {
        let tag = get_uvarint(b, "tag")?;
        let size = get_uvarint(b, "tag size")? as usize;
        need(b, size, "tagged field")?;
        let mut data = b.split_to(size);
        let Some(t) = tagged.as_deref_mut() else {
            continue;
        };
        match tag {
            0 => t.previous_producer_id = get_i64(&mut data, "previous producer id")?,
            1 => t.next_producer_id = get_i64(&mut data, "next producer id")?,
            2 => t.client_tv = TxnVersion::from_level(get_i16(&mut data, "client version")?),
            3 => t.next_producer_epoch = get_i16(&mut data, "next producer epoch")?,
            // A tag of a newer schema: skipped, as Kafka's readers do.
            _ => {}
        }
    }
    Ok(())
}

/// Decodes a record: (transactional id, value or `None` for a tombstone).
/// Errors on truncated input or unknown versions (key v0, value v0–v1 are
/// read, v1 with its tagged fields).
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
    if !(0..=1).contains(&vv) {
        return Err(RecordError::UnknownVersion {
            what: "value",
            version: vv,
        });
    }
    let flexible = vv == 1;
    let producer_id = get_i64(&mut b, "producer id")?;
    let producer_epoch = get_i16(&mut b, "producer epoch")?;
    let timeout_ms = get_i32(&mut b, "timeout")?;
    need(&b, 1, "status")?;
    let status_byte = b[0] as i8;
    let _ = bytes::Buf::get_u8(&mut b);
    let status = TxnStatus::from_i8(status_byte).ok_or(RecordError::Truncated("status"))?;
    let n = if flexible {
        get_compact_len(&mut b, "partitions")?.unwrap_or(0)
    } else {
        get_i32(&mut b, "partitions")?.max(0) as usize
    };
    let mut partitions = BTreeSet::new();
    for _ in 0..n {
        let topic = if flexible {
            get_compact_str(&mut b, "topic")?
        } else {
            get_str(&mut b, "topic")?
        };
        let m = if flexible {
            get_compact_len(&mut b, "partition ids")?.unwrap_or(0)
        } else {
            get_i32(&mut b, "partition ids")?.max(0) as usize
        };
        for _ in 0..m {
            partitions.insert((topic.clone(), get_i32(&mut b, "partition id")?));
        }
        if flexible {
            get_tagged(&mut b, None)?;
        }
    }
    let last_update_ms = get_i64(&mut b, "last update")?;
    let start_ms = get_i64(&mut b, "start")?;
    let mut tagged = TxnLogTagged::default();
    if flexible {
        get_tagged(&mut b, Some(&mut tagged))?;
    }
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
            tagged,
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
            tagged: TxnLogTagged::default(),
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

    /// Value v1 as Kafka's flexible schema lays it out: compact array and
    /// strings, an empty tagged section per partitions entry, the value's
    /// tagged fields in tag order at the end.
    #[test]
    fn value_v1_with_tagged_fields() {
        let v = TxnLogValue {
            producer_id: 7,
            producer_epoch: i16::MAX,
            timeout_ms: 60_000,
            status: TxnStatus::PrepareCommit,
            partitions: [("ab".to_string(), 3)].into_iter().collect(),
            last_update_ms: 10,
            start_ms: 9,
            tagged: TxnLogTagged {
                previous_producer_id: -1,
                next_producer_id: 8,
                client_tv: TxnVersion::Tv2,
                next_producer_epoch: -1,
            },
        };
        let bytes = txn_value(&v);
        let mut want = vec![0u8, 1];
        want.extend_from_slice(&7i64.to_be_bytes());
        want.extend_from_slice(&i16::MAX.to_be_bytes());
        want.extend_from_slice(&60_000i32.to_be_bytes());
        want.push(2);
        want.extend_from_slice(&[2, 3, b'a', b'b', 2, 0, 0, 0, 3, 0]);
        want.extend_from_slice(&10i64.to_be_bytes());
        want.extend_from_slice(&9i64.to_be_bytes());
        want.extend_from_slice(&[2, 1, 8, 0, 0, 0, 0, 0, 0, 0, 8, 2, 2, 0, 2]);
        assert_eq!(&bytes[..], &want[..]);
        let key = txn_key("tx");
        assert_eq!(
            decode(&key, Some(&bytes)),
            Ok(("tx".into(), Some(v.clone())))
        );
        // Unknown tags are skipped; a null partitions array reads as none.
        let mut odd = want[..17].to_vec();
        odd.push(0);
        odd.extend_from_slice(&10i64.to_be_bytes());
        odd.extend_from_slice(&9i64.to_be_bytes());
        odd.extend_from_slice(&[2, 2, 2, 0, 1, 9, 1, 0xff]);
        let (_, got) = decode(&key, Some(&Bytes::from(odd))).unwrap();
        let got = got.unwrap();
        assert!(got.partitions.is_empty());
        assert_eq!(got.tagged.client_tv, TxnVersion::Tv1);
        // Default tagged fields keep version 0.
        let v0 = TxnLogValue {
            tagged: TxnLogTagged::default(),
            ..v
        };
        assert_eq!(&txn_value(&v0)[..2], &[0, 0]);
    }
}
