//! The `consumer` protocol's embedded formats, which classic members carry
//! inside JoinGroup and SyncGroup and which `__consumer_offsets` stores:
//! ConsumerProtocolSubscription (versions 0–3) and
//! ConsumerProtocolAssignment (0–3), each a big-endian i16 version followed
//! by the body (never flexible). Read and written here, in the group layer,
//! because the group state machine converts them (online migration); the
//! wire protocol's codecs stay with the handlers.

use bytes::{BufMut, Bytes, BytesMut};

/// A member's subscription as its `consumer` protocol metadata says it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subscription {
    /// The version it was written at.
    pub version: i16,
    /// Subscribed topic names.
    pub topics: Vec<String>,
    /// (topic, partitions) the member owns (v1+; the cooperative protocol).
    pub owned: Vec<(String, Vec<i32>)>,
    /// Rack id (v3+).
    pub rack: Option<String>,
}

/// Reads bytes in order; every read gives None past the end.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.b.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }

    fn i16(&mut self) -> Option<i16> {
        self.take(2).map(|s| i16::from_be_bytes([s[0], s[1]]))
    }

    fn i32(&mut self) -> Option<i32> {
        self.take(4)
            .map(|s| i32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }

    fn string(&mut self) -> Option<String> {
        let n = usize::try_from(self.i16()?).ok()?;
        self.take(n)
            .map(|s| String::from_utf8_lossy(s).into_owned())
    }

    fn nullable_string(&mut self) -> Option<Option<String>> {
        let n = self.i16()?;
        if n < 0 {
            return Some(None);
        }
        self.take(n as usize)
            .map(|s| Some(String::from_utf8_lossy(s).into_owned()))
    }

    fn skip_nullable_bytes(&mut self) -> Option<()> {
        let n = self.i32()?;
        if n >= 0 {
            self.take(n as usize)?;
        }
        Some(())
    }

    fn count(&mut self) -> Option<usize> {
        let n = self.i32()?;
        // A count beyond what the bytes could hold is malformed.
        let n = usize::try_from(n).ok()?;
        (n <= self.b.len()).then_some(n)
    }

    fn topic_partitions(&mut self) -> Option<Vec<(String, Vec<i32>)>> {
        let n = self.count()?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let topic = self.string()?;
            let k = self.count()?;
            let mut ps = Vec::with_capacity(k);
            for _ in 0..k {
                ps.push(self.i32()?);
            }
            out.push((topic, ps));
        }
        Some(out)
    }
}

/// Reads a ConsumerProtocolSubscription; None when malformed.
pub fn parse_subscription(bytes: &[u8]) -> Option<Subscription> {
    let mut r = Reader { b: bytes, pos: 0 };
    let version = r.i16()?;
    if version < 0 {
        return None;
    }
    let n = r.count()?;
    let mut topics = Vec::with_capacity(n);
    for _ in 0..n {
        topics.push(r.string()?);
    }
    r.skip_nullable_bytes()?;
    let mut sub = Subscription {
        version,
        topics,
        ..Subscription::default()
    };
    if version >= 1 {
        sub.owned = r.topic_partitions()?;
    }
    if version >= 2 {
        r.i32()?;
    }
    if version >= 3 {
        sub.rack = r.nullable_string()?;
    }
    Some(sub)
}

/// The topics of a ConsumerProtocolSubscription, read leniently: the
/// names before the first malformed byte (the rest of the body unread).
pub fn subscribed_topics(bytes: &[u8]) -> Vec<String> {
    let mut r = Reader { b: bytes, pos: 0 };
    let mut out = Vec::new();
    if r.i16().is_none() {
        return out;
    }
    let Some(n) = r.count() else {
        return out;
    };
    for _ in 0..n {
        match r.string() {
            Some(t) => out.push(t),
            None => break,
        }
    }
    out
}

/// Reads a ConsumerProtocolAssignment into (topic, partitions); None when
/// malformed.
pub fn parse_assignment(bytes: &[u8]) -> Option<Vec<(String, Vec<i32>)>> {
    let mut r = Reader { b: bytes, pos: 0 };
    if r.i16()? < 0 {
        return None;
    }
    let parts = r.topic_partitions()?;
    r.skip_nullable_bytes()?;
    Some(parts)
}

/// A ConsumerProtocolAssignment of `parts` at `version` (clamped to 0–3;
/// every version has the same fields), without user data.
pub fn encode_assignment(parts: &[(String, Vec<i32>)], version: i16) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(version.clamp(0, 3));
    b.put_i32(parts.len() as i32);
    for (topic, ps) in parts {
        b.put_i16(topic.len() as i16);
        b.put_slice(topic.as_bytes());
        b.put_i32(ps.len() as i32);
        for p in ps {
            b.put_i32(*p);
        }
    }
    b.put_i32(-1);
    b.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{
        consumer_protocol_assignment as cpa, consumer_protocol_subscription as cps,
    };
    use kafka_protocol::messages::{ConsumerProtocolAssignment, ConsumerProtocolSubscription};
    use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

    fn s(v: &str) -> StrBytes {
        StrBytes::from_string(v.to_string())
    }

    #[test]
    fn subscriptions_of_every_version_read_as_the_protocol_crate_writes_them() {
        for version in 0..=3i16 {
            let msg = ConsumerProtocolSubscription::default()
                .with_topics(vec![s("a"), s("bc")])
                .with_user_data(Some(Bytes::from_static(b"xyz")))
                .with_owned_partitions(vec![cps::TopicPartition::default()
                    .with_topic(s("a").into())
                    .with_partitions(vec![1, 4])])
                .with_generation_id(7)
                .with_rack_id(Some(s("r1")));
            let mut b = BytesMut::new();
            b.put_i16(version);
            msg.encode(&mut b, version).expect("encode");
            let got = parse_subscription(&b).expect("parse");
            assert_eq!(got.version, version);
            assert_eq!(got.topics, vec!["a".to_string(), "bc".to_string()]);
            let owned = if version >= 1 {
                vec![("a".to_string(), vec![1, 4])]
            } else {
                vec![]
            };
            assert_eq!(got.owned, owned);
            assert_eq!(got.rack.as_deref(), (version >= 3).then_some("r1"));
            // Cut anywhere, it is refused rather than misread.
            for cut in 0..b.len() {
                assert!(parse_subscription(&b[..cut]).is_none(), "cut at {cut}");
            }
        }
    }

    #[test]
    fn assignments_round_trip_with_the_protocol_crate() {
        let parts = vec![("t".to_string(), vec![3, 5]), ("u".to_string(), vec![])];
        for version in 0..=3i16 {
            let mut b = encode_assignment(&parts, version);
            assert_eq!(parse_assignment(&b), Some(parts.clone()));
            let _ = b.split_to(2);
            let theirs = ConsumerProtocolAssignment::decode(&mut b, version).expect("decode");
            assert_eq!(theirs.assigned_partitions.len(), 2);
            assert_eq!(theirs.assigned_partitions[0].partitions, vec![3, 5]);
            assert_eq!(theirs.user_data, None);
        }
        let msg = ConsumerProtocolAssignment::default().with_assigned_partitions(vec![
            cpa::TopicPartition::default()
                .with_topic(s("t").into())
                .with_partitions(vec![0]),
        ]);
        let mut b = BytesMut::new();
        b.put_i16(1);
        msg.encode(&mut b, 1).expect("encode");
        assert_eq!(parse_assignment(&b), Some(vec![("t".to_string(), vec![0])]));
        assert_eq!(parse_assignment(&[0, 0, 0]), None);
        assert_eq!(parse_assignment(&[0, 0, 0x7f, 0, 0, 0]), None);
    }
}
