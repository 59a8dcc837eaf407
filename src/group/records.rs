//! Records of the internal topic `__consumer_offsets`, in Kafka's schemas so
//! that tools reading the topic understand them:
//!
//! * key version 0/1 `OffsetCommitKey { group, topic, partition }` with value
//!   `OffsetCommitValue` (we write v3: offset, leader epoch, metadata, commit
//!   timestamp; we read v0–v3);
//! * key version 2 `GroupMetadataKey { group }` with value
//!   `GroupMetadataValue` (we write v3, read v0–v3).
//!
//! A null value is a tombstone (offset deleted / group deleted). Strings are
//! int16-length UTF-8, bytes are int32-length, as in Kafka's non-flexible
//! encodings.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// A committed offset (the value of an offset-commit record).
#[derive(Debug, Clone, PartialEq)]
pub struct OffsetValue {
    /// Next offset to consume.
    pub offset: i64,
    /// Leader epoch of the committed record, -1 when unknown (KIP-320).
    pub leader_epoch: i32,
    /// Client metadata string.
    pub metadata: String,
    /// When the commit was made (ms since the epoch).
    pub commit_timestamp: i64,
}

/// A member as stored in a group-metadata record.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMember {
    /// Member id.
    pub member_id: String,
    /// Static membership id (KIP-345).
    pub group_instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Rebalance timeout (ms).
    pub rebalance_timeout_ms: i32,
    /// Session timeout (ms).
    pub session_timeout_ms: i32,
    /// Metadata for the selected protocol (the subscription).
    pub subscription: Bytes,
    /// The member's assignment from the last SyncGroup.
    pub assignment: Bytes,
}

/// The value of a group-metadata record.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupValue {
    /// Protocol type (`consumer`, `connect`, …).
    pub protocol_type: String,
    /// Generation.
    pub generation: i32,
    /// Selected protocol (assignor), if any.
    pub protocol: Option<String>,
    /// Leader member id, if any.
    pub leader: Option<String>,
    /// When the group last changed state (ms).
    pub current_state_timestamp: i64,
    /// Members.
    pub members: Vec<StoredMember>,
}

/// A decoded `__consumer_offsets` record.
#[derive(Debug, Clone, PartialEq)]
pub enum OffsetsRecord {
    /// An offset commit, or its tombstone (`None`).
    Offset {
        /// Group id.
        group: String,
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// The value; `None` for a tombstone.
        value: Option<OffsetValue>,
    },
    /// Group metadata, or its tombstone (`None`, the group was deleted).
    Group {
        /// Group id.
        group: String,
        /// The value; `None` for a tombstone.
        value: Option<GroupValue>,
    },
}

/// Why a record could not be decoded.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RecordError {
    /// Fewer bytes than the schema needs.
    #[error("truncated {0}")]
    Truncated(&'static str),
    /// A key or value version this broker does not know.
    #[error("unknown {what} version {version}")]
    UnknownVersion {
        /// "key" or "value".
        what: &'static str,
        /// The version read.
        version: i16,
    },
    /// A string that is not UTF-8.
    #[error("invalid UTF-8 in {0}")]
    Utf8(&'static str),
}

pub(crate) fn put_str(b: &mut BytesMut, s: &str) {
    b.put_i16(s.len() as i16);
    b.put_slice(s.as_bytes());
}

fn put_nullable_str(b: &mut BytesMut, s: Option<&str>) {
    match s {
        Some(s) => put_str(b, s),
        None => b.put_i16(-1),
    }
}

fn put_bytes(b: &mut BytesMut, v: &[u8]) {
    b.put_i32(v.len() as i32);
    b.put_slice(v);
}

pub(crate) fn need(buf: &Bytes, n: usize, what: &'static str) -> Result<(), RecordError> {
    if buf.remaining() < n {
        Err(RecordError::Truncated(what))
    } else {
        Ok(())
    }
}

pub(crate) fn get_i16(buf: &mut Bytes, what: &'static str) -> Result<i16, RecordError> {
    need(buf, 2, what)?;
    Ok(buf.get_i16())
}

pub(crate) fn get_i32(buf: &mut Bytes, what: &'static str) -> Result<i32, RecordError> {
    need(buf, 4, what)?;
    Ok(buf.get_i32())
}

pub(crate) fn get_i64(buf: &mut Bytes, what: &'static str) -> Result<i64, RecordError> {
    need(buf, 8, what)?;
    Ok(buf.get_i64())
}

pub(crate) fn get_nullable_str(
    buf: &mut Bytes,
    what: &'static str,
) -> Result<Option<String>, RecordError> {
    let len = get_i16(buf, what)?;
    if len < 0 {
        return Ok(None);
    }
    need(buf, len as usize, what)?;
    let raw = buf.split_to(len as usize);
    String::from_utf8(raw.to_vec())
        .map(Some)
        .map_err(|_| RecordError::Utf8(what))
}

pub(crate) fn get_str(buf: &mut Bytes, what: &'static str) -> Result<String, RecordError> {
    Ok(get_nullable_str(buf, what)?.unwrap_or_default())
}

fn get_bytes(buf: &mut Bytes, what: &'static str) -> Result<Bytes, RecordError> {
    let len = get_i32(buf, what)?;
    if len < 0 {
        return Ok(Bytes::new());
    }
    need(buf, len as usize, what)?;
    Ok(buf.split_to(len as usize))
}

/// Key of an offset-commit record (key version 1).
pub fn offset_key(group: &str, topic: &str, partition: i32) -> Bytes {
    let mut b = BytesMut::with_capacity(8 + group.len() + topic.len());
    b.put_i16(1);
    put_str(&mut b, group);
    put_str(&mut b, topic);
    b.put_i32(partition);
    b.freeze()
}

/// Value of an offset-commit record (value version 3).
pub fn offset_value(v: &OffsetValue) -> Bytes {
    let mut b = BytesMut::with_capacity(26 + v.metadata.len());
    b.put_i16(3);
    b.put_i64(v.offset);
    b.put_i32(v.leader_epoch);
    put_str(&mut b, &v.metadata);
    b.put_i64(v.commit_timestamp);
    b.freeze()
}

/// Key of a group-metadata record (key version 2).
pub fn group_key(group: &str) -> Bytes {
    let mut b = BytesMut::with_capacity(4 + group.len());
    b.put_i16(2);
    put_str(&mut b, group);
    b.freeze()
}

/// Value of a group-metadata record (value version 3).
pub fn group_value(g: &GroupValue) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(3);
    put_str(&mut b, &g.protocol_type);
    b.put_i32(g.generation);
    put_nullable_str(&mut b, g.protocol.as_deref());
    put_nullable_str(&mut b, g.leader.as_deref());
    b.put_i64(g.current_state_timestamp);
    b.put_i32(g.members.len() as i32);
    for m in &g.members {
        put_str(&mut b, &m.member_id);
        put_nullable_str(&mut b, m.group_instance_id.as_deref());
        put_str(&mut b, &m.client_id);
        put_str(&mut b, &m.client_host);
        b.put_i32(m.rebalance_timeout_ms);
        b.put_i32(m.session_timeout_ms);
        put_bytes(&mut b, &m.subscription);
        put_bytes(&mut b, &m.assignment);
    }
    b.freeze()
}

/// Decodes one record of `__consumer_offsets` from its key and value.
pub fn decode(key: &Bytes, value: Option<&Bytes>) -> Result<OffsetsRecord, RecordError> {
    let mut k = key.clone();
    let kv = get_i16(&mut k, "key version")?;
    match kv {
        0 | 1 => {
            let group = get_str(&mut k, "group")?;
            let topic = get_str(&mut k, "topic")?;
            let partition = get_i32(&mut k, "partition")?;
            let value = value.map(decode_offset_value).transpose()?;
            Ok(OffsetsRecord::Offset {
                group,
                topic,
                partition,
                value,
            })
        }
        2 => {
            let group = get_str(&mut k, "group")?;
            let value = value.map(decode_group_value).transpose()?;
            Ok(OffsetsRecord::Group { group, value })
        }
        v => Err(RecordError::UnknownVersion {
            what: "key",
            version: v,
        }),
    }
}

fn decode_offset_value(value: &Bytes) -> Result<OffsetValue, RecordError> {
    let mut v = value.clone();
    let version = get_i16(&mut v, "value version")?;
    if !(0..=3).contains(&version) {
        return Err(RecordError::UnknownVersion {
            what: "value",
            version,
        });
    }
    let offset = get_i64(&mut v, "offset")?;
    let leader_epoch = if version >= 3 {
        get_i32(&mut v, "leader epoch")?
    } else {
        -1
    };
    let metadata = get_str(&mut v, "metadata")?;
    let commit_timestamp = get_i64(&mut v, "commit timestamp")?;
    if version == 1 {
        let _expire = get_i64(&mut v, "expire timestamp")?;
    }
    Ok(OffsetValue {
        offset,
        leader_epoch,
        metadata,
        commit_timestamp,
    })
}

fn decode_group_value(value: &Bytes) -> Result<GroupValue, RecordError> {
    let mut v = value.clone();
    let version = get_i16(&mut v, "value version")?;
    if !(0..=3).contains(&version) {
        return Err(RecordError::UnknownVersion {
            what: "value",
            version,
        });
    }
    let protocol_type = get_str(&mut v, "protocol type")?;
    let generation = get_i32(&mut v, "generation")?;
    let protocol = get_nullable_str(&mut v, "protocol")?;
    let leader = get_nullable_str(&mut v, "leader")?;
    let current_state_timestamp = if version >= 2 {
        get_i64(&mut v, "state timestamp")?
    } else {
        -1
    };
    let n = get_i32(&mut v, "members")?;
    let mut members = Vec::new();
    for _ in 0..n.max(0) {
        // Each member needs at least 16 bytes; stop a bogus count early.
        need(&v, 16, "member")?;
        let member_id = get_str(&mut v, "member id")?;
        let group_instance_id = if version >= 3 {
            get_nullable_str(&mut v, "instance id")?
        } else {
            None
        };
        let client_id = get_str(&mut v, "client id")?;
        let client_host = get_str(&mut v, "client host")?;
        let rebalance_timeout_ms = if version >= 1 {
            get_i32(&mut v, "rebalance timeout")?
        } else {
            -1
        };
        let session_timeout_ms = get_i32(&mut v, "session timeout")?;
        let subscription = get_bytes(&mut v, "subscription")?;
        let assignment = get_bytes(&mut v, "assignment")?;
        members.push(StoredMember {
            member_id,
            group_instance_id,
            client_id,
            client_host,
            rebalance_timeout_ms,
            session_timeout_ms,
            subscription,
            assignment,
        });
    }
    Ok(GroupValue {
        protocol_type,
        generation,
        protocol,
        leader,
        current_state_timestamp,
        members,
    })
}

/// Kafka's partition of `__consumer_offsets` for a group:
/// `abs(groupId.hashCode()) % partitions`, with Java's `String.hashCode`
/// over UTF-16 code units and Kafka's `Utils.abs` (MIN_VALUE → 0).
pub fn partition_for_group(group: &str, partitions: i32) -> i32 {
    let mut h: i32 = 0;
    for unit in group.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(unit as i32);
    }
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_roundtrip() {
        let v = OffsetValue {
            offset: 42,
            leader_epoch: 3,
            metadata: "m".into(),
            commit_timestamp: 9,
        };
        let key = offset_key("g", "t", 7);
        let val = offset_value(&v);
        assert_eq!(
            decode(&key, Some(&val)).unwrap(),
            OffsetsRecord::Offset {
                group: "g".into(),
                topic: "t".into(),
                partition: 7,
                value: Some(v)
            }
        );
        assert_eq!(
            decode(&key, None).unwrap(),
            OffsetsRecord::Offset {
                group: "g".into(),
                topic: "t".into(),
                partition: 7,
                value: None
            }
        );
        // value v1 (with expire timestamp), as older brokers wrote it
        let mut b = BytesMut::new();
        b.put_i16(1);
        b.put_i64(5);
        put_str(&mut b, "x");
        b.put_i64(1);
        b.put_i64(2);
        let OffsetsRecord::Offset {
            value: Some(v1), ..
        } = decode(&key, Some(&b.freeze())).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (v1.offset, v1.leader_epoch, v1.metadata.as_str()),
            (5, -1, "x")
        );
    }

    #[test]
    fn group_roundtrip_and_truncation() {
        let g = GroupValue {
            protocol_type: "consumer".into(),
            generation: 4,
            protocol: Some("range".into()),
            leader: Some("m1".into()),
            current_state_timestamp: 77,
            members: vec![StoredMember {
                member_id: "m1".into(),
                group_instance_id: Some("i1".into()),
                client_id: "c".into(),
                client_host: "/127.0.0.1".into(),
                rebalance_timeout_ms: 300_000,
                session_timeout_ms: 45_000,
                subscription: Bytes::from_static(b"sub"),
                assignment: Bytes::from_static(b"asg"),
            }],
        };
        let val = group_value(&g);
        assert_eq!(
            decode(&group_key("grp"), Some(&val)).unwrap(),
            OffsetsRecord::Group {
                group: "grp".into(),
                value: Some(g)
            }
        );
        let cut = val.slice(0..val.len() - 2);
        assert!(decode(&group_key("grp"), Some(&cut)).is_err());
        assert!(decode(&Bytes::from_static(&[0, 9]), None).is_err());
    }

    #[test]
    fn partition_matches_java_hashcode() {
        // "group".hashCode() == 98629247 in Java; 98629247 % 50 == 47.
        assert_eq!(partition_for_group("group", 50), 47);
        // "".hashCode() == 0
        assert_eq!(partition_for_group("", 50), 0);
        // Negative hash: "polygenelubricants".hashCode() == Integer.MIN_VALUE → 0.
        assert_eq!(partition_for_group("polygenelubricants", 50), 0);
    }
}
