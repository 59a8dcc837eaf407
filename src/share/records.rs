//! The records of `__share_group_state` (KIP-932), as Kafka 4.4's share
//! coordinator writes them: ShareSnapshot (key type 0: a share-partition's
//! whole state) and ShareUpdate (key type 1: a change since the snapshot).
//!
//! Key: i16 record type, then group id (i16-length string), topic id (16
//! bytes), partition (i32); never flexible. Value: i16 version 0, then a
//! flexible body: ShareSnapshot {snapshot epoch i32, state epoch i32,
//! leader epoch i32, start offset i64, create timestamp i64, write
//! timestamp i64, state batches}, ShareUpdate {snapshot epoch i32, leader
//! epoch i32, start offset i64 (-1: unchanged), state batches}; each state
//! batch {first offset i64, last offset i64, delivery state i8, delivery
//! count i16}; the tagged field 0 of both values is DeliveryCompleteCount
//! (i32, written only when not -1).

use bytes::{BufMut, Bytes, BytesMut};
use uuid::Uuid;

use super::partition::StateBatch;

/// Which share-partition a record is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareStateKey {
    /// Share group id.
    pub group_id: String,
    /// Topic id.
    pub topic_id: Uuid,
    /// Partition.
    pub partition: i32,
}

/// A share-partition's whole state (ShareSnapshotValue).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareSnapshot {
    /// Snapshot epoch (counts snapshots of this share-partition).
    pub snapshot_epoch: i32,
    /// State epoch (bumped when the state is initialized or reset).
    pub state_epoch: i32,
    /// Leader epoch of the share-partition's leader that wrote it.
    pub leader_epoch: i32,
    /// The share-partition start offset (SPSO).
    pub start_offset: i64,
    /// Offsets at or after the SPSO whose delivery completed; -1 unknown.
    pub delivery_complete_count: i32,
    /// When the state was created (ms since the epoch).
    pub create_timestamp: i64,
    /// When it was written (ms since the epoch).
    pub write_timestamp: i64,
    /// The window's runs of one state and delivery count.
    pub batches: Vec<StateBatch>,
}

/// A change to a share-partition's state (ShareUpdateValue).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareUpdate {
    /// The snapshot this update follows.
    pub snapshot_epoch: i32,
    /// Leader epoch of the writer.
    pub leader_epoch: i32,
    /// The new SPSO, or -1 when it did not move.
    pub start_offset: i64,
    /// As in [`ShareSnapshot`]; -1 unknown.
    pub delivery_complete_count: i32,
    /// The runs that changed.
    pub batches: Vec<StateBatch>,
}

/// One `__share_group_state` record; `None` values are tombstones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareStateRecord {
    /// Key type 0.
    Snapshot {
        /// The share-partition.
        key: ShareStateKey,
        /// Its state, or None to delete it.
        value: Option<ShareSnapshot>,
    },
    /// Key type 1.
    Update {
        /// The share-partition.
        key: ShareStateKey,
        /// The change, or None.
        value: Option<ShareUpdate>,
    },
}

/// Why a record could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShareRecordError {
    /// Too short, or a length out of range.
    #[error("truncated or malformed share state record: {0}")]
    Malformed(&'static str),
    /// A key type other than 0 and 1.
    #[error("key type {0} is not a share state record")]
    UnknownType(i16),
    /// A value version other than 0.
    #[error("share state value version {0} is not known")]
    UnknownVersion(i16),
}

impl ShareStateRecord {
    /// The record as Kafka 4.4 writes it: (key, value or None).
    pub fn encode(&self) -> (Bytes, Option<Bytes>) {
        match self {
            ShareStateRecord::Snapshot { key, value } => (
                encode_key(0, key),
                value.as_ref().map(|v| {
                    let mut b = value_start();
                    b.put_i32(v.snapshot_epoch);
                    b.put_i32(v.state_epoch);
                    b.put_i32(v.leader_epoch);
                    b.put_i64(v.start_offset);
                    b.put_i64(v.create_timestamp);
                    b.put_i64(v.write_timestamp);
                    put_batches(&mut b, &v.batches);
                    put_complete_count(&mut b, v.delivery_complete_count);
                    b.freeze()
                }),
            ),
            ShareStateRecord::Update { key, value } => (
                encode_key(1, key),
                value.as_ref().map(|v| {
                    let mut b = value_start();
                    b.put_i32(v.snapshot_epoch);
                    b.put_i32(v.leader_epoch);
                    b.put_i64(v.start_offset);
                    put_batches(&mut b, &v.batches);
                    put_complete_count(&mut b, v.delivery_complete_count);
                    b.freeze()
                }),
            ),
        }
    }

    /// Reads a record from its key and value (None: a tombstone).
    pub fn decode(key: &[u8], value: Option<&[u8]>) -> Result<ShareStateRecord, ShareRecordError> {
        let mut k = Reader { b: key, pos: 0 };
        let kind = k.i16()?;
        if kind != 0 && kind != 1 {
            return Err(ShareRecordError::UnknownType(kind));
        }
        let len = usize::try_from(k.i16()?).map_err(|_| ShareRecordError::Malformed("group id"))?;
        let group_id = String::from_utf8_lossy(k.take(len)?).into_owned();
        let id = k.take(16)?;
        let topic_id = Uuid::from_slice(id).map_err(|_| ShareRecordError::Malformed("topic id"))?;
        let partition = k.i32()?;
        let key = ShareStateKey {
            group_id,
            topic_id,
            partition,
        };
        let Some(value) = value else {
            return Ok(match kind {
                0 => ShareStateRecord::Snapshot { key, value: None },
                _ => ShareStateRecord::Update { key, value: None },
            });
        };
        let mut v = Reader { b: value, pos: 0 };
        let version = v.i16()?;
        if version != 0 {
            return Err(ShareRecordError::UnknownVersion(version));
        }
        if kind == 0 {
            let snapshot_epoch = v.i32()?;
            let state_epoch = v.i32()?;
            let leader_epoch = v.i32()?;
            let start_offset = v.i64()?;
            let create_timestamp = v.i64()?;
            let write_timestamp = v.i64()?;
            let batches = v.batches()?;
            let delivery_complete_count = v.complete_count()?;
            Ok(ShareStateRecord::Snapshot {
                key,
                value: Some(ShareSnapshot {
                    snapshot_epoch,
                    state_epoch,
                    leader_epoch,
                    start_offset,
                    delivery_complete_count,
                    create_timestamp,
                    write_timestamp,
                    batches,
                }),
            })
        } else {
            let snapshot_epoch = v.i32()?;
            let leader_epoch = v.i32()?;
            let start_offset = v.i64()?;
            let batches = v.batches()?;
            let delivery_complete_count = v.complete_count()?;
            Ok(ShareStateRecord::Update {
                key,
                value: Some(ShareUpdate {
                    snapshot_epoch,
                    leader_epoch,
                    start_offset,
                    delivery_complete_count,
                    batches,
                }),
            })
        }
    }
}

fn encode_key(kind: i16, key: &ShareStateKey) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(kind);
    let name = key.group_id.as_bytes();
    let len = name.len().min(i16::MAX as usize);
    b.put_i16(len as i16);
    b.put_slice(&name[..len]);
    b.put_slice(key.topic_id.as_bytes());
    b.put_i32(key.partition);
    b.freeze()
}

fn value_start() -> BytesMut {
    let mut b = BytesMut::new();
    b.put_i16(0);
    b
}

fn put_uvarint(b: &mut BytesMut, mut v: u64) {
    while v >= 0x80 {
        b.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    b.put_u8(v as u8);
}

fn put_batches(b: &mut BytesMut, batches: &[StateBatch]) {
    put_uvarint(b, batches.len() as u64 + 1);
    for s in batches {
        b.put_i64(s.first);
        b.put_i64(s.last);
        b.put_i8(s.state);
        b.put_i16(s.delivery_count);
        put_uvarint(b, 0);
    }
}

/// The value's tagged fields: DeliveryCompleteCount (tag 0) unless -1.
fn put_complete_count(b: &mut BytesMut, count: i32) {
    if count == -1 {
        put_uvarint(b, 0);
    } else {
        put_uvarint(b, 1);
        put_uvarint(b, 0);
        put_uvarint(b, 4);
        b.put_i32(count);
    }
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], ShareRecordError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.b.len())
            .ok_or(ShareRecordError::Malformed("truncated"))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn i8(&mut self) -> Result<i8, ShareRecordError> {
        Ok(self.take(1)?[0] as i8)
    }

    fn i16(&mut self) -> Result<i16, ShareRecordError> {
        let s = self.take(2)?;
        Ok(i16::from_be_bytes([s[0], s[1]]))
    }

    fn i32(&mut self) -> Result<i32, ShareRecordError> {
        let s = self.take(4)?;
        Ok(i32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }

    fn i64(&mut self) -> Result<i64, ShareRecordError> {
        let s = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(i64::from_be_bytes(a))
    }

    fn uvarint(&mut self) -> Result<u64, ShareRecordError> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let byte = self.take(1)?[0];
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(ShareRecordError::Malformed("varint"))
    }

    /// Skips a tagged-field section, giving tag 0's i32 if present.
    fn tags(&mut self) -> Result<Option<i32>, ShareRecordError> {
        let n = self.uvarint()?;
        let mut found = None;
        for _ in 0..n {
            let tag = self.uvarint()?;
            let size = usize::try_from(self.uvarint()?)
                .map_err(|_| ShareRecordError::Malformed("tag size"))?;
            let data = self.take(size)?;
            if tag == 0 && size == 4 {
                found = Some(i32::from_be_bytes([data[0], data[1], data[2], data[3]]));
            }
        }
        Ok(found)
    }

    fn batches(&mut self) -> Result<Vec<StateBatch>, ShareRecordError> {
        let n = self.uvarint()?;
        let n = usize::try_from(n.saturating_sub(1))
            .ok()
            .filter(|n| *n <= self.b.len())
            .ok_or(ShareRecordError::Malformed("state batch count"))?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let first = self.i64()?;
            let last = self.i64()?;
            let state = self.i8()?;
            let delivery_count = self.i16()?;
            self.tags()?;
            out.push(StateBatch {
                first,
                last,
                state,
                delivery_count,
            });
        }
        Ok(out)
    }

    fn complete_count(&mut self) -> Result<i32, ShareRecordError> {
        Ok(self.tags()?.unwrap_or(-1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn key() -> ShareStateKey {
        ShareStateKey {
            group_id: "g1".to_string(),
            topic_id: Uuid::from_u128(0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10),
            partition: 3,
        }
    }

    fn batch(first: i64, last: i64, state: i8, delivery_count: i16) -> StateBatch {
        StateBatch {
            first,
            last,
            state,
            delivery_count,
        }
    }

    /// The bytes Kafka 4.4's generated ShareSnapshot/ShareUpdate classes
    /// write for the same fields (MessageUtil.toVersionPrefixedByteBuffer).
    #[test]
    fn records_are_byte_identical_to_kafkas() {
        let snapshot = ShareSnapshot {
            snapshot_epoch: 2,
            state_epoch: 5,
            leader_epoch: 7,
            start_offset: 100,
            delivery_complete_count: -1,
            create_timestamp: 1000,
            write_timestamp: 2000,
            batches: vec![batch(100, 104, 2, 1), batch(105, 105, 0, 3)],
        };
        let r = ShareStateRecord::Snapshot {
            key: key(),
            value: Some(snapshot.clone()),
        };
        let (k, v) = r.encode();
        assert_eq!(
            hex(&k),
            "0000000267310102030405060708090a0b0c0d0e0f1000000003"
        );
        let v = v.expect("value");
        assert_eq!(
            hex(&v),
            "0000000000020000000500000007000000000000006400000000000003e800000000000007d0030000000000000064000000000000006802000100000000000000006900000000000000690000030000"
        );
        assert_eq!(ShareStateRecord::decode(&k, Some(&v)), Ok(r));
        let with_count = ShareStateRecord::Snapshot {
            key: key(),
            value: Some(ShareSnapshot {
                delivery_complete_count: 5,
                ..snapshot
            }),
        };
        let (k, v) = with_count.encode();
        let v = v.expect("value");
        assert_eq!(
            hex(&v),
            "0000000000020000000500000007000000000000006400000000000003e800000000000007d0030000000000000064000000000000006802000100000000000000006900000000000000690000030001000400000005"
        );
        assert_eq!(ShareStateRecord::decode(&k, Some(&v)), Ok(with_count));

        let update = ShareStateRecord::Update {
            key: key(),
            value: Some(ShareUpdate {
                snapshot_epoch: 2,
                leader_epoch: 7,
                start_offset: -1,
                delivery_complete_count: -1,
                batches: vec![batch(106, 109, 4, 5)],
            }),
        };
        let (k, v) = update.encode();
        assert_eq!(
            hex(&k),
            "0001000267310102030405060708090a0b0c0d0e0f1000000003"
        );
        let v = v.expect("value");
        assert_eq!(
            hex(&v),
            "00000000000200000007ffffffffffffffff02000000000000006a000000000000006d0400050000"
        );
        assert_eq!(ShareStateRecord::decode(&k, Some(&v)), Ok(update));
    }

    #[test]
    fn tombstones_and_malformed_records() {
        let (k, _) = ShareStateRecord::Update {
            key: key(),
            value: None,
        }
        .encode();
        assert_eq!(
            ShareStateRecord::decode(&k, None),
            Ok(ShareStateRecord::Update {
                key: key(),
                value: None
            })
        );
        let mut other = k.to_vec();
        other[1] = 9;
        assert_eq!(
            ShareStateRecord::decode(&other, None),
            Err(ShareRecordError::UnknownType(9))
        );
        let (k, v) = ShareStateRecord::Snapshot {
            key: key(),
            value: Some(ShareSnapshot {
                snapshot_epoch: 0,
                state_epoch: 0,
                leader_epoch: 0,
                start_offset: 0,
                delivery_complete_count: -1,
                create_timestamp: 0,
                write_timestamp: 0,
                batches: vec![batch(0, 1, 0, 1)],
            }),
        }
        .encode();
        let v = v.expect("value");
        for cut in 0..v.len() {
            assert!(
                ShareStateRecord::decode(&k, Some(&v[..cut])).is_err(),
                "cut at {cut}"
            );
        }
        for cut in 0..k.len() {
            assert!(
                ShareStateRecord::decode(&k[..cut], None).is_err(),
                "key cut at {cut}"
            );
        }
    }
}
