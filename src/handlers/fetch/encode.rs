//! Hand-written Fetch response encoder (v4–v18) that leaves record bytes in
//! the page cache: the response is a list of chunks, in-memory bytes for the
//! header and partition fields and [`FileRegion`]s for the records, which the
//! connection writes with sendfile(2). The layout follows Kafka's
//! FetchResponse schema; unit tests check it against the protocol crate's
//! decoder for every version.

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::ApiKey;
use std::sync::Arc;
use uuid::Uuid;

use crate::cluster::metadata::BrokerMeta;
use crate::protocol::frame::put_response_header;
use crate::protocol::{Response, ResponseChunk};
use crate::shard::owner::fetch::FileRegion;

/// One topic of the response.
#[derive(Debug)]
pub struct FetchTopicOut {
    /// Topic name (v4–v12).
    pub name: Option<Arc<str>>,
    /// Topic id (v13+).
    pub topic_id: Uuid,
    /// Partitions in request order.
    pub partitions: Vec<FetchPartitionOut>,
}

/// One partition of the response.
#[derive(Debug)]
pub struct FetchPartitionOut {
    /// Partition index.
    pub partition: i32,
    /// Kafka error code.
    pub error_code: i16,
    /// High watermark.
    pub high_watermark: i64,
    /// Last stable offset.
    pub last_stable_offset: i64,
    /// Log start offset.
    pub log_start_offset: i64,
    /// Aborted transactions (producer id, first offset) for READ_COMMITTED
    /// (v4+, KIP-98); None is sent as an empty list under READ_COMMITTED.
    pub aborted_transactions: Option<Vec<(i64, i64)>>,
    /// Record batches as file ranges.
    pub regions: Vec<FileRegion>,
    /// The partition's current leader (leader id, leader epoch) sent to a
    /// refused consumer (v12+ tagged `current_leader`, KIP-951); None or
    /// (-1, -1) sends nothing, as Kafka omits the default.
    pub current_leader: Option<(i32, i32)>,
    /// (epoch, end offset) a follower diverges at (v12+ tagged
    /// `diverging_epoch`, KIP-320); None sends nothing.
    pub diverging_epoch: Option<(i32, i64)>,
}

struct Writer {
    flexible: bool,
    buf: BytesMut,
    chunks: Vec<ResponseChunk>,
}

impl Writer {
    fn uvarint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.put_u8((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.put_u8(v as u8);
    }
    fn array_len(&mut self, n: usize) {
        if self.flexible {
            self.uvarint(n as u64 + 1);
        } else {
            self.buf.put_i32(n as i32);
        }
    }
    fn null_array(&mut self) {
        if self.flexible {
            self.uvarint(0);
        } else {
            self.buf.put_i32(-1);
        }
    }
    fn string(&mut self, s: &str) {
        if self.flexible {
            self.uvarint(s.len() as u64 + 1);
        } else {
            self.buf.put_i16(s.len() as i16);
        }
        self.buf.put_slice(s.as_bytes());
    }
    fn bytes_len(&mut self, n: u64) {
        if self.flexible {
            self.uvarint(n + 1);
        } else {
            self.buf.put_i32(n as i32);
        }
    }
    fn tags(&mut self) {
        if self.flexible {
            self.uvarint(0);
        }
    }
    /// Writes one tagged field: its tag, its size and `body`.
    fn tagged(&mut self, tag: u64, body: &[u8]) {
        self.uvarint(tag);
        self.uvarint(body.len() as u64);
        self.buf.put_slice(body);
    }
    fn file(&mut self, r: &FileRegion) {
        if r.len == 0 {
            return;
        }
        let head = self.buf.split().freeze();
        if !head.is_empty() {
            self.chunks.push(ResponseChunk::Bytes(head));
        }
        self.chunks.push(ResponseChunk::File(r.clone()));
    }
}

/// Encodes a complete Fetch response frame at `version`. Under
/// `isolation_level` 1 (READ_COMMITTED) each partition's
/// `aborted_transactions` is sent as a list (empty when None); under 0
/// (READ_UNCOMMITTED) it is null, as Kafka does. `node_endpoints` (the
/// leaders named in partitions' `current_leader`) are sent from v16
/// (KIP-951) when there are any. `session_id` (v7+, KIP-227) is the fetch
/// session the response belongs to, 0 when sessionless.
pub fn encode_fetch_response(
    version: i16,
    correlation_id: i32,
    error_code: i16,
    session_id: i32,
    topics: &[FetchTopicOut],
    isolation_level: i8,
    node_endpoints: &[BrokerMeta],
) -> Response {
    let mut w = Writer {
        flexible: version >= 12,
        buf: BytesMut::with_capacity(256),
        chunks: Vec::new(),
    };
    put_response_header(&mut w.buf, ApiKey::Fetch, version, correlation_id);
    w.buf.put_i32(0); // throttle_time_ms
    if version >= 7 {
        w.buf.put_i16(error_code);
        w.buf.put_i32(session_id);
    }
    w.array_len(topics.len());
    for t in topics {
        if version >= 13 {
            w.buf.put_slice(t.topic_id.as_bytes());
        } else {
            w.string(t.name.as_deref().unwrap_or(""));
        }
        w.array_len(t.partitions.len());
        for p in &t.partitions {
            w.buf.put_i32(p.partition);
            w.buf.put_i16(p.error_code);
            w.buf.put_i64(p.high_watermark);
            w.buf.put_i64(p.last_stable_offset);
            if version >= 5 {
                w.buf.put_i64(p.log_start_offset);
            }
            if isolation_level == 1 {
                let aborted = p.aborted_transactions.as_deref().unwrap_or(&[]);
                w.array_len(aborted.len());
                for (producer_id, first_offset) in aborted {
                    w.buf.put_i64(*producer_id);
                    w.buf.put_i64(*first_offset);
                    w.tags();
                }
            } else {
                w.null_array();
            }
            if version >= 11 {
                w.buf.put_i32(-1); // preferred_read_replica
            }
            let len: u64 = p.regions.iter().map(|r| r.len).sum();
            w.bytes_len(len);
            for r in &p.regions {
                w.file(r);
            }
            if w.flexible {
                // Tagged fields in tag order: 0 `DivergingEpoch` (epoch,
                // end offset, no tags), 1 `CurrentLeader` (leader id,
                // epoch, no tags); Kafka omits defaults.
                let diverging = p.diverging_epoch.map(|(epoch, end_offset)| {
                    let mut body = BytesMut::with_capacity(13);
                    body.put_i32(epoch);
                    body.put_i64(end_offset);
                    body.put_u8(0);
                    body
                });
                let leader =
                    p.current_leader
                        .filter(|l| *l != (-1, -1))
                        .map(|(leader_id, leader_epoch)| {
                            let mut body = BytesMut::with_capacity(9);
                            body.put_i32(leader_id);
                            body.put_i32(leader_epoch);
                            body.put_u8(0);
                            body
                        });
                let n = u64::from(diverging.is_some()) + u64::from(leader.is_some());
                w.uvarint(n);
                if let Some(body) = diverging {
                    w.tagged(0, &body);
                }
                if let Some(body) = leader {
                    w.tagged(1, &body);
                }
            }
        }
        w.tags();
    }
    if version >= 16 && !node_endpoints.is_empty() {
        // Tag 0, `NodeEndpoints` (KIP-951).
        let mut e = Writer {
            flexible: true,
            buf: BytesMut::new(),
            chunks: Vec::new(),
        };
        e.array_len(node_endpoints.len());
        for n in node_endpoints {
            e.buf.put_i32(n.node_id);
            e.string(&n.host);
            e.buf.put_i32(n.port);
            match &n.rack {
                Some(rack) => e.string(rack),
                None => e.uvarint(0),
            }
            e.tags();
        }
        w.uvarint(1);
        w.tagged(0, &e.buf);
    } else {
        w.tags();
    }
    let tail = w.buf.split().freeze();
    if !tail.is_empty() {
        w.chunks.push(ResponseChunk::Bytes(tail));
    }
    let size: u64 = w.chunks.iter().map(ResponseChunk::len).sum();
    let mut prefix = BytesMut::with_capacity(4);
    prefix.put_i32(size as i32);
    w.chunks.insert(0, ResponseChunk::Bytes(prefix.freeze()));
    Response { chunks: w.chunks }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::{Buf, Bytes};
    use kafka_protocol::messages::{FetchResponse, ResponseHeader};
    use kafka_protocol::protocol::Decodable;
    use std::io::Write;

    fn materialize(r: &Response) -> Bytes {
        let mut out = BytesMut::new();
        for c in &r.chunks {
            match c {
                ResponseChunk::Bytes(b) => out.put_slice(b),
                ResponseChunk::File(f) => {
                    let mut buf = vec![0u8; f.len as usize];
                    std::os::unix::fs::FileExt::read_exact_at(&*f.file, &mut buf, f.position)
                        .unwrap();
                    out.put_slice(&buf);
                }
            }
        }
        out.freeze()
    }

    #[test]
    fn every_version_decodes_with_the_protocol_crate() {
        let mut tmp = tempfile::tempfile().unwrap();
        tmp.write_all(b"0123456789abcdefRECORDS!").unwrap();
        let file = Arc::new(tmp);
        for version in 4..=18i16 {
            let topics = vec![FetchTopicOut {
                name: Some(Arc::from("t")),
                topic_id: Uuid::from_u128(7),
                partitions: vec![
                    FetchPartitionOut {
                        partition: 3,
                        error_code: 0,
                        high_watermark: 10,
                        last_stable_offset: 10,
                        log_start_offset: 2,
                        aborted_transactions: None,
                        current_leader: None,
                        diverging_epoch: None,
                        regions: vec![
                            FileRegion {
                                file: file.clone(),
                                position: 16,
                                len: 8,
                            },
                            FileRegion {
                                file: file.clone(),
                                position: 0,
                                len: 4,
                            },
                        ],
                    },
                    FetchPartitionOut {
                        partition: 4,
                        error_code: 1,
                        high_watermark: -1,
                        last_stable_offset: -1,
                        log_start_offset: -1,
                        aborted_transactions: None,
                        current_leader: None,
                        diverging_epoch: None,
                        regions: vec![],
                    },
                    FetchPartitionOut {
                        partition: 5,
                        error_code: 0,
                        high_watermark: 20,
                        last_stable_offset: 20,
                        log_start_offset: 0,
                        aborted_transactions: None,
                        current_leader: Some((2, 6)),
                        diverging_epoch: Some((4, 17)),
                        regions: vec![],
                    },
                ],
            }];
            let resp = encode_fetch_response(version, 99, 0, 4242, &topics, 0, &[]);
            let mut b = materialize(&resp);
            assert_eq!(b.get_i32() as usize, b.len(), "v{version} size");
            let hv = ApiKey::Fetch.response_header_version(version);
            let h = ResponseHeader::decode(&mut b, hv).unwrap();
            assert_eq!(h.correlation_id, 99);
            let r = FetchResponse::decode(&mut b, version).unwrap();
            assert_eq!(b.remaining(), 0, "v{version} trailing bytes");
            if version >= 7 {
                assert_eq!(r.session_id, 4242, "v{version} session id");
            }
            let t = &r.responses[0];
            if version >= 13 {
                assert_eq!(t.topic_id, Uuid::from_u128(7));
            } else {
                assert_eq!(t.topic.0.as_str(), "t");
            }
            assert_eq!(t.partitions[0].partition_index, 3);
            assert_eq!(t.partitions[0].high_watermark, 10);
            assert_eq!(
                t.partitions[0].records.as_deref(),
                Some(&b"RECORDS!0123"[..])
            );
            assert_eq!(t.partitions[1].error_code, 1);
            let d = &t.partitions[2];
            if version >= 12 {
                assert_eq!(
                    (d.diverging_epoch.epoch, d.diverging_epoch.end_offset),
                    (4, 17)
                );
                assert_eq!(
                    (d.current_leader.leader_id.0, d.current_leader.leader_epoch),
                    (2, 6)
                );
            } else {
                assert_eq!(d.diverging_epoch.epoch, -1);
            }
            if version >= 5 {
                assert_eq!(t.partitions[0].log_start_offset, 2);
            }
        }
    }

    #[test]
    fn current_leader_and_node_endpoints_decode() {
        let nodes = [
            BrokerMeta {
                node_id: 2,
                host: "b2".into(),
                port: 9092,
                rack: Some("r".into()),
            },
            BrokerMeta {
                node_id: 3,
                host: "b3".into(),
                port: 9093,
                rack: None,
            },
        ];
        for version in 4..=18i16 {
            let part = |partition, current_leader| FetchPartitionOut {
                partition,
                error_code: 6,
                high_watermark: -1,
                last_stable_offset: -1,
                log_start_offset: -1,
                aborted_transactions: None,
                current_leader,
                diverging_epoch: None,
                regions: vec![],
            };
            let topics = vec![FetchTopicOut {
                name: Some(Arc::from("t")),
                topic_id: Uuid::from_u128(7),
                partitions: vec![
                    part(0, Some((2, 5))),
                    part(1, Some((-1, -1))),
                    part(2, None),
                ],
            }];
            let resp = encode_fetch_response(version, 1, 0, 0, &topics, 0, &nodes);
            let mut b = materialize(&resp);
            assert_eq!(b.get_i32() as usize, b.len());
            let hv = ApiKey::Fetch.response_header_version(version);
            ResponseHeader::decode(&mut b, hv).unwrap();
            let r = FetchResponse::decode(&mut b, version).unwrap();
            assert_eq!(b.remaining(), 0, "v{version} trailing bytes");
            let p = &r.responses[0].partitions;
            let leader = |i: usize| {
                let l = &p[i].current_leader;
                (l.leader_id.0, l.leader_epoch)
            };
            let sent = if version >= 12 { (2, 5) } else { (-1, -1) };
            assert_eq!(
                [leader(0), leader(1), leader(2)],
                [sent, (-1, -1), (-1, -1)]
            );
            assert!(p.iter().all(|p| p.unknown_tagged_fields.is_empty()));
            let endpoints: Vec<_> = r
                .node_endpoints
                .iter()
                .map(|n| {
                    (
                        n.node_id.0,
                        n.host.to_string(),
                        n.port,
                        n.rack.as_ref().map(|r| r.to_string()),
                    )
                })
                .collect();
            if version >= 16 {
                assert_eq!(
                    endpoints,
                    [
                        (2, "b2".to_string(), 9092, Some("r".to_string())),
                        (3, "b3".to_string(), 9093, None)
                    ]
                );
            } else {
                assert!(endpoints.is_empty(), "v{version}");
            }
        }
    }

    #[test]
    fn read_committed_aborted_list_decodes() {
        for version in 4..=18i16 {
            let topics = vec![FetchTopicOut {
                name: Some(Arc::from("t")),
                topic_id: Uuid::from_u128(7),
                partitions: vec![
                    FetchPartitionOut {
                        partition: 0,
                        error_code: 0,
                        high_watermark: 20,
                        last_stable_offset: 12,
                        log_start_offset: 0,
                        aborted_transactions: Some(vec![(5, 1), (9, 4)]),
                        current_leader: None,
                        diverging_epoch: None,
                        regions: vec![],
                    },
                    FetchPartitionOut {
                        partition: 1,
                        error_code: 0,
                        high_watermark: 3,
                        last_stable_offset: 3,
                        log_start_offset: 0,
                        aborted_transactions: None,
                        current_leader: None,
                        diverging_epoch: None,
                        regions: vec![],
                    },
                ],
            }];
            for isolation in [0i8, 1] {
                let resp = encode_fetch_response(version, 1, 0, 0, &topics, isolation, &[]);
                let mut b = materialize(&resp);
                assert_eq!(b.get_i32() as usize, b.len());
                let hv = ApiKey::Fetch.response_header_version(version);
                ResponseHeader::decode(&mut b, hv).unwrap();
                let r = FetchResponse::decode(&mut b, version).unwrap();
                assert_eq!(b.remaining(), 0, "v{version} trailing bytes");
                let p = &r.responses[0].partitions;
                assert_eq!(p[0].last_stable_offset, 12);
                let list = |i: usize| {
                    p[i].aborted_transactions.as_ref().map(|v| {
                        v.iter()
                            .map(|a| (a.producer_id.0, a.first_offset))
                            .collect::<Vec<_>>()
                    })
                };
                if isolation == 1 {
                    assert_eq!(list(0), Some(vec![(5, 1), (9, 4)]));
                    assert_eq!(list(1), Some(vec![]));
                } else {
                    assert_eq!(list(0), None);
                    assert_eq!(list(1), None);
                }
            }
        }
    }
}
