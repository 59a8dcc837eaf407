//! Where a new partition's replicas go (CreateTopics, CreatePartitions,
//! auto-creation): Kafka's striping over the alive brokers, rack-aware when
//! brokers set `broker.rack`.
//!
//! Without racks the brokers are taken in id order; partition `p`'s first
//! replica (its preferred leader) is broker `(start + p) mod n`, and the
//! followers come after it at a shift that grows once every `n`
//! partitions, so leaders and followers both spread evenly (Kafka's
//! `assignReplicasToBrokersRackUnaware`). With racks, the brokers are first
//! ordered rack by rack in turn (one of each rack, then the next one of each
//! …) and a follower is skipped while its rack (or broker) already holds a
//! replica of the partition and an unused rack remains (Kafka's
//! `assignReplicasToBrokersRackAware`).

use std::collections::{BTreeMap, BTreeSet};

/// A broker replicas may be placed on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Broker id.
    pub id: i32,
    /// `broker.rack`, when set.
    pub rack: Option<String>,
}

/// Why replicas cannot be placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlacementError {
    /// More replicas asked for than brokers (INVALID_REPLICATION_FACTOR).
    TooFewBrokers {
        /// The replication factor asked for.
        replication_factor: i16,
        /// Alive brokers.
        brokers: usize,
    },
    /// Some brokers have a rack and some do not (Kafka refuses this too
    /// unless told to ignore racks).
    MixedRacks,
}

/// The replica lists of `partitions` new partitions of replication factor
/// `rf`, the first numbered `first` (0 for a new topic, the current count
/// for CreatePartitions). `start` and `shift` pick where the stripes begin
/// (random in the controller, fixed in tests).
pub fn place(
    brokers: &[Candidate],
    first: i32,
    partitions: i32,
    rf: i16,
    start: usize,
    shift: usize,
) -> Result<Vec<Vec<i32>>, PlacementError> {
    let n = brokers.len();
    let rf_us = usize::try_from(rf).unwrap_or(0);
    if rf_us == 0 || rf_us > n {
        return Err(PlacementError::TooFewBrokers {
            replication_factor: rf,
            brokers: n,
        });
    }
    let with_rack = brokers.iter().filter(|b| b.rack.is_some()).count();
    if with_rack != 0 && with_rack != n {
        return Err(PlacementError::MixedRacks);
    }
    let mut sorted = brokers.to_vec();
    sorted.sort_by_key(|b| b.id);
    let ordered = if with_rack == 0 {
        sorted
    } else {
        rack_alternated(&sorted)
    };
    let racks: BTreeMap<i32, Option<String>> =
        ordered.iter().map(|b| (b.id, b.rack.clone())).collect();
    let rack_count = racks.values().collect::<BTreeSet<_>>().len();
    let mut out = Vec::new();
    let mut shift = shift % n.max(1);
    for i in 0..partitions.max(0) as usize {
        let p = first as usize + i;
        if p > 0 && p % n == 0 {
            shift += 1;
        }
        let lead = (p + start) % n;
        let mut replicas = vec![ordered[lead].id];
        if with_rack == 0 {
            for j in 0..rf_us - 1 {
                replicas.push(ordered[replica_index(lead, shift, j, n)].id);
            }
        } else {
            let mut used_racks: BTreeSet<Option<String>> =
                [ordered[lead].rack.clone()].into_iter().collect();
            let mut k = 0;
            while replicas.len() < rf_us {
                let b = &ordered[replica_index(lead, shift * n, k, n)];
                k += 1;
                let rack_taken = used_racks.contains(&b.rack) && used_racks.len() < rack_count;
                if replicas.contains(&b.id) || (rack_taken && k < n * n) {
                    continue;
                }
                used_racks.insert(b.rack.clone());
                if used_racks.len() == rack_count {
                    used_racks.clear();
                }
                replicas.push(b.id);
            }
        }
        out.push(replicas);
    }
    Ok(out)
}

/// Kafka's follower index: after the first replica, stepping by a shift in
/// `1..n`.
fn replica_index(first: usize, shift: usize, j: usize, n: usize) -> usize {
    if n <= 1 {
        return first;
    }
    let step = 1 + (shift + j) % (n - 1);
    (first + step) % n
}

/// The brokers ordered one per rack in turn (racks by name, brokers by id).
fn rack_alternated(brokers: &[Candidate]) -> Vec<Candidate> {
    let mut by_rack: BTreeMap<Option<String>, Vec<Candidate>> = BTreeMap::new();
    for b in brokers {
        by_rack.entry(b.rack.clone()).or_default().push(b.clone());
    }
    let mut out = Vec::with_capacity(brokers.len());
    let mut round = 0;
    while out.len() < brokers.len() {
        for list in by_rack.values() {
            if let Some(b) = list.get(round) {
                out.push(b.clone());
            }
        }
        round += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brokers(ids: &[i32], racks: Option<&[&str]>) -> Vec<Candidate> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| Candidate {
                id: *id,
                rack: racks.map(|r| r[i].to_string()),
            })
            .collect()
    }

    #[test]
    fn leaders_and_replicas_spread_evenly() {
        let b = brokers(&[1, 2, 3], None);
        let placed = place(&b, 0, 6, 3, 0, 0).unwrap();
        let leaders: Vec<i32> = placed.iter().map(|r| r[0]).collect();
        assert_eq!(leaders, [1, 2, 3, 1, 2, 3]);
        for r in &placed {
            let set: BTreeSet<i32> = r.iter().copied().collect();
            assert_eq!(set.len(), 3, "each broker once: {r:?}");
        }
        // RF 1 on 3 brokers: one partition per broker.
        let placed = place(&b, 0, 3, 1, 1, 0).unwrap();
        assert_eq!(placed, [vec![2], vec![3], vec![1]]);
        // CreatePartitions continues the stripes.
        let more = place(&b, 6, 3, 2, 0, 0).unwrap();
        assert_eq!(more.iter().map(|r| r[0]).collect::<Vec<_>>(), [1, 2, 3]);
    }

    #[test]
    fn too_many_replicas_or_mixed_racks_are_refused() {
        let b = brokers(&[1, 2], None);
        assert_eq!(
            place(&b, 0, 1, 3, 0, 0),
            Err(PlacementError::TooFewBrokers {
                replication_factor: 3,
                brokers: 2
            })
        );
        assert!(matches!(
            place(&b, 0, 1, 0, 0, 0),
            Err(PlacementError::TooFewBrokers { .. })
        ));
        let mut mixed = brokers(&[1, 2], Some(&["a", "b"]));
        mixed[1].rack = None;
        assert_eq!(
            place(&mixed, 0, 1, 1, 0, 0),
            Err(PlacementError::MixedRacks)
        );
    }

    #[test]
    fn racks_each_get_a_replica_before_any_gets_two() {
        let b = brokers(&[1, 2, 3, 4, 5, 6], Some(&["a", "a", "b", "b", "c", "c"]));
        let rack = |id: i32| b.iter().find(|c| c.id == id).and_then(|c| c.rack.clone());
        for start in 0..6 {
            for shift in 0..6 {
                let placed = place(&b, 0, 12, 3, start, shift).unwrap();
                for r in &placed {
                    let racks: BTreeSet<_> = r.iter().map(|id| rack(*id)).collect();
                    assert_eq!(racks.len(), 3, "start {start} shift {shift}: {r:?}");
                    let ids: BTreeSet<_> = r.iter().collect();
                    assert_eq!(ids.len(), 3);
                }
                let mut leads = BTreeMap::new();
                for r in &placed {
                    *leads.entry(r[0]).or_insert(0) += 1;
                }
                assert!(leads.values().all(|n| *n == 2), "leaders {leads:?}");
            }
        }
    }
}
