use super::*;

fn hex(s: &str) -> Vec<u8> {
    assert!(s.len() % 2 == 0, "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn topic(n: u8) -> Uuid {
    Uuid::from_bytes([n; 16])
}

fn member_metadata(classic: Option<ClassicMemberMetadata>) -> MemberMetadata {
    MemberMetadata {
        instance_id: Some("instance-1".into()),
        rack_id: None,
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        subscribed_topic_names: vec!["a".into(), "b".into()],
        subscribed_topic_regex: Some("c.*".into()),
        rebalance_timeout_ms: 300_000,
        server_assignor: Some("uniform".into()),
        classic_member_metadata: classic,
    }
}

/// Every variant, with values, tombstones and tagged fields set and unset.
fn samples() -> Vec<ConsumerRecord> {
    let g = || "group-1".to_string();
    let m = || "member-1".to_string();
    let classic = ClassicMemberMetadata {
        session_timeout_ms: 45_000,
        supported_protocols: vec![
            ("range".into(), Bytes::from_static(b"\x00\x03sub")),
            ("cooperative-sticky".into(), Bytes::new()),
        ],
    };
    let assignment = CurrentMemberAssignment {
        member_epoch: 7,
        previous_member_epoch: 6,
        state: 1,
        assigned: vec![
            TopicPartitions {
                topic_id: topic(1),
                partitions: vec![0, 2],
                assignment_epochs: Some(vec![5, 7]),
            },
            TopicPartitions {
                topic_id: topic(2),
                partitions: vec![],
                assignment_epochs: Some(vec![]),
            },
        ],
        pending_revocation: vec![TopicPartitions {
            topic_id: topic(3),
            partitions: vec![1],
            assignment_epochs: None,
        }],
    };
    vec![
        ConsumerRecord::GroupMetadata {
            group_id: g(),
            value: Some((3, -42)),
        },
        ConsumerRecord::GroupMetadata {
            group_id: g(),
            value: Some((3, 0)),
        },
        ConsumerRecord::GroupMetadata {
            group_id: g(),
            value: None,
        },
        ConsumerRecord::PartitionMetadata { group_id: g() },
        ConsumerRecord::MemberMetadata {
            group_id: g(),
            member_id: m(),
            value: Some(member_metadata(None)),
        },
        ConsumerRecord::MemberMetadata {
            group_id: g(),
            member_id: m(),
            value: Some(member_metadata(Some(classic))),
        },
        ConsumerRecord::MemberMetadata {
            group_id: g(),
            member_id: m(),
            value: Some(member_metadata(Some(ClassicMemberMetadata::default()))),
        },
        ConsumerRecord::MemberMetadata {
            group_id: g(),
            member_id: m(),
            value: Some(MemberMetadata {
                instance_id: None,
                rack_id: Some("rack-a".into()),
                subscribed_topic_regex: None,
                server_assignor: None,
                subscribed_topic_names: vec![],
                ..member_metadata(None)
            }),
        },
        ConsumerRecord::MemberMetadata {
            group_id: g(),
            member_id: m(),
            value: None,
        },
        ConsumerRecord::TargetAssignmentMetadata {
            group_id: g(),
            value: Some((4, 1_764_936_000_000)),
        },
        ConsumerRecord::TargetAssignmentMetadata {
            group_id: g(),
            value: Some((4, 0)),
        },
        ConsumerRecord::TargetAssignmentMetadata {
            group_id: g(),
            value: None,
        },
        ConsumerRecord::TargetAssignmentMember {
            group_id: g(),
            member_id: m(),
            value: Some(vec![
                TopicPartitions {
                    topic_id: topic(1),
                    partitions: vec![0, 1, 2],
                    assignment_epochs: None,
                },
                TopicPartitions {
                    topic_id: topic(9),
                    partitions: vec![],
                    assignment_epochs: None,
                },
            ]),
        },
        ConsumerRecord::TargetAssignmentMember {
            group_id: g(),
            member_id: m(),
            value: Some(vec![]),
        },
        ConsumerRecord::TargetAssignmentMember {
            group_id: g(),
            member_id: m(),
            value: None,
        },
        ConsumerRecord::CurrentMemberAssignment {
            group_id: g(),
            member_id: m(),
            value: Some(assignment),
        },
        ConsumerRecord::CurrentMemberAssignment {
            group_id: g(),
            member_id: m(),
            value: Some(CurrentMemberAssignment {
                state: 127,
                ..CurrentMemberAssignment::default()
            }),
        },
        ConsumerRecord::CurrentMemberAssignment {
            group_id: g(),
            member_id: m(),
            value: None,
        },
        ConsumerRecord::RegularExpression {
            group_id: g(),
            regex: "orders-.*".into(),
            value: Some((
                vec!["orders-1".into(), "orders-2".into()],
                12,
                1_764_936_000_001,
            )),
        },
        ConsumerRecord::RegularExpression {
            group_id: g(),
            regex: "none-.*".into(),
            value: Some((vec![], 0, 0)),
        },
        ConsumerRecord::RegularExpression {
            group_id: g(),
            regex: "orders-.*".into(),
            value: None,
        },
    ]
}

#[test]
fn every_variant_round_trips() {
    for r in samples() {
        let (key, value) = r.encode();
        let back = ConsumerRecord::decode(&key, value.as_deref()).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.encode(), (key, value), "{r:?}");
        assert_eq!(r.group_id(), "group-1");
    }
}

#[test]
fn key_versions_and_tombstones() {
    for r in samples() {
        let (key, value) = r.encode();
        let expected: i16 = match r {
            ConsumerRecord::GroupMetadata { .. } => 3,
            ConsumerRecord::PartitionMetadata { .. } => 4,
            ConsumerRecord::MemberMetadata { .. } => 5,
            ConsumerRecord::TargetAssignmentMetadata { .. } => 6,
            ConsumerRecord::TargetAssignmentMember { .. } => 7,
            ConsumerRecord::CurrentMemberAssignment { .. } => 8,
            ConsumerRecord::RegularExpression { .. } => 16,
        };
        assert_eq!(i16::from_be_bytes([key[0], key[1]]), expected);
        let tombstone = matches!(
            r,
            ConsumerRecord::PartitionMetadata { .. }
                | ConsumerRecord::GroupMetadata { value: None, .. }
                | ConsumerRecord::MemberMetadata { value: None, .. }
                | ConsumerRecord::TargetAssignmentMetadata { value: None, .. }
                | ConsumerRecord::TargetAssignmentMember { value: None, .. }
                | ConsumerRecord::CurrentMemberAssignment { value: None, .. }
                | ConsumerRecord::RegularExpression { value: None, .. }
        );
        assert_eq!(value.is_none(), tombstone, "{r:?}");
        if let Some(v) = value {
            assert_eq!(&v[..2], &[0, 0], "value version 0");
        }
    }
}

#[test]
fn exact_bytes_of_small_records() {
    // Key: version 3, int16 length, "g"; value: version 0, epoch 2, one
    // tagged field (tag 0, 8 bytes).
    let (key, value) = ConsumerRecord::GroupMetadata {
        group_id: "g".into(),
        value: Some((2, 0x0102)),
    }
    .encode();
    assert_eq!(&key[..], &hex("0003000167")[..]);
    assert_eq!(
        value.as_deref(),
        Some(&hex("0000000000020100080000000000000102")[..])
    );
    // Record 7: version 0, one topic (uuid, 2 partitions, no tags), no tags.
    let (_, value) = ConsumerRecord::TargetAssignmentMember {
        group_id: "g".into(),
        member_id: "m".into(),
        value: Some(vec![TopicPartitions {
            topic_id: topic(1),
            partitions: vec![0, 5],
            assignment_epochs: None,
        }]),
    }
    .encode();
    assert_eq!(
        value.as_deref(),
        Some(&hex("000002010101010101010101010101010101010300000000000000050000")[..])
    );
}

#[test]
fn every_truncation_is_an_error() {
    for r in samples() {
        let (key, value) = r.encode();
        for cut in 0..key.len() {
            assert!(
                ConsumerRecord::decode(&key[..cut], value.as_deref()).is_err(),
                "key cut at {cut} of {r:?}"
            );
        }
        if let Some(value) = value {
            for cut in 0..value.len() {
                assert!(
                    ConsumerRecord::decode(&key, Some(&value[..cut])).is_err(),
                    "value cut at {cut} of {r:?}"
                );
            }
        }
    }
}

#[test]
fn corrupted_bytes_never_panic() {
    for r in samples() {
        let (key, value) = r.encode();
        let Some(value) = value else { continue };
        for i in 0..value.len() {
            for byte in [0x00, 0x01, 0x7f, 0x80, 0xff] {
                let mut v = value.to_vec();
                v[i] = byte;
                let _ = ConsumerRecord::decode(&key, Some(&v));
            }
        }
        for i in 0..key.len() {
            let mut k = key.to_vec();
            k[i] = 0xff;
            let _ = ConsumerRecord::decode(&k, Some(&value));
        }
    }
}

#[test]
fn errors_are_typed() {
    // Key versions of classic groups and of other coordinators.
    for v in [0i16, 1, 2, 9, 15, 17, -1] {
        let mut key = v.to_be_bytes().to_vec();
        key.extend_from_slice(&[0, 1, b'g']);
        assert_eq!(
            ConsumerRecord::decode(&key, None),
            Err(RecordError::NotConsumerGroup(v))
        );
    }
    // A value version other than 0.
    let (key, value) = ConsumerRecord::GroupMetadata {
        group_id: "g".into(),
        value: Some((1, 0)),
    }
    .encode();
    let mut v = value.unwrap().to_vec();
    v[1] = 1;
    assert_eq!(
        ConsumerRecord::decode(&key, Some(&v)),
        Err(RecordError::UnknownValueVersion(1, 3))
    );
    // A null key string.
    assert!(matches!(
        ConsumerRecord::decode(&hex("0003ffff"), None),
        Err(RecordError::Malformed(_))
    ));
    // Invalid UTF-8 in a key and in a value.
    assert!(ConsumerRecord::decode(&hex("00030001ff"), None).is_err());
    let key5 = hex("0005000167000161");
    let bad_client = hex("0000000002ff0100010001000000000000");
    assert!(ConsumerRecord::decode(&key5, Some(&bad_client)).is_err());
    // A null non-nullable string (client id).
    let null_client = hex("00000000000100010001000000000000");
    assert!(ConsumerRecord::decode(&key5, Some(&null_client)).is_err());
    // An array count far beyond the bytes: refused before allocating.
    let key16 = hex("00100001670001");
    let mut key16 = key16;
    key16.push(b'r');
    let huge = hex("0000ffffffff0f");
    assert!(ConsumerRecord::decode(&key16, Some(&huge)).is_err());
    // A varint longer than 5 bytes.
    let long = hex("0000ffffffffff01");
    assert!(ConsumerRecord::decode(&key16, Some(&long)).is_err());
    // A known tagged field whose size does not match its type.
    let key3 = hex("0003000167");
    let wrong_size = hex("00000000000201000900000000000000010a");
    assert!(ConsumerRecord::decode(&key3, Some(&wrong_size)).is_err());
}

#[test]
fn unknown_tagged_fields_are_skipped() {
    // Record 3: tag 0 (hash 1) and unknown tags 1 and 40 (3 bytes, 0 bytes).
    let key3 = hex("0003000167");
    let v = hex("000000000002030008000000000000000101030a0b0c2800");
    assert_eq!(
        ConsumerRecord::decode(&key3, Some(&v)).unwrap(),
        ConsumerRecord::GroupMetadata {
            group_id: "g".into(),
            value: Some((2, 1)),
        }
    );
    // Record 6 with only an unknown tag: the timestamp keeps its default 0.
    let key6 = hex("0006000167");
    let v = hex("0000000000050105020102");
    assert_eq!(
        ConsumerRecord::decode(&key6, Some(&v)).unwrap(),
        ConsumerRecord::TargetAssignmentMetadata {
            group_id: "g".into(),
            value: Some((5, 0)),
        }
    );
    // Record 8: an unknown tag 3 in the nested TopicPartitions beside tag 0
    // (epochs [9]), and an unknown tag 2 at the end of the value.
    let key8 = hex("00080001670001");
    let mut key8 = key8;
    key8.push(b'm');
    let t = "01010101010101010101010101010101";
    let v = hex(&format!(
        "0000 00000002 00000001 00 02 {t} 02 00000004 02 00 05 02 00000009 03 01 ff 01 01 02 02 abcd"
    )
    .replace(' ', ""));
    assert_eq!(
        ConsumerRecord::decode(&key8, Some(&v)).unwrap(),
        ConsumerRecord::CurrentMemberAssignment {
            group_id: "g".into(),
            member_id: "m".into(),
            value: Some(CurrentMemberAssignment {
                member_epoch: 2,
                previous_member_epoch: 1,
                state: 0,
                assigned: vec![TopicPartitions {
                    topic_id: topic(1),
                    partitions: vec![4],
                    assignment_epochs: Some(vec![9]),
                }],
                pending_revocation: vec![],
            }),
        }
    );
    // Record 7's TopicPartitions has no tag 0 in its schema: skipped there.
    let key7 = hex("00070001670001");
    let mut key7 = key7;
    key7.push(b'm');
    let v = hex(&format!("0000 02 {t} 02 00000004 01 00 05 02 00000009 00").replace(' ', ""));
    let r = ConsumerRecord::decode(&key7, Some(&v)).unwrap();
    assert_eq!(
        r,
        ConsumerRecord::TargetAssignmentMember {
            group_id: "g".into(),
            member_id: "m".into(),
            value: Some(vec![TopicPartitions {
                topic_id: topic(1),
                partitions: vec![4],
                assignment_epochs: None,
            }]),
        }
    );
    // Record 5: an unknown tag 1 after the classic metadata (null here).
    let key5 = hex("0005000167000161");
    let v = hex("000000000263026801010000000100020001000101017f");
    let ConsumerRecord::MemberMetadata { value: Some(m), .. } =
        ConsumerRecord::decode(&key5, Some(&v)).unwrap()
    else {
        panic!("not a member record")
    };
    assert_eq!(m.client_id, "c");
    assert_eq!(m.client_host, "h");
    assert_eq!(m.subscribed_topic_regex, Some(String::new()));
    assert_eq!(m.rebalance_timeout_ms, 1);
    assert_eq!(m.classic_member_metadata, None);
}

#[test]
fn record_4_is_read_and_ignored() {
    // As Kafka 3.x wrote it: one topic with its partition racks.
    let key = hex("0004000167");
    let value = hex("00000201010101010101010101010101010101027400000003010000");
    assert_eq!(
        ConsumerRecord::decode(&key, Some(&value)).unwrap(),
        ConsumerRecord::PartitionMetadata {
            group_id: "g".into()
        }
    );
    assert_eq!(
        ConsumerRecord::decode(&key, None).unwrap(),
        ConsumerRecord::PartitionMetadata {
            group_id: "g".into()
        }
    );
}

#[test]
fn record_7_never_writes_assignment_epochs() {
    let r = ConsumerRecord::TargetAssignmentMember {
        group_id: "g".into(),
        member_id: "m".into(),
        value: Some(vec![TopicPartitions {
            topic_id: topic(1),
            partitions: vec![0],
            assignment_epochs: Some(vec![3]),
        }]),
    };
    let (key, value) = r.encode();
    let ConsumerRecord::TargetAssignmentMember {
        value: Some(topics),
        ..
    } = ConsumerRecord::decode(&key, value.as_deref()).unwrap()
    else {
        panic!("not record 7")
    };
    assert_eq!(topics[0].assignment_epochs, None);
    assert_eq!(topics[0].partitions, vec![0]);
}

/// Records Kafka 4.4 wrote to `__consumer_offsets`: (key, value or None),
/// hex.
///
/// Made so (single-node Kafka 4.4 peer, one consumer-protocol member, then a
/// classic member joining the same group for a few seconds):
///
/// ```text
/// export KAFKA_PEER_HOME=target/peers/kafka-848rec
/// scripts/peers/kafka start                                   # prints ADDR
/// scripts/peers/kafka tool kafka-topics --bootstrap-server ADDR --create \
///     --topic t848 --partitions 3 --replication-factor 1
/// seq 1 30 | scripts/peers/kafka tool kafka-console-producer \
///     --bootstrap-server ADDR --topic t848
/// timeout 40 scripts/peers/kafka tool kafka-console-consumer \
///     --bootstrap-server ADDR --topic t848 --group g848 --from-beginning \
///     --consumer-property group.protocol=consumer \
///     --consumer-property client.id=cons1 &
/// sleep 15
/// timeout 15 scripts/peers/kafka tool kafka-console-consumer \
///     --bootstrap-server ADDR --topic t848 --group g848 \
///     --consumer-property client.id=classic1
/// sleep 20; scripts/peers/kafka stop
/// ```
///
/// then the records of `$(scripts/peers/kafka logdir)/__consumer_offsets-7/
/// 00000000000000000000.log` (the partition of "g848"; RecordBatch v2,
/// uncompressed) were listed with a short script walking each batch
/// (61-byte header, then per record: varint length, attributes,
/// timestamp and offset deltas, varint key length and key, varint value
/// length (-1: null) and value) and printing key and value in hex. The
/// comment after each pair is its offset in that log.
const KAFKA_4_4: &[(&str, Option<&str>)] = &[
    // 0: record 5 of the consumer-protocol member: ClassicMemberMetadata
    // null, written as tag 0 holding the varint 0; regex "" (not null).
    (
        "000500046738343800167751564e61424e6c53344f5648726c56477135534267",
        Some("0000000006636f6e73310b2f3132372e302e302e3102057438343801000493e00001000100"),
    ),
    // 1: record 3, epoch 2 and the metadata hash in tag 0.
    ("0003000467383438", Some("000000000002010008484e4be7bcb30b76")),
    // 2: record 7, partitions 0, 1, 2 of t848.
    (
        "000700046738343800167751564e61424e6c53344f5648726c56477135534267",
        Some("0000029d74aa961a7a4181a40d778dbcd00be5040000000000000001000000020000"),
    ),
    // 3: record 6, epoch 2 and the assignment timestamp in tag 0.
    ("0006000467383438", Some("000000000002010008000001a2462e19c8")),
    // 4: record 8, epochs 2/0, STABLE, assignment epochs in the nested tag 0.
    (
        "000800046738343800167751564e61424e6c53344f5648726c56477135534267",
        Some("0000000000020000000000029d74aa961a7a4181a40d778dbcd00be50400000000000000010000000201000d040000000200000002000000020100"),
    ),
    // 11: record 5 of the classic member: ClassicMemberMetadata (session
    // timeout 45000, protocols range and cooperative-sticky).
    (
        "00050004673834380016336259387474784f54314358543945725a6733347051",
        Some("0000000009636c6173736963310b2f3132372e302e302e3102057438343801000493e00001005c010000afc8030672616e67651b000300000001000474383438ffffffff00000000ffffffffffff0013636f6f70657261746976652d737469636b791f00030000000100047438343800000004ffffffff00000000ffffffffffff0000"),
    ),
    // 14: record 7 of the classic member: partition 1.
    (
        "00070004673834380016336259387474784f54314358543945725a6733347051",
        Some("0000029d74aa961a7a4181a40d778dbcd00be502000000020000"),
    ),
    // 16: record 8, state 2 (UNRELEASED_PARTITIONS), nothing assigned.
    (
        "00080004673834380016336259387474784f54314358543945725a6733347051",
        Some("0000000000030000000002010100"),
    ),
    // 17: record 8 with partitions pending revocation (state 1).
    (
        "000800046738343800167751564e61424e6c53344f5648726c56477135534267",
        Some("0000000000020000000201029d74aa961a7a4181a40d778dbcd00be5030000000000000001010009030000000200000002029d74aa961a7a4181a40d778dbcd00be50200000002010005020000000200"),
    ),
    // 34, 35, 36: tombstones of records 8, 7, 5 (the classic member left).
    (
        "00080004673834380016336259387474784f54314358543945725a6733347051",
        None,
    ),
    (
        "00070004673834380016336259387474784f54314358543945725a6733347051",
        None,
    ),
    (
        "00050004673834380016336259387474784f54314358543945725a6733347051",
        None,
    ),
    // 54, 55: records 3 and 6 of the emptied group: hash and timestamp 0,
    // so no tagged field.
    ("0003000467383438", Some("00000000000500")),
    ("0006000467383438", Some("00000000000500")),
];

#[test]
fn kafka_4_4_records_decode_and_encode_to_the_same_bytes() {
    let mut decoded = Vec::new();
    for (key, value) in KAFKA_4_4 {
        let key = hex(key);
        let value = value.map(hex);
        let r = ConsumerRecord::decode(&key, value.as_deref())
            .unwrap_or_else(|e| panic!("{e}: {key:02x?}"));
        let (k, v) = r.encode();
        assert_eq!(&k[..], &key[..], "{r:?}");
        assert_eq!(v.as_deref(), value.as_deref(), "{r:?}");
        assert_eq!(r.group_id(), "g848");
        decoded.push(r);
    }
    let t848 = Uuid::parse_str("9d74aa96-1a7a-4181-a40d-778dbcd00be5").unwrap();
    // The consumer-protocol member.
    let ConsumerRecord::MemberMetadata {
        member_id,
        value: Some(m),
        ..
    } = &decoded[0]
    else {
        panic!("{:?}", decoded[0])
    };
    assert_eq!(member_id, "wQVNaBNlS4OVHrlVGq5SBg");
    assert_eq!(
        m,
        &MemberMetadata {
            instance_id: None,
            rack_id: None,
            client_id: "cons1".into(),
            client_host: "/127.0.0.1".into(),
            subscribed_topic_names: vec!["t848".into()],
            subscribed_topic_regex: Some(String::new()),
            rebalance_timeout_ms: 300_000,
            server_assignor: None,
            classic_member_metadata: None,
        }
    );
    assert_eq!(
        decoded[1],
        ConsumerRecord::GroupMetadata {
            group_id: "g848".into(),
            value: Some((2, 0x484e_4be7_bcb3_0b76)),
        }
    );
    assert_eq!(
        decoded[3],
        ConsumerRecord::TargetAssignmentMetadata {
            group_id: "g848".into(),
            value: Some((2, 0x0000_01a2_462e_19c8)),
        }
    );
    assert_eq!(
        decoded[4],
        ConsumerRecord::CurrentMemberAssignment {
            group_id: "g848".into(),
            member_id: "wQVNaBNlS4OVHrlVGq5SBg".into(),
            value: Some(CurrentMemberAssignment {
                member_epoch: 2,
                previous_member_epoch: 0,
                state: 0,
                assigned: vec![TopicPartitions {
                    topic_id: t848,
                    partitions: vec![0, 1, 2],
                    assignment_epochs: Some(vec![2, 2, 2]),
                }],
                pending_revocation: vec![],
            }),
        }
    );
    // The classic member's protocols.
    let ConsumerRecord::MemberMetadata { value: Some(m), .. } = &decoded[5] else {
        panic!("{:?}", decoded[5])
    };
    let classic = m.classic_member_metadata.as_ref().unwrap();
    assert_eq!(classic.session_timeout_ms, 45_000);
    let names: Vec<&str> = classic
        .supported_protocols
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(names, ["range", "cooperative-sticky"]);
    assert_eq!(classic.supported_protocols[0].1.len(), 26);
    // Pending revocation.
    let ConsumerRecord::CurrentMemberAssignment { value: Some(a), .. } = &decoded[8] else {
        panic!("{:?}", decoded[8])
    };
    assert_eq!(
        (a.member_epoch, a.previous_member_epoch, a.state),
        (2, 2, 1)
    );
    assert_eq!(a.assigned[0].partitions, vec![0, 1]);
    assert_eq!(a.assigned[0].assignment_epochs, Some(vec![2, 2]));
    assert_eq!(a.pending_revocation[0].partitions, vec![2]);
    assert_eq!(a.pending_revocation[0].assignment_epochs, Some(vec![2]));
    assert!(matches!(
        decoded[11],
        ConsumerRecord::MemberMetadata { value: None, .. }
    ));
}
