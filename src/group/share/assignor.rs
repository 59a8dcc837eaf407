//! The share group `simple` assignor (KIP-932): several members may read
//! one partition. For each subscribed topic with `p` partitions and `m`
//! subscribed members, every partition is shared by `s = ceil(m / p)`
//! members (1 when there are at least as many partitions as members), and
//! the `s · p` assignments are spread so that any two members' counts
//! differ by at most one. Members keep what they had where balance allows
//! (stickiness); balance comes first, as Kafka's assignor does.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

/// A member's partitions: topic id → partitions.
pub type Assignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// Computes every member's target. `subscriptions`: member id → the ids of
/// the existing topics it subscribes to; `partitions`: topic id →
/// partition count; `previous`: the last target of each member.
pub fn assign(
    subscriptions: &BTreeMap<String, BTreeSet<Uuid>>,
    partitions: &BTreeMap<Uuid, i32>,
    previous: &BTreeMap<String, Assignment>,
) -> BTreeMap<String, Assignment> {
    let mut out: BTreeMap<String, Assignment> = subscriptions
        .keys()
        .map(|m| (m.clone(), Assignment::new()))
        .collect();
    for (topic, count) in partitions {
        let members: Vec<&String> = subscriptions
            .iter()
            .filter(|(_, topics)| topics.contains(topic))
            .map(|(m, _)| m)
            .collect();
        if members.is_empty() || *count <= 0 {
            continue;
        }
        for (member, parts) in assign_topic(*topic, *count, &members, previous) {
            if !parts.is_empty() {
                out.entry(member.clone()).or_default().insert(*topic, parts);
            }
        }
    }
    out
}

/// One topic's partitions over its `members` (ascending ids).
fn assign_topic<'m>(
    topic: Uuid,
    count: i32,
    members: &[&'m String],
    previous: &BTreeMap<String, Assignment>,
) -> Vec<(&'m String, BTreeSet<i32>)> {
    let m = members.len();
    let p = count as usize;
    let sharing = m.div_ceil(p);
    let total = sharing * p;
    // Quotas: total spread evenly, the first (total mod m) get one more.
    let mut quota: Vec<usize> = (0..m)
        .map(|i| total / m + usize::from(i < total % m))
        .collect();
    let mut slots: Vec<usize> = vec![sharing; p];
    let mut held: Vec<BTreeSet<i32>> = vec![BTreeSet::new(); m];
    // Keep what members had, within their quota and the partition's slots.
    for (i, member) in members.iter().enumerate() {
        let had = previous
            .get(*member)
            .and_then(|a| a.get(&topic))
            .cloned()
            .unwrap_or_default();
        for part in had {
            let Ok(k) = usize::try_from(part) else {
                continue;
            };
            if k < p && quota[i] > 0 && slots[k] > 0 {
                held[i].insert(part);
                quota[i] -= 1;
                slots[k] -= 1;
            }
        }
    }
    // Fill the free slots, each to the member with the most quota left
    // that does not already read the partition (ties: lowest id).
    for (k, free) in slots.iter_mut().enumerate() {
        while *free > 0 {
            let part = k as i32;
            let best = (0..m)
                .filter(|i| quota[*i] > 0 && !held[*i].contains(&part))
                .max_by_key(|i| (quota[*i], std::cmp::Reverse(*i)));
            let Some(i) = best else {
                break;
            };
            held[i].insert(part);
            quota[i] -= 1;
            *free -= 1;
        }
    }
    members.iter().copied().zip(held).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn subs(members: &[&str], topics: &[Uuid]) -> BTreeMap<String, BTreeSet<Uuid>> {
        members
            .iter()
            .map(|m| (m.to_string(), topics.iter().copied().collect()))
            .collect()
    }

    /// Per topic: counts differ by at most one, each partition shared by
    /// the same number of members (at most one more than needed), no
    /// member reads a partition twice (a set), and every partition is read.
    fn check(out: &BTreeMap<String, Assignment>, topic: Uuid, members: usize, parts: i32) {
        let counts: Vec<usize> = out
            .values()
            .map(|a| a.get(&topic).map_or(0, |s| s.len()))
            .collect();
        let (min, max) = (
            counts.iter().min().copied().unwrap_or(0),
            counts.iter().max().copied().unwrap_or(0),
        );
        assert!(max - min <= 1, "unbalanced {counts:?}");
        let sharing = members.div_ceil(parts as usize);
        for p in 0..parts {
            let readers = out
                .values()
                .filter(|a| a.get(&topic).is_some_and(|s| s.contains(&p)))
                .count();
            assert_eq!(readers, sharing, "partition {p} read by {readers}");
        }
    }

    #[test]
    fn fewer_members_than_partitions_each_partition_once() {
        let topic = t(1);
        let parts = BTreeMap::from([(topic, 6)]);
        let out = assign(
            &subs(&["a", "b", "c", "d"], &[topic]),
            &parts,
            &BTreeMap::new(),
        );
        check(&out, topic, 4, 6);
    }

    #[test]
    fn more_members_than_partitions_share_them() {
        let topic = t(1);
        let parts = BTreeMap::from([(topic, 2)]);
        for m in 1..=7 {
            let names: Vec<String> = (0..m).map(|i| format!("m{i}")).collect();
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let out = assign(&subs(&refs, &[topic]), &parts, &BTreeMap::new());
            check(&out, topic, m, 2);
            assert!(
                out.values().all(|a| !a.is_empty()),
                "every member reads something"
            );
        }
    }

    #[test]
    fn members_keep_their_partitions_when_balance_allows() {
        let topic = t(1);
        let parts = BTreeMap::from([(topic, 6)]);
        let first = assign(&subs(&["a", "b"], &[topic]), &parts, &BTreeMap::new());
        let second = assign(&subs(&["a", "b", "c"], &[topic]), &parts, &first);
        check(&second, topic, 3, 6);
        for m in ["a", "b"] {
            let kept = second[m][&topic].intersection(&first[m][&topic]).count();
            assert_eq!(kept, 2, "{m} keeps two of its three");
        }
        // Nothing changes: the same target.
        assert_eq!(
            assign(&subs(&["a", "b", "c"], &[topic]), &parts, &second),
            second
        );
    }

    #[test]
    fn members_read_only_topics_they_subscribe_to() {
        let (x, y) = (t(1), t(2));
        let parts = BTreeMap::from([(x, 2), (y, 3)]);
        let mut s = subs(&["a", "b"], &[x]);
        s.insert("c".to_string(), [y].into_iter().collect());
        let out = assign(&s, &parts, &BTreeMap::new());
        assert_eq!(out["c"].keys().copied().collect::<Vec<_>>(), vec![y]);
        assert_eq!(out["c"][&y].len(), 3);
        assert!(!out["a"].contains_key(&y));
        // Two members read x (c reads none of it: counts 1, 1, 0).
        check(&out, x, 2, 2);
    }
}
