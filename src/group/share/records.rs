//! The share group records of `__consumer_offsets` (KIP-932), as Kafka 4.4
//! writes them: the key is the key version (= the record type, Kafka's
//! `apiKey`) and the key's strings (int16 length); the value is the value
//! version 0 and its fields in the flexible encoding. A tombstone (no
//! value) removes what the key names. Schemas: Kafka 4.4's
//! `ShareGroup*Key/Value.json` (group coordinator jar).
//!
//! | key version | record | key fields |
//! |---|---|---|
//! | 10 | ShareGroupMemberMetadata | group id, member id |
//! | 11 | ShareGroupMetadata | group id |
//! | 12 | ShareGroupTargetAssignmentMetadata | group id |
//! | 13 | ShareGroupTargetAssignmentMember | group id, member id |
//! | 14 | ShareGroupCurrentMemberAssignment | group id, member id |
//! | 15 | ShareGroupStatePartitionMetadata | group id |

use bytes::{BufMut, Bytes, BytesMut};
use uuid::Uuid;

use super::assignor::Assignment;
use crate::group::consumer::records::{
    key, put_compact_len, put_compact_nullable_str, put_compact_str, put_i32_array, put_no_tags,
    value_start, Reader, RecordError, Tags,
};

/// Record 10's value: a member's client data and subscription.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareMemberMetadata {
    /// Rack id.
    pub rack_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host (`/ip`).
    pub client_host: String,
    /// Subscribed topic names.
    pub subscribed_topic_names: Vec<String>,
}

/// One topic of record 15: id, name and partitions.
pub type TopicPartitionsInfo = (Uuid, String, Vec<i32>);

/// Record 15's value: which share-partitions have their
/// `__share_group_state` initialized (written by the share coordinator's
/// side of the group coordinator; read, kept and removed here).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StatePartitionMetadata {
    /// Partitions whose state is being initialized.
    pub initializing: Vec<TopicPartitionsInfo>,
    /// Partitions whose state is initialized.
    pub initialized: Vec<TopicPartitionsInfo>,
    /// Topics whose state is being deleted: (id, name).
    pub deleting: Vec<(Uuid, String)>,
}

/// One share group record: the key's fields and the value (None: a
/// tombstone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareGroupRecord {
    /// 10: a member's subscription and client data.
    MemberMetadata {
        /// Group id.
        group_id: String,
        /// Member id.
        member_id: String,
        /// None removes the member.
        value: Option<ShareMemberMetadata>,
    },
    /// 11: the group epoch (the metadata hash is written 0 and not read).
    GroupMetadata {
        /// Group id.
        group_id: String,
        /// None removes the group.
        epoch: Option<i32>,
    },
    /// 12: the target assignment's epoch.
    TargetAssignmentMetadata {
        /// Group id.
        group_id: String,
        /// None removes it.
        epoch: Option<i32>,
    },
    /// 13: a member's target.
    TargetAssignmentMember {
        /// Group id.
        group_id: String,
        /// Member id.
        member_id: String,
        /// None removes it.
        target: Option<Assignment>,
    },
    /// 14: a member's epoch, previous epoch and partitions (state 0,
    /// STABLE: a share member has nothing to revoke).
    CurrentMemberAssignment {
        /// Group id.
        group_id: String,
        /// Member id.
        member_id: String,
        /// (epoch, previous epoch, partitions); None removes it.
        current: Option<(i32, i32, Assignment)>,
    },
    /// 15: the share-partitions' state initialization.
    StatePartitionMetadata {
        /// Group id.
        group_id: String,
        /// None removes it.
        value: Option<StatePartitionMetadata>,
    },
}

impl ShareGroupRecord {
    /// The group the record belongs to.
    pub fn group_id(&self) -> &str {
        match self {
            ShareGroupRecord::MemberMetadata { group_id, .. }
            | ShareGroupRecord::GroupMetadata { group_id, .. }
            | ShareGroupRecord::TargetAssignmentMetadata { group_id, .. }
            | ShareGroupRecord::TargetAssignmentMember { group_id, .. }
            | ShareGroupRecord::CurrentMemberAssignment { group_id, .. }
            | ShareGroupRecord::StatePartitionMetadata { group_id, .. } => group_id,
        }
    }

    /// The record as Kafka 4.4 writes it: (key, value or None for a
    /// tombstone).
    pub fn encode(&self) -> (Bytes, Option<Bytes>) {
        match self {
            ShareGroupRecord::MemberMetadata {
                group_id,
                member_id,
                value,
            } => (
                key(10, &[group_id, member_id]),
                value.as_ref().map(|m| {
                    let mut b = value_start();
                    put_compact_nullable_str(&mut b, m.rack_id.as_deref());
                    put_compact_str(&mut b, &m.client_id);
                    put_compact_str(&mut b, &m.client_host);
                    put_compact_len(&mut b, m.subscribed_topic_names.len());
                    for t in &m.subscribed_topic_names {
                        put_compact_str(&mut b, t);
                    }
                    put_no_tags(&mut b);
                    b.freeze()
                }),
            ),
            ShareGroupRecord::GroupMetadata { group_id, epoch } => (
                key(11, &[group_id]),
                epoch.map(|e| {
                    let mut b = value_start();
                    b.put_i32(e);
                    b.put_i64(0);
                    put_no_tags(&mut b);
                    b.freeze()
                }),
            ),
            ShareGroupRecord::TargetAssignmentMetadata { group_id, epoch } => (
                key(12, &[group_id]),
                epoch.map(|e| {
                    let mut b = value_start();
                    b.put_i32(e);
                    // AssignmentTimestamp (tag 0) is left out at its
                    // default, 0.
                    Tags::default().write(&mut b);
                    b.freeze()
                }),
            ),
            ShareGroupRecord::TargetAssignmentMember {
                group_id,
                member_id,
                target,
            } => (
                key(13, &[group_id, member_id]),
                target.as_ref().map(|a| {
                    let mut b = value_start();
                    put_assignment(&mut b, a);
                    put_no_tags(&mut b);
                    b.freeze()
                }),
            ),
            ShareGroupRecord::CurrentMemberAssignment {
                group_id,
                member_id,
                current,
            } => (
                key(14, &[group_id, member_id]),
                current.as_ref().map(|(epoch, previous, a)| {
                    let mut b = value_start();
                    b.put_i32(*epoch);
                    b.put_i32(*previous);
                    b.put_i8(0);
                    put_assignment(&mut b, a);
                    put_no_tags(&mut b);
                    b.freeze()
                }),
            ),
            ShareGroupRecord::StatePartitionMetadata { group_id, value } => (
                key(15, &[group_id]),
                value.as_ref().map(|v| {
                    let mut b = value_start();
                    put_infos(&mut b, &v.initializing);
                    put_infos(&mut b, &v.initialized);
                    put_compact_len(&mut b, v.deleting.len());
                    for (id, name) in &v.deleting {
                        b.put_slice(id.as_bytes());
                        put_compact_str(&mut b, name);
                        put_no_tags(&mut b);
                    }
                    put_no_tags(&mut b);
                    b.freeze()
                }),
            ),
        }
    }

    /// Reads a record of key version 10–15 (`key` starts with the key
    /// version). Tagged fields are skipped (record 12's timestamp is not
    /// kept); bytes after the last field are ignored, as Kafka does.
    pub fn decode(key: &[u8], value: Option<&[u8]>) -> Result<ShareGroupRecord, RecordError> {
        let mut k = Reader::new(key);
        let key_version = k.i16("key version")?;
        if !matches!(key_version, 10..=15) {
            return Err(RecordError::NotConsumerGroup(key_version));
        }
        let group_id = k.key_str("group id")?;
        let member_id = match key_version {
            10 | 13 | 14 => k.key_str("member id")?,
            _ => String::new(),
        };
        let mut v = match value {
            None => None,
            Some(bytes) => {
                let mut v = Reader::new(bytes);
                let value_version = v.i16("value version")?;
                if value_version != 0 {
                    return Err(RecordError::UnknownValueVersion(value_version, key_version));
                }
                Some(v)
            }
        };
        Ok(match key_version {
            10 => ShareGroupRecord::MemberMetadata {
                group_id,
                member_id,
                value: v
                    .as_mut()
                    .map(|r| {
                        let rack_id = r.compact_nullable_str("rack id")?;
                        let client_id = r.compact_str("client id")?;
                        let client_host = r.compact_str("client host")?;
                        let n = r.array_len("subscribed topic names", 1)?;
                        let mut subscribed_topic_names = Vec::with_capacity(n);
                        for _ in 0..n {
                            subscribed_topic_names.push(r.compact_str("subscribed topic name")?);
                        }
                        r.skip_tags()?;
                        Ok(ShareMemberMetadata {
                            rack_id,
                            client_id,
                            client_host,
                            subscribed_topic_names,
                        })
                    })
                    .transpose()?,
            },
            11 => ShareGroupRecord::GroupMetadata {
                group_id,
                epoch: v
                    .as_mut()
                    .map(|r| {
                        let epoch = r.i32("epoch")?;
                        r.i64("metadata hash")?;
                        r.skip_tags()?;
                        Ok(epoch)
                    })
                    .transpose()?,
            },
            12 => ShareGroupRecord::TargetAssignmentMetadata {
                group_id,
                epoch: v
                    .as_mut()
                    .map(|r| {
                        let epoch = r.i32("assignment epoch")?;
                        r.skip_tags()?;
                        Ok(epoch)
                    })
                    .transpose()?,
            },
            13 => ShareGroupRecord::TargetAssignmentMember {
                group_id,
                member_id,
                target: v
                    .as_mut()
                    .map(|r| {
                        let a = read_assignment(r)?;
                        r.skip_tags()?;
                        Ok(a)
                    })
                    .transpose()?,
            },
            14 => ShareGroupRecord::CurrentMemberAssignment {
                group_id,
                member_id,
                current: v
                    .as_mut()
                    .map(|r| {
                        let epoch = r.i32("member epoch")?;
                        let previous = r.i32("previous member epoch")?;
                        r.i8("state")?;
                        let a = read_assignment(r)?;
                        r.skip_tags()?;
                        Ok((epoch, previous, a))
                    })
                    .transpose()?,
            },
            _ => ShareGroupRecord::StatePartitionMetadata {
                group_id,
                value: v
                    .as_mut()
                    .map(|r| {
                        let initializing = read_infos(r)?;
                        let initialized = read_infos(r)?;
                        // uuid, name length, tag count
                        let n = r.array_len("deleting topics", 18)?;
                        let mut deleting = Vec::with_capacity(n);
                        for _ in 0..n {
                            let id = r.uuid("topic id")?;
                            let name = r.compact_str("topic name")?;
                            r.skip_tags()?;
                            deleting.push((id, name));
                        }
                        r.skip_tags()?;
                        Ok(StatePartitionMetadata {
                            initializing,
                            initialized,
                            deleting,
                        })
                    })
                    .transpose()?,
            },
        })
    }
}

/// An array of (topic id, partitions) structs, topics by id, partitions
/// ascending.
fn put_assignment(b: &mut BytesMut, a: &Assignment) {
    put_compact_len(b, a.len());
    for (id, parts) in a {
        b.put_slice(id.as_bytes());
        put_i32_array(b, &parts.iter().copied().collect::<Vec<_>>());
        put_no_tags(b);
    }
}

fn read_assignment(r: &mut Reader<'_>) -> Result<Assignment, RecordError> {
    // uuid, partitions count, tag count
    let n = r.array_len("topic partitions", 18)?;
    let mut a = Assignment::new();
    for _ in 0..n {
        let id = r.uuid("topic id")?;
        let parts = r
            .i32_array("partitions")?
            .ok_or(RecordError::Malformed("partitions"))?;
        r.skip_tags()?;
        a.entry(id).or_default().extend(parts.iter().copied());
    }
    Ok(a)
}

fn put_infos(b: &mut BytesMut, infos: &[TopicPartitionsInfo]) {
    put_compact_len(b, infos.len());
    for (id, name, parts) in infos {
        b.put_slice(id.as_bytes());
        put_compact_str(b, name);
        put_i32_array(b, parts);
        put_no_tags(b);
    }
}

fn read_infos(r: &mut Reader<'_>) -> Result<Vec<TopicPartitionsInfo>, RecordError> {
    // uuid, name length, partitions count, tag count
    let n = r.array_len("topic partitions info", 19)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let id = r.uuid("topic id")?;
        let name = r.compact_str("topic name")?;
        let parts = r
            .i32_array("partitions")?
            .ok_or(RecordError::Malformed("partitions"))?;
        r.skip_tags()?;
        out.push((id, name, parts));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn t1() -> Uuid {
        Uuid::from_u128(0x0102030405060708090a0b0c0d0e0f10)
    }

    fn t2() -> Uuid {
        Uuid::from_u128(0x1112131415161718191a1b1c1d1e1f20)
    }

    /// Encodes `r`, checks key and value against Kafka 4.4's bytes (its
    /// generated `ShareGroup*Key/Value` classes, run on the peer's class
    /// path, wrote the same fields) and decodes them back to `r`.
    fn check(r: ShareGroupRecord, want_key: &str, want_value: Option<&str>) {
        let (k, v) = r.encode();
        assert_eq!(hex(&k), want_key, "{r:?} key");
        assert_eq!(
            v.as_deref().map(hex),
            want_value.map(str::to_string),
            "{r:?}"
        );
        assert_eq!(ShareGroupRecord::decode(&k, v.as_deref()), Ok(r));
    }

    fn a(parts: &[(Uuid, &[i32])]) -> Assignment {
        parts
            .iter()
            .map(|(id, p)| (*id, p.iter().copied().collect()))
            .collect()
    }

    #[test]
    fn records_are_written_as_kafka_writes_them() {
        let g = "g1".to_string();
        let m = "m1".to_string();
        check(
            ShareGroupRecord::MemberMetadata {
                group_id: g.clone(),
                member_id: m.clone(),
                value: Some(ShareMemberMetadata {
                    rack_id: None,
                    client_id: "cid".into(),
                    client_host: "/127.0.0.1".into(),
                    subscribed_topic_names: vec!["a".into(), "bb".into()],
                }),
            },
            "000a0002673100026d31",
            Some("000000046369640b2f3132372e302e302e3103026103626200"),
        );
        check(
            ShareGroupRecord::MemberMetadata {
                group_id: g.clone(),
                member_id: m.clone(),
                value: Some(ShareMemberMetadata {
                    rack_id: Some("r1".into()),
                    client_id: String::new(),
                    client_host: "h".into(),
                    subscribed_topic_names: vec![],
                }),
            },
            "000a0002673100026d31",
            Some("00000372310102680100"),
        );
        check(
            ShareGroupRecord::GroupMetadata {
                group_id: g.clone(),
                epoch: Some(7),
            },
            "000b00026731",
            Some("000000000007000000000000000000"),
        );
        check(
            ShareGroupRecord::TargetAssignmentMetadata {
                group_id: g.clone(),
                epoch: Some(5),
            },
            "000c00026731",
            Some("00000000000500"),
        );
        check(
            ShareGroupRecord::TargetAssignmentMember {
                group_id: g.clone(),
                member_id: m.clone(),
                target: Some(a(&[(t1(), &[0, 2]), (t2(), &[1])])),
            },
            "000d0002673100026d31",
            Some("0000030102030405060708090a0b0c0d0e0f10030000000000000002001112131415161718191a1b1c1d1e1f2002000000010000"),
        );
        check(
            ShareGroupRecord::CurrentMemberAssignment {
                group_id: g.clone(),
                member_id: m.clone(),
                current: Some((4, 3, a(&[(t1(), &[1])]))),
            },
            "000e0002673100026d31",
            Some("0000000000040000000300020102030405060708090a0b0c0d0e0f1002000000010000"),
        );
        check(
            ShareGroupRecord::StatePartitionMetadata {
                group_id: g.clone(),
                value: Some(StatePartitionMetadata {
                    initializing: vec![(t1(), "a".into(), vec![0])],
                    initialized: vec![(t2(), "bb".into(), vec![0, 1])],
                    deleting: vec![(t1(), "c".into())],
                }),
            },
            "000f00026731",
            Some("0000020102030405060708090a0b0c0d0e0f100261020000000000021112131415161718191a1b1c1d1e1f2003626203000000000000000100020102030405060708090a0b0c0d0e0f1002630000"),
        );
        check(
            ShareGroupRecord::GroupMetadata {
                group_id: g.clone(),
                epoch: None,
            },
            "000b00026731",
            None,
        );
    }

    #[test]
    fn kafka_values_with_tags_and_hash_are_read() {
        // Kafka 4.4: epoch 7 with a metadata hash; assignment epoch 5 with
        // its timestamp in tag 0.
        let v = bytes_of("000000000007010203040506070800");
        assert_eq!(
            ShareGroupRecord::decode(&bytes_of("000b00026731"), Some(&v)),
            Ok(ShareGroupRecord::GroupMetadata {
                group_id: "g1".into(),
                epoch: Some(7)
            })
        );
        let v = bytes_of("0000000000050100080000018bcfe56800");
        assert_eq!(
            ShareGroupRecord::decode(&bytes_of("000c00026731"), Some(&v)),
            Ok(ShareGroupRecord::TargetAssignmentMetadata {
                group_id: "g1".into(),
                epoch: Some(5)
            })
        );
        assert!(ShareGroupRecord::decode(&bytes_of("000b0002"), None).is_err());
        assert!(ShareGroupRecord::decode(&bytes_of("000300026731"), None).is_err());
    }

    fn bytes_of(h: &str) -> Vec<u8> {
        (0..h.len())
            .step_by(2)
            .filter_map(|i| u8::from_str_radix(&h[i..i + 2], 16).ok())
            .collect()
    }
}
