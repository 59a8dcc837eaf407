use std::collections::BTreeMap;
use std::sync::Arc;

use super::*;
use crate::cluster::metadata::TopicMeta;

const T: Uuid = Uuid::from_u128(7);

/// Brokers 1..=3 alive; topic "t" with one partition.
fn image(replicas: &[i32], isr: &[i32], leader: i32) -> MetadataImage {
    let mut img = MetadataImage::empty("c".into());
    img.register_three_test_brokers(|_| 10, |_| false);
    img.with_topic(TopicMeta {
        name: Arc::from("t"),
        id: T,
        partitions: 1,
        configs: BTreeMap::new(),
        assignments: vec![PartitionRegistration {
            replicas: replicas.to_vec(),
            isr: isr.to_vec(),
            elr: vec![],
            last_known_elr: vec![],
            leader,
            leader_epoch: 5,
            partition_epoch: 9,
            adding_replicas: vec![],
            removing_replicas: vec![],
        }],
    })
}

fn target(replicas: Option<&[i32]>) -> ReassignTarget {
    ReassignTarget {
        topic: "t".into(),
        partition: 0,
        replicas: replicas.map(<[i32]>::to_vec),
    }
}

/// Applies AlterPartitionReassignments for one target; gives the image
/// after it.
fn reassign(img: &MetadataImage, to: Option<&[i32]>) -> MetadataImage {
    let (records, results) = alter(img, &[target(to)], true);
    assert_eq!(results, vec![Ok(())]);
    img.apply(img.offset + 1, &records)
}

fn part(img: &MetadataImage) -> PartitionRegistration {
    img.partition("t", 0).unwrap().clone()
}

/// The leader's AlterPartition with `isr`, applied: the completing record
/// when it completes the move, else the plain ISR change.
fn isr(img: &MetadataImage, isr: &[i32]) -> MetadataImage {
    let p = part(img);
    let r = isr_change(img, T, 0, &p, isr.to_vec()).unwrap_or(MetadataRecord::PartitionChange {
        topic_id: T,
        partition_id: 0,
        isr: Some(isr.to_vec()),
        elr: None,
        last_known_elr: None,
        leader: None,
        replicas: None,
        adding_replicas: None,
        removing_replicas: None,
    });
    img.apply(img.offset + 1, &[r])
}

#[test]
fn completion_waits_for_every_target_replica_in_the_isr() {
    assert_eq!(completion(&[1, 2], &[1], &[], &[]), None, "no reassignment");
    assert_eq!(completion(&[2, 3, 1], &[2, 1], &[2, 3], &[1]), None);
    assert_eq!(
        completion(&[2, 3, 1], &[2, 3, 1], &[2, 3], &[1]),
        Some((vec![2, 3], vec![2, 3]))
    );
    // Only removals: done as soon as a kept replica set is all in the ISR.
    assert_eq!(
        completion(&[1, 2, 3], &[1, 2, 3], &[], &[3]),
        Some((vec![1, 2], vec![1, 2]))
    );
    assert_eq!(
        completion(&[1, 2, 3], &[3], &[], &[3]),
        None,
        "an empty ISR waits"
    );
}

#[test]
fn a_move_grows_catches_up_and_completes_with_a_new_leader() {
    let img = image(&[1], &[1], 1);
    let img = reassign(&img, Some(&[2, 3]));
    let p = part(&img);
    assert_eq!(
        (
            p.replicas.clone(),
            p.adding_replicas.clone(),
            p.removing_replicas.clone()
        ),
        (vec![2, 3, 1], vec![2, 3], vec![1])
    );
    assert_eq!((p.isr.clone(), p.leader, p.leader_epoch), (vec![1], 1, 5));
    assert_eq!(list(&img, None).len(), 1);

    // Broker 2 caught up: in the ISR, not done yet.
    let img = isr(&img, &[2, 1]);
    let p = part(&img);
    assert_eq!((p.isr.clone(), p.is_reassigning()), (vec![2, 1], true));

    // Broker 3 too: the same change completes the reassignment.
    let img = isr(&img, &[2, 3, 1]);
    let p = part(&img);
    assert_eq!(p.replicas, vec![2, 3]);
    assert_eq!(p.isr, vec![2, 3]);
    assert!(!p.is_reassigning());
    assert_eq!(p.leader, 2, "the first target replica in the ISR leads");
    assert_eq!(p.leader_epoch, 6, "one bump for the leader change");
    assert!(list(&img, None).is_empty());
}

#[test]
fn a_kept_leader_gets_an_epoch_bump_when_a_follower_is_removed() {
    let img = image(&[1, 2], &[1, 2], 1);
    let img = reassign(&img, Some(&[1, 3]));
    let img = isr(&img, &[1, 3, 2]);
    let p = part(&img);
    assert_eq!(
        (p.replicas.clone(), p.isr.clone()),
        (vec![1, 3], vec![1, 3])
    );
    assert_eq!((p.leader, p.leader_epoch), (1, 6));
}

#[test]
fn a_reorder_or_a_shrink_the_isr_covers_completes_at_once() {
    let img = image(&[1, 2, 3], &[1, 2, 3], 1);
    let reordered = reassign(&img, Some(&[3, 2, 1]));
    let p = part(&reordered);
    assert_eq!(
        (p.replicas.clone(), p.is_reassigning()),
        (vec![3, 2, 1], false)
    );
    assert_eq!((p.leader, p.leader_epoch), (1, 5), "the leader stays");

    let shrunk = reassign(&img, Some(&[1, 2]));
    let p = part(&shrunk);
    assert_eq!(
        (p.replicas.clone(), p.isr.clone()),
        (vec![1, 2], vec![1, 2])
    );
    assert!(!p.is_reassigning() && p.leader_epoch == 6);

    let (records, _) = alter(&img, &[target(Some(&[1, 2, 3]))], true);
    assert!(records.is_empty(), "the same replicas change nothing");
}

#[test]
fn a_cancel_reverts_to_the_original_replicas() {
    let img = image(&[1], &[1], 1);
    let img = reassign(&img, Some(&[2, 3]));
    let img = isr(&img, &[2, 1]);
    let img = reassign(&img, None);
    let p = part(&img);
    assert_eq!(
        (p.replicas.clone(), p.isr.clone(), p.leader),
        (vec![1], vec![1], 1)
    );
    assert!(!p.is_reassigning());
    assert!(list(&img, None).is_empty());

    let (_, results) = alter(&img, &[target(None)], true);
    assert_eq!(
        results,
        vec![Err(ReassignmentError::NoReassignmentInProgress)]
    );
}

#[test]
fn a_cancel_that_needs_an_unclean_election_is_refused_unless_enabled() {
    let img = image(&[1], &[1], 1);
    let img = reassign(&img, Some(&[2]));
    // Broker 2 joined, then broker 1 fell out of the ISR (fenced meanwhile).
    let mut p = part(&img);
    p.isr = vec![2];
    p.leader = 2;
    let mut t = (**img.topic("t").unwrap()).clone();
    t.assignments[0] = p.clone();
    let img = img.with_topic(t.clone());
    assert_eq!(revert(&p), (vec![1], vec![1], true));
    let (_, results) = alter(&img, &[target(None)], true);
    assert_eq!(
        results,
        vec![Err(ReassignmentError::UncleanRevert {
            topic: "t".into(),
            partition: 0
        })]
    );
    t.configs
        .insert("unclean.leader.election.enable".into(), "true".into());
    let img = img.with_topic(t);
    let img = reassign(&img, None);
    let p = part(&img);
    assert_eq!((p.replicas, p.isr, p.leader), (vec![1], vec![1], 1));
}

#[test]
fn targets_are_checked_as_kafka_checks_them() {
    let img = image(&[1], &[1], 1);
    let err = |to: Option<&[i32]>, topic: &str, partition: i32, allow: bool| {
        let t = ReassignTarget {
            topic: topic.into(),
            partition,
            replicas: to.map(<[i32]>::to_vec),
        };
        alter_one(&img, &t, allow).err()
    };
    assert_eq!(
        err(Some(&[2]), "nope", 0, true),
        Some(ReassignmentError::UnknownTopic {
            topic: "nope".into()
        })
    );
    assert_eq!(
        err(Some(&[2]), "t", 1, true),
        Some(ReassignmentError::UnknownPartition {
            topic: "t".into(),
            partition: 1
        })
    );
    assert_eq!(
        err(Some(&[]), "t", 0, true),
        Some(ReassignmentError::EmptyReplicas)
    );
    assert_eq!(
        err(Some(&[2, 4]), "t", 0, true),
        Some(ReassignmentError::UnregisteredBroker { broker: 4 })
    );
    assert_eq!(
        err(Some(&[2, 3, 2]), "t", 0, true),
        Some(ReassignmentError::DuplicateBroker { broker: 2 })
    );
    let rf = err(Some(&[2, 3]), "t", 0, false);
    assert_eq!(
        rf,
        Some(ReassignmentError::ReplicationFactorChange { from: 1, to: 2 })
    );
    assert_eq!(
        rf.map(|e| e.to_string()).as_deref(),
        Some("The replication factor is changed from 1 to 2")
    );
    assert_eq!(err(Some(&[2]), "t", 0, false), None, "a move keeps the RF");
    assert_eq!(err(Some(&[2, 3]), "t", 0, true), None);
}

#[test]
fn a_new_target_replaces_an_ongoing_one() {
    let img = image(&[1], &[1], 1);
    let img = reassign(&img, Some(&[2]));
    let img = reassign(&img, Some(&[3]));
    let p = part(&img);
    assert_eq!(p.replicas, vec![3, 1, 2]);
    assert_eq!(
        (p.adding_replicas, p.removing_replicas),
        (vec![3], vec![1, 2])
    );
    // While one runs, the RF is its target's size.
    let (_, results) = alter(&img, &[target(Some(&[1, 2]))], false);
    assert_eq!(
        results,
        vec![Err(ReassignmentError::ReplicationFactorChange {
            from: 1,
            to: 2
        })]
    );
}

#[test]
fn list_gives_the_asked_ongoing_reassignments() {
    let img = image(&[1], &[1], 1);
    assert!(list(&img, None).is_empty());
    let img = reassign(&img, Some(&[2, 3]));
    let want = OngoingReassignment {
        topic: "t".into(),
        partition: 0,
        replicas: vec![2, 3, 1],
        adding: vec![2, 3],
        removing: vec![1],
    };
    assert_eq!(list(&img, None), vec![want.clone()]);
    let asked = [("t".to_string(), vec![0, 5]), ("nope".to_string(), vec![0])];
    assert_eq!(list(&img, Some(&asked)), vec![want]);
}

#[test]
fn records_and_registrations_from_before_reassignment_load() {
    let reg: PartitionRegistration = serde_json::from_str(
        r#"{"replicas":[1],"isr":[1],"leader":1,"leader_epoch":0,"partition_epoch":0}"#,
    )
    .unwrap();
    assert!(!reg.is_reassigning());
    let rec: MetadataRecord = serde_json::from_str(
        r#"{"PartitionChange":{"topic_id":"00000000-0000-0000-0000-000000000007","partition_id":0,"isr":[1],"elr":null,"leader":null,"replicas":null}}"#,
    )
    .unwrap();
    assert!(matches!(
        rec,
        MetadataRecord::PartitionChange {
            adding_replicas: None,
            removing_replicas: None,
            ..
        }
    ));
}

#[test]
fn the_leaders_alter_partition_completes_the_move() {
    use crate::cluster::alter_partition::{decide, IsrAsk};
    let img = reassign(&image(&[1], &[1], 1), Some(&[2]));
    let p = part(&img);
    let ask = IsrAsk {
        broker: 1,
        broker_epoch: 10,
        topic_id: T,
        partition: 0,
        leader_epoch: p.leader_epoch,
        partition_epoch: p.partition_epoch,
        new_isr: vec![1, 2],
    };
    let records = decide(&img, &crate::cluster::elr::ElectionRules::default(), &ask).unwrap();
    let img = img.apply(img.offset + 1, &records);
    let p = part(&img);
    assert_eq!((p.replicas, p.isr, p.leader), (vec![2], vec![2], 2));
    assert!(p.adding_replicas.is_empty() && p.removing_replicas.is_empty());
}
