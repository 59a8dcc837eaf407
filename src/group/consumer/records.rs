//! The consumer group records of `__consumer_offsets` (KIP-848), as Kafka
//! 4.4 writes them: the key is a 2-byte key version (= the record type,
//! Kafka's `apiKey`) and the key's fields in the non-flexible encoding;
//! the value is a 2-byte value version (0) and its fields in the flexible
//! encoding (compact strings and arrays, tagged fields). A tombstone (no
//! value) removes what the key names. Schemas: Kafka 4.4's
//! `ConsumerGroup*Key/Value.json` (group coordinator).
//!
//! | key version | record | key fields |
//! |---|---|---|
//! | 3 | ConsumerGroupMetadata | group id |
//! | 4 | ConsumerGroupPartitionMetadata (superseded by the metadata hash; read and ignored) | group id |
//! | 5 | ConsumerGroupMemberMetadata | group id, member id |
//! | 6 | ConsumerGroupTargetAssignmentMetadata | group id |
//! | 7 | ConsumerGroupTargetAssignmentMember | group id, member id |
//! | 8 | ConsumerGroupCurrentMemberAssignment | group id, member id |
//! | 16 | ConsumerGroupRegularExpression | group id, regex |

use bytes::{BufMut, Bytes, BytesMut};
use uuid::Uuid;

/// Partitions of one topic, with (record 8, KIP-1251) the epoch at which
/// each was assigned (same length as `partitions`, or None).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopicPartitions {
    /// Topic id.
    pub topic_id: Uuid,
    /// Partition indexes.
    pub partitions: Vec<i32>,
    /// Tagged field 0 of record 8's TopicPartitions: the epoch each
    /// partition was assigned at.
    pub assignment_epochs: Option<Vec<i32>>,
}

/// Record 5's value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberMetadata {
    /// Static instance id.
    pub instance_id: Option<String>,
    /// Rack id.
    pub rack_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Subscribed topic names.
    pub subscribed_topic_names: Vec<String>,
    /// Subscribed regex.
    pub subscribed_topic_regex: Option<String>,
    /// Rebalance timeout (ms), default -1.
    pub rebalance_timeout_ms: i32,
    /// Server assignor.
    pub server_assignor: Option<String>,
    /// Tagged 0: a classic member's session timeout and protocols (None for
    /// a consumer-protocol member). Kept as read, written back unchanged.
    pub classic_member_metadata: Option<ClassicMemberMetadata>,
}

/// Record 5's tagged `ClassicMemberMetadata`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClassicMemberMetadata {
    /// Session timeout (ms).
    pub session_timeout_ms: i32,
    /// (protocol name, metadata).
    pub supported_protocols: Vec<(String, Bytes)>,
}

/// Record 8's value: where a member stands in its reconciliation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CurrentMemberAssignment {
    /// The epoch the member is expected to heartbeat with.
    pub member_epoch: i32,
    /// The epoch before the last bump (a member whose answer was lost
    /// retries with it).
    pub previous_member_epoch: i32,
    /// Kafka's MemberState: 0 STABLE, 1 UNREVOKED_PARTITIONS,
    /// 2 UNRELEASED_PARTITIONS, 127 UNKNOWN.
    pub state: i8,
    /// Assigned (or owned) partitions.
    pub assigned: Vec<TopicPartitions>,
    /// Partitions the member must revoke.
    pub pending_revocation: Vec<TopicPartitions>,
}

/// One consumer group record: the key's fields and the value (None: a
/// tombstone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerRecord {
    /// 3: the group epoch and the hash of its subscribed topics' metadata.
    GroupMetadata {
        /// Group id.
        group_id: String,
        /// (epoch, metadata hash); None removes the group.
        value: Option<(i32, i64)>,
    },
    /// 4: superseded; read and ignored, never written.
    PartitionMetadata {
        /// Group id.
        group_id: String,
    },
    /// 5: a member's subscription and client data.
    MemberMetadata {
        /// Group id.
        group_id: String,
        /// Member id.
        member_id: String,
        /// None removes the member.
        value: Option<MemberMetadata>,
    },
    /// 6: the target assignment's epoch (and when it was computed, ms).
    TargetAssignmentMetadata {
        /// Group id.
        group_id: String,
        /// (assignment epoch, assignment timestamp ms); None removes it.
        value: Option<(i32, i64)>,
    },
    /// 7: one member's target assignment.
    TargetAssignmentMember {
        /// Group id.
        group_id: String,
        /// Member id.
        member_id: String,
        /// None removes it.
        value: Option<Vec<TopicPartitions>>,
    },
    /// 8: one member's current assignment and reconciliation state.
    CurrentMemberAssignment {
        /// Group id.
        group_id: String,
        /// Member id.
        member_id: String,
        /// None removes it.
        value: Option<CurrentMemberAssignment>,
    },
    /// 16: a regex's resolved topics.
    RegularExpression {
        /// Group id.
        group_id: String,
        /// The regex.
        regex: String,
        /// (topics, version, timestamp ms); None removes it.
        value: Option<(Vec<String>, i64, i64)>,
    },
}

/// Why a record could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// Too short or a length out of range.
    #[error("truncated or malformed consumer group record: {0}")]
    Malformed(&'static str),
    /// A key version outside 3–8 and 16.
    #[error("key version {0} is not a consumer group record")]
    NotConsumerGroup(i16),
    /// A value version this broker does not know.
    #[error("value version {0} of key version {1} is not known")]
    UnknownValueVersion(i16, i16),
}

impl ConsumerRecord {
    /// The group the record belongs to.
    pub fn group_id(&self) -> &str {
        match self {
            ConsumerRecord::GroupMetadata { group_id, .. }
            | ConsumerRecord::PartitionMetadata { group_id }
            | ConsumerRecord::MemberMetadata { group_id, .. }
            | ConsumerRecord::TargetAssignmentMetadata { group_id, .. }
            | ConsumerRecord::TargetAssignmentMember { group_id, .. }
            | ConsumerRecord::CurrentMemberAssignment { group_id, .. }
            | ConsumerRecord::RegularExpression { group_id, .. } => group_id,
        }
    }

    /// The record as Kafka 4.4 writes it: (key, value or None for a
    /// tombstone).
    ///
    /// Record 4 is only ever written as a tombstone (Kafka removes the
    /// superseded record that way). Record 7's `assignment_epochs` are not
    /// part of its schema and are not written. Key strings longer than
    /// 32767 bytes (not valid ids in Kafka either) are cut at that length.
    pub fn encode(&self) -> (Bytes, Option<Bytes>) {
        match self {
            ConsumerRecord::GroupMetadata { group_id, value } => (
                key(3, &[group_id]),
                value.map(|(epoch, hash)| {
                    let mut b = value_start();
                    b.put_i32(epoch);
                    let mut tags = Tags::default();
                    if hash != 0 {
                        tags.push(0, &hash.to_be_bytes());
                    }
                    tags.write(&mut b);
                    b.freeze()
                }),
            ),
            ConsumerRecord::PartitionMetadata { group_id } => (key(4, &[group_id]), None),
            ConsumerRecord::MemberMetadata {
                group_id,
                member_id,
                value,
            } => (
                key(5, &[group_id, member_id]),
                value.as_ref().map(encode_member_metadata),
            ),
            ConsumerRecord::TargetAssignmentMetadata { group_id, value } => (
                key(6, &[group_id]),
                value.map(|(epoch, timestamp)| {
                    let mut b = value_start();
                    b.put_i32(epoch);
                    let mut tags = Tags::default();
                    if timestamp != 0 {
                        tags.push(0, &timestamp.to_be_bytes());
                    }
                    tags.write(&mut b);
                    b.freeze()
                }),
            ),
            ConsumerRecord::TargetAssignmentMember {
                group_id,
                member_id,
                value,
            } => (
                key(7, &[group_id, member_id]),
                value.as_ref().map(|topics| {
                    let mut b = value_start();
                    put_topic_partitions(&mut b, topics, false);
                    put_no_tags(&mut b);
                    b.freeze()
                }),
            ),
            ConsumerRecord::CurrentMemberAssignment {
                group_id,
                member_id,
                value,
            } => (
                key(8, &[group_id, member_id]),
                value.as_ref().map(|a| {
                    let mut b = value_start();
                    b.put_i32(a.member_epoch);
                    b.put_i32(a.previous_member_epoch);
                    b.put_i8(a.state);
                    put_topic_partitions(&mut b, &a.assigned, true);
                    put_topic_partitions(&mut b, &a.pending_revocation, true);
                    put_no_tags(&mut b);
                    b.freeze()
                }),
            ),
            ConsumerRecord::RegularExpression {
                group_id,
                regex,
                value,
            } => (
                key(16, &[group_id, regex]),
                value.as_ref().map(|(topics, version, timestamp)| {
                    let mut b = value_start();
                    put_compact_len(&mut b, topics.len());
                    for t in topics {
                        put_compact_str(&mut b, t);
                    }
                    b.put_i64(*version);
                    b.put_i64(*timestamp);
                    put_no_tags(&mut b);
                    b.freeze()
                }),
            ),
        }
    }

    /// Reads a record of key version 3–8 or 16 (`key` starts with the key
    /// version). Errors name what is wrong.
    ///
    /// Tagged fields this broker does not know are skipped; bytes after the
    /// key's or the value's last field are ignored, as Kafka does. Record
    /// 4's value is not read.
    pub fn decode(key: &[u8], value: Option<&[u8]>) -> Result<ConsumerRecord, RecordError> {
        let mut k = Reader::new(key);
        let key_version = k.i16("key version")?;
        if !matches!(key_version, 3..=8 | 16) {
            return Err(RecordError::NotConsumerGroup(key_version));
        }
        let group_id = k.key_str("group id")?;
        if key_version == 4 {
            return Ok(ConsumerRecord::PartitionMetadata { group_id });
        }
        let second = match key_version {
            5 | 7 | 8 => Some(k.key_str("member id")?),
            16 => Some(k.key_str("regular expression")?),
            _ => None,
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
        let member_id = second.unwrap_or_default();
        Ok(match key_version {
            3 => ConsumerRecord::GroupMetadata {
                group_id,
                value: v.as_mut().map(decode_epoch_and_tag).transpose()?,
            },
            5 => ConsumerRecord::MemberMetadata {
                group_id,
                member_id,
                value: v.as_mut().map(decode_member_metadata).transpose()?,
            },
            6 => ConsumerRecord::TargetAssignmentMetadata {
                group_id,
                value: v.as_mut().map(decode_epoch_and_tag).transpose()?,
            },
            7 => ConsumerRecord::TargetAssignmentMember {
                group_id,
                member_id,
                value: v
                    .as_mut()
                    .map(|r| {
                        let topics = r.topic_partitions(false)?;
                        r.skip_tags()?;
                        Ok(topics)
                    })
                    .transpose()?,
            },
            8 => ConsumerRecord::CurrentMemberAssignment {
                group_id,
                member_id,
                value: v
                    .as_mut()
                    .map(|r| {
                        let member_epoch = r.i32("member epoch")?;
                        let previous_member_epoch = r.i32("previous member epoch")?;
                        let state = r.i8("state")?;
                        let assigned = r.topic_partitions(true)?;
                        let pending_revocation = r.topic_partitions(true)?;
                        r.skip_tags()?;
                        Ok(CurrentMemberAssignment {
                            member_epoch,
                            previous_member_epoch,
                            state,
                            assigned,
                            pending_revocation,
                        })
                    })
                    .transpose()?,
            },
            _ => ConsumerRecord::RegularExpression {
                group_id,
                regex: member_id,
                value: v
                    .as_mut()
                    .map(|r| {
                        let n = r.array_len("topics", 1)?;
                        let mut topics = Vec::with_capacity(n);
                        for _ in 0..n {
                            topics.push(r.compact_str("topic")?);
                        }
                        let version = r.i64("version")?;
                        let timestamp = r.i64("timestamp")?;
                        r.skip_tags()?;
                        Ok((topics, version, timestamp))
                    })
                    .transpose()?,
            },
        })
    }
}

/// Records 3 and 6: an int32 epoch and an int64 in tag 0 (default 0).
fn decode_epoch_and_tag(r: &mut Reader<'_>) -> Result<(i32, i64), RecordError> {
    let epoch = r.i32("epoch")?;
    let mut tagged = 0;
    r.tags(|tag, field| {
        if tag != 0 {
            return Ok(false);
        }
        tagged = field.i64("tagged int64")?;
        Ok(true)
    })?;
    Ok((epoch, tagged))
}

fn encode_member_metadata(m: &MemberMetadata) -> Bytes {
    let mut b = value_start();
    put_compact_nullable_str(&mut b, m.instance_id.as_deref());
    put_compact_nullable_str(&mut b, m.rack_id.as_deref());
    put_compact_str(&mut b, &m.client_id);
    put_compact_str(&mut b, &m.client_host);
    put_compact_len(&mut b, m.subscribed_topic_names.len());
    for t in &m.subscribed_topic_names {
        put_compact_str(&mut b, t);
    }
    put_compact_nullable_str(&mut b, m.subscribed_topic_regex.as_deref());
    b.put_i32(m.rebalance_timeout_ms);
    put_compact_nullable_str(&mut b, m.server_assignor.as_deref());
    // Kafka 4.4 always writes tag 0: a null struct as the presence varint 0,
    // a present one as 1 and the struct (it leaves the tag out only for a
    // struct equal to the empty one, which it then reads back as that empty
    // struct; here an absent tag reads as None, so the empty struct is
    // written like any other to keep it).
    let mut field = BytesMut::new();
    match &m.classic_member_metadata {
        None => put_uvarint(&mut field, 0),
        Some(c) => {
            put_uvarint(&mut field, 1);
            field.put_i32(c.session_timeout_ms);
            put_compact_len(&mut field, c.supported_protocols.len());
            for (name, metadata) in &c.supported_protocols {
                put_compact_str(&mut field, name);
                put_compact_len(&mut field, metadata.len());
                field.put_slice(metadata);
                put_no_tags(&mut field);
            }
            put_no_tags(&mut field);
        }
    }
    let mut tags = Tags::default();
    tags.push(0, &field);
    tags.write(&mut b);
    b.freeze()
}

fn decode_member_metadata(r: &mut Reader<'_>) -> Result<MemberMetadata, RecordError> {
    let instance_id = r.compact_nullable_str("instance id")?;
    let rack_id = r.compact_nullable_str("rack id")?;
    let client_id = r.compact_str("client id")?;
    let client_host = r.compact_str("client host")?;
    let n = r.array_len("subscribed topic names", 1)?;
    let mut subscribed_topic_names = Vec::with_capacity(n);
    for _ in 0..n {
        subscribed_topic_names.push(r.compact_str("subscribed topic name")?);
    }
    let subscribed_topic_regex = r.compact_nullable_str("subscribed topic regex")?;
    let rebalance_timeout_ms = r.i32("rebalance timeout")?;
    let server_assignor = r.compact_nullable_str("server assignor")?;
    let mut classic_member_metadata = None;
    r.tags(|tag, field| {
        if tag != 0 {
            return Ok(false);
        }
        classic_member_metadata = decode_classic(field)?;
        Ok(true)
    })?;
    Ok(MemberMetadata {
        instance_id,
        rack_id,
        client_id,
        client_host,
        subscribed_topic_names,
        subscribed_topic_regex,
        rebalance_timeout_ms,
        server_assignor,
        classic_member_metadata,
    })
}

/// Record 5's tag 0: a presence varint (0: null), then the struct.
fn decode_classic(r: &mut Reader<'_>) -> Result<Option<ClassicMemberMetadata>, RecordError> {
    if r.uvarint("classic member metadata presence")? == 0 {
        return Ok(None);
    }
    let session_timeout_ms = r.i32("session timeout")?;
    // A protocol is at least a name length, a metadata length and a tag count.
    let n = r.array_len("supported protocols", 3)?;
    let mut supported_protocols = Vec::with_capacity(n);
    for _ in 0..n {
        let name = r.compact_str("protocol name")?;
        let metadata = r.compact_bytes("protocol metadata")?;
        r.skip_tags()?;
        supported_protocols.push((name, metadata));
    }
    r.skip_tags()?;
    Ok(Some(ClassicMemberMetadata {
        session_timeout_ms,
        supported_protocols,
    }))
}

/// An array of TopicPartitions; `with_epochs`: record 8's struct, whose
/// tag 0 holds the assignment epochs (written when not null).
fn put_topic_partitions(b: &mut BytesMut, topics: &[TopicPartitions], with_epochs: bool) {
    put_compact_len(b, topics.len());
    for t in topics {
        b.put_slice(t.topic_id.as_bytes());
        put_i32_array(b, &t.partitions);
        let mut tags = Tags::default();
        if let (true, Some(epochs)) = (with_epochs, &t.assignment_epochs) {
            let mut field = BytesMut::new();
            put_i32_array(&mut field, epochs);
            tags.push(0, &field);
        }
        tags.write(b);
    }
}

pub(crate) fn put_i32_array(b: &mut BytesMut, values: &[i32]) {
    put_compact_len(b, values.len());
    for v in values {
        b.put_i32(*v);
    }
}

/// The key: the key version, then each string as int16 length and UTF-8.
pub(crate) fn key(version: i16, fields: &[&str]) -> Bytes {
    let mut b = BytesMut::with_capacity(2 + fields.iter().map(|f| 2 + f.len()).sum::<usize>());
    b.put_i16(version);
    for f in fields {
        let mut end = f.len().min(i16::MAX as usize);
        while !f.is_char_boundary(end) {
            end -= 1;
        }
        b.put_i16(end as i16);
        b.put_slice(&f.as_bytes()[..end]);
    }
    b.freeze()
}

/// A value's buffer, holding the value version 0.
pub(crate) fn value_start() -> BytesMut {
    let mut b = BytesMut::with_capacity(64);
    b.put_i16(0);
    b
}

pub(crate) fn put_uvarint(b: &mut BytesMut, mut v: u32) {
    while v >= 0x80 {
        b.put_u8((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    b.put_u8(v as u8);
}

/// A compact length (array count or string length): `n + 1`.
pub(crate) fn put_compact_len(b: &mut BytesMut, n: usize) {
    put_uvarint(
        b,
        u32::try_from(n).map_or(u32::MAX, |n| n.saturating_add(1)),
    );
}

pub(crate) fn put_compact_str(b: &mut BytesMut, s: &str) {
    put_compact_len(b, s.len());
    b.put_slice(s.as_bytes());
}

pub(crate) fn put_compact_nullable_str(b: &mut BytesMut, s: Option<&str>) {
    match s {
        Some(s) => put_compact_str(b, s),
        None => put_uvarint(b, 0),
    }
}

/// An empty tagged-field section.
pub(crate) fn put_no_tags(b: &mut BytesMut) {
    put_uvarint(b, 0);
}

/// A tagged-field section being built: (tag, bytes) in increasing tag order.
#[derive(Default)]
pub(crate) struct Tags {
    fields: Vec<(u32, Bytes)>,
}

impl Tags {
    pub(crate) fn push(&mut self, tag: u32, bytes: &[u8]) {
        self.fields.push((tag, Bytes::copy_from_slice(bytes)));
    }

    pub(crate) fn write(&self, b: &mut BytesMut) {
        put_uvarint(b, u32::try_from(self.fields.len()).unwrap_or(u32::MAX));
        for (tag, bytes) in &self.fields {
            put_uvarint(b, *tag);
            put_uvarint(b, u32::try_from(bytes.len()).unwrap_or(u32::MAX));
            b.put_slice(bytes);
        }
    }
}

/// A cursor over untrusted bytes; every read checks the length.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], RecordError> {
        if self.buf.len() < n {
            return Err(RecordError::Malformed(what));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], RecordError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    pub(crate) fn i8(&mut self, what: &'static str) -> Result<i8, RecordError> {
        Ok(i8::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn i16(&mut self, what: &'static str) -> Result<i16, RecordError> {
        Ok(i16::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn i32(&mut self, what: &'static str) -> Result<i32, RecordError> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn i64(&mut self, what: &'static str) -> Result<i64, RecordError> {
        Ok(i64::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn uuid(&mut self, what: &'static str) -> Result<Uuid, RecordError> {
        Ok(Uuid::from_bytes(self.array(what)?))
    }

    /// An unsigned varint of at most 5 bytes that fits 32 bits.
    pub(crate) fn uvarint(&mut self, what: &'static str) -> Result<u32, RecordError> {
        let mut v: u32 = 0;
        for i in 0..5 {
            let [byte] = self.array::<1>(what)?;
            let bits = u32::from(byte & 0x7f);
            if i == 4 && bits > 0x0f {
                return Err(RecordError::Malformed(what));
            }
            v |= bits << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(RecordError::Malformed(what))
    }

    fn utf8(bytes: &[u8], what: &'static str) -> Result<String, RecordError> {
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| RecordError::Malformed(what))
    }

    /// A key's string: int16 length (not null) and UTF-8.
    pub(crate) fn key_str(&mut self, what: &'static str) -> Result<String, RecordError> {
        let len = usize::try_from(self.i16(what)?).map_err(|_| RecordError::Malformed(what))?;
        Self::utf8(self.take(len, what)?, what)
    }

    /// A compact length: None for null (0), else the length.
    fn compact_len(&mut self, what: &'static str) -> Result<Option<usize>, RecordError> {
        match self.uvarint(what)? {
            0 => Ok(None),
            n => usize::try_from(n - 1)
                .map(Some)
                .map_err(|_| RecordError::Malformed(what)),
        }
    }

    pub(crate) fn compact_nullable_str(
        &mut self,
        what: &'static str,
    ) -> Result<Option<String>, RecordError> {
        match self.compact_len(what)? {
            None => Ok(None),
            Some(len) => Self::utf8(self.take(len, what)?, what).map(Some),
        }
    }

    pub(crate) fn compact_str(&mut self, what: &'static str) -> Result<String, RecordError> {
        self.compact_nullable_str(what)?
            .ok_or(RecordError::Malformed(what))
    }

    fn compact_bytes(&mut self, what: &'static str) -> Result<Bytes, RecordError> {
        let len = self
            .compact_len(what)?
            .ok_or(RecordError::Malformed(what))?;
        Ok(Bytes::copy_from_slice(self.take(len, what)?))
    }

    /// A compact array's count (null is an error), checked against the bytes
    /// left: each element takes at least `min_size` bytes.
    pub(crate) fn array_len(
        &mut self,
        what: &'static str,
        min_size: usize,
    ) -> Result<usize, RecordError> {
        self.nullable_array_len(what, min_size)?
            .ok_or(RecordError::Malformed(what))
    }

    fn nullable_array_len(
        &mut self,
        what: &'static str,
        min_size: usize,
    ) -> Result<Option<usize>, RecordError> {
        let n = self.compact_len(what)?;
        match n {
            Some(n) if n > self.buf.len() / min_size.max(1) => Err(RecordError::Malformed(what)),
            n => Ok(n),
        }
    }

    pub(crate) fn i32_array(
        &mut self,
        what: &'static str,
    ) -> Result<Option<Vec<i32>>, RecordError> {
        let Some(n) = self.nullable_array_len(what, 4)? else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.i32(what)?);
        }
        Ok(Some(out))
    }

    /// An array of TopicPartitions (see [`put_topic_partitions`]).
    fn topic_partitions(&mut self, with_epochs: bool) -> Result<Vec<TopicPartitions>, RecordError> {
        // uuid, partitions count, tag count
        let n = self.array_len("topic partitions", 18)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let topic_id = self.uuid("topic id")?;
            let partitions = self
                .i32_array("partitions")?
                .ok_or(RecordError::Malformed("partitions"))?;
            let mut assignment_epochs = None;
            self.tags(|tag, field| {
                if !with_epochs || tag != 0 {
                    return Ok(false);
                }
                assignment_epochs = field.i32_array("assignment epochs")?;
                Ok(true)
            })?;
            out.push(TopicPartitions {
                topic_id,
                partitions,
                assignment_epochs,
            });
        }
        Ok(out)
    }

    /// A tagged-field section: `known` reads a field it knows from a reader
    /// over exactly that field's bytes and answers true (the field must then
    /// be read to its end); it answers false for the others, skipped.
    pub(crate) fn tags(
        &mut self,
        mut known: impl FnMut(u32, &mut Reader<'a>) -> Result<bool, RecordError>,
    ) -> Result<(), RecordError> {
        let count = self.uvarint("tagged field count")?;
        for _ in 0..count {
            let tag = self.uvarint("tag")?;
            let size = usize::try_from(self.uvarint("tagged field size")?)
                .map_err(|_| RecordError::Malformed("tagged field size"))?;
            let mut field = Reader::new(self.take(size, "tagged field")?);
            if known(tag, &mut field)? && !field.buf.is_empty() {
                return Err(RecordError::Malformed("tagged field size"));
            }
        }
        Ok(())
    }

    /// A tagged-field section none of whose fields this broker knows.
    pub(crate) fn skip_tags(&mut self) -> Result<(), RecordError> {
        self.tags(|_, _| Ok(false))
    }
}

#[cfg(test)]
mod tests;
