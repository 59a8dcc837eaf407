//! The server assignors (`group.consumer.assignors`): from the members'
//! resolved subscriptions, the subscribed topics and the previous target,
//! the new target assignment of every member. Deterministic: members in
//! member-id order, topics in name order, partitions ascending.
//!
//! - `uniform`: partitions spread over the members subscribed to their
//!   topic so that no member holds two more than another that could take
//!   one (balance within one partition where subscriptions allow), keeping
//!   a member's previous target partitions where balance allows (sticky).
//! - `range`: per topic, contiguous ranges of partitions in member-id order;
//!   the first `partitions % members` members get one more.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use uuid::Uuid;

use super::{Assignment, TopicInfo};

/// Kafka's name of the uniform assignor.
pub(super) const UNIFORM: &str = "uniform";
/// Kafka's name of the range assignor.
pub(super) const RANGE: &str = "range";

/// What an assignor reads.
pub(super) struct AssignInput<'a> {
    /// Member id → names of the (existing) topics it subscribes to.
    pub subscriptions: &'a BTreeMap<String, BTreeSet<String>>,
    /// The subscribed topics by name.
    pub topics: &'a BTreeMap<String, TopicInfo>,
    /// The previous target of each member.
    pub previous: &'a BTreeMap<String, Assignment>,
}

/// The target of every member of `input.subscriptions` (members with
/// nothing get an empty assignment) by the assignor named `name` (`range`,
/// anything else `uniform`).
pub(super) fn assign(name: &str, input: &AssignInput<'_>) -> BTreeMap<String, Assignment> {
    if name == RANGE {
        range(input)
    } else {
        uniform(input)
    }
}

fn range(input: &AssignInput<'_>) -> BTreeMap<String, Assignment> {
    let mut out: BTreeMap<String, Assignment> = input
        .subscriptions
        .keys()
        .map(|m| (m.clone(), Assignment::new()))
        .collect();
    for (name, info) in input.topics {
        let subs: Vec<&String> = input
            .subscriptions
            .iter()
            .filter(|(_, ts)| ts.contains(name))
            .map(|(m, _)| m)
            .collect();
        if subs.is_empty() || info.partitions <= 0 {
            continue;
        }
        let n = subs.len() as i32;
        let per = info.partitions / n;
        let extra = info.partitions % n;
        let mut start = 0;
        for (i, m) in subs.iter().enumerate() {
            let count = per + i32::from((i as i32) < extra);
            if count > 0 {
                if let Some(a) = out.get_mut(*m) {
                    a.insert(info.id, (start..start + count).collect());
                }
            }
            start += count;
        }
    }
    out
}

fn uniform(input: &AssignInput<'_>) -> BTreeMap<String, Assignment> {
    let members: Vec<&String> = input.subscriptions.keys().collect();
    // Every partition, topics in name order; and the members of each topic.
    let mut parts: Vec<(Uuid, i32)> = Vec::new();
    let mut topic_members: HashMap<Uuid, Vec<usize>> = HashMap::new();
    for (name, info) in input.topics {
        let subs: Vec<usize> = members
            .iter()
            .enumerate()
            .filter(|(_, m)| {
                input
                    .subscriptions
                    .get(m.as_str())
                    .is_some_and(|ts| ts.contains(name))
            })
            .map(|(i, _)| i)
            .collect();
        if subs.is_empty() {
            continue;
        }
        topic_members.insert(info.id, subs);
        parts.extend((0..info.partitions.max(0)).map(|p| (info.id, p)));
    }
    let index: HashMap<(Uuid, i32), usize> =
        parts.iter().enumerate().map(|(i, tp)| (*tp, i)).collect();
    let mut owner: Vec<Option<usize>> = vec![None; parts.len()];
    let mut held: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); members.len()];

    // Sticky: keep what each member's previous target still allows.
    for (mi, m) in members.iter().enumerate() {
        let Some(prev) = input.previous.get(m.as_str()) else {
            continue;
        };
        for (t, ps) in prev {
            if !topic_members.get(t).is_some_and(|subs| subs.contains(&mi)) {
                continue;
            }
            for p in ps {
                if let Some(&pi) = index.get(&(*t, *p)) {
                    if owner[pi].is_none() {
                        owner[pi] = Some(mi);
                        held[mi].insert(pi);
                    }
                }
            }
        }
    }
    // The rest to the least loaded subscriber (ties: member-id order).
    for (pi, tp) in parts.iter().enumerate() {
        if owner[pi].is_some() {
            continue;
        }
        let Some(subs) = topic_members.get(&tp.0) else {
            continue;
        };
        if let Some(&mi) = subs.iter().min_by_key(|&&mi| (held[mi].len(), mi)) {
            owner[pi] = Some(mi);
            held[mi].insert(pi);
        }
    }
    // Balance: move a partition from a member to a subscriber holding two
    // fewer, most loaded first, highest partitions first; each move lowers
    // the sum of squared loads, so this ends.
    loop {
        let mut order: Vec<usize> = (0..members.len()).collect();
        order.sort_by_key(|&mi| (std::cmp::Reverse(held[mi].len()), mi));
        let mut moved = None;
        'search: for &from in &order {
            for &pi in held[from].iter().rev() {
                let Some(subs) = topic_members.get(&parts[pi].0) else {
                    continue;
                };
                if let Some(&to) = subs.iter().min_by_key(|&&mi| (held[mi].len(), mi)) {
                    if held[to].len() + 1 < held[from].len() {
                        moved = Some((pi, from, to));
                        break 'search;
                    }
                }
            }
        }
        let Some((pi, from, to)) = moved else {
            break;
        };
        held[from].remove(&pi);
        held[to].insert(pi);
        owner[pi] = Some(to);
    }

    members
        .iter()
        .enumerate()
        .map(|(mi, m)| {
            let mut a = Assignment::new();
            for &pi in &held[mi] {
                let (t, p) = parts[pi];
                a.entry(t).or_default().insert(p);
            }
            ((*m).clone(), a)
        })
        .collect()
}
