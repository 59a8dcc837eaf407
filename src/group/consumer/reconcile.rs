//! A member's next reconciliation step (Kafka's CurrentAssignmentBuilder):
//! from where the member stands (epoch, state, assigned partitions, the
//! partitions it must revoke) and the group's target assignment, the next
//! standing. Partitions leaving the member are revoked first (the member
//! stays at its epoch in UNREVOKED_PARTITIONS until its `owned` no longer
//! holds them); only then does it move to the target epoch and receive new
//! partitions, except those another member still holds
//! (UNRELEASED_PARTITIONS until they are released).

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::Assignment;

/// Assigned partitions with the epoch each was assigned at (KIP-1251):
/// `topic id → partition → assignment epoch`.
pub(super) type Owned = BTreeMap<Uuid, BTreeMap<i32, i32>>;

/// Kafka's MemberState (record 8's `State`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum MemberState {
    /// 0: at the target (or nothing to do until the target moves).
    #[default]
    Stable,
    /// 1: must revoke `pending` before moving on.
    UnrevokedPartitions,
    /// 2: at the target epoch, waiting for partitions other members hold.
    UnreleasedPartitions,
    /// 127: read from a record with an unknown state.
    Unknown,
}

impl MemberState {
    /// Record 8's code.
    pub(super) fn code(self) -> i8 {
        match self {
            MemberState::Stable => 0,
            MemberState::UnrevokedPartitions => 1,
            MemberState::UnreleasedPartitions => 2,
            MemberState::Unknown => 127,
        }
    }

    /// From record 8's code.
    pub(super) fn from_code(code: i8) -> MemberState {
        match code {
            0 => MemberState::Stable,
            1 => MemberState::UnrevokedPartitions,
            2 => MemberState::UnreleasedPartitions,
            _ => MemberState::Unknown,
        }
    }
}

/// Where a member stands (record 8).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Current {
    /// The epoch the member heartbeats with.
    pub epoch: i32,
    /// The epoch before the last change.
    pub previous_epoch: i32,
    /// Reconciliation state.
    pub state: MemberState,
    /// Assigned partitions (what the member was told it owns).
    pub assigned: Owned,
    /// Partitions the member must revoke.
    pub pending: Assignment,
}

/// The partitions of `owned` without their epochs.
pub(super) fn plain(owned: &Owned) -> Assignment {
    owned
        .iter()
        .filter(|(_, ps)| !ps.is_empty())
        .map(|(t, ps)| (*t, ps.keys().copied().collect()))
        .collect()
}

/// Whether the member may still own any of `parts`: true when it did not
/// say what it owns (`owned` None).
fn owns_any(owned: Option<&Assignment>, parts: &Assignment) -> bool {
    match owned {
        None => true,
        Some(o) => parts.iter().any(|(t, ps)| {
            o.get(t)
                .is_some_and(|have| ps.iter().any(|p| have.contains(p)))
        }),
    }
}

/// The member's next standing towards `target` at `target_epoch`.
/// `owned` is what the member's heartbeat says it owns (None: not sent);
/// `taken(topic, partition)` tells whether another member still holds
/// (or must still revoke) a partition; `exists(topic)` whether the topic is
/// still in the metadata image (a deleted topic's partitions are dropped,
/// nobody can be given them, so there is nothing to revoke).
pub(super) fn reconcile(
    cur: &Current,
    target_epoch: i32,
    target: &Assignment,
    owned: Option<&Assignment>,
    taken: &dyn Fn(Uuid, i32) -> bool,
    exists: &dyn Fn(Uuid) -> bool,
) -> Current {
    match cur.state {
        MemberState::Stable if cur.epoch == target_epoch => cur.clone(),
        MemberState::UnrevokedPartitions if owns_any(owned, &cur.pending) => cur.clone(),
        _ => next(cur, target_epoch, target, owned, taken, exists),
    }
}

fn next(
    cur: &Current,
    target_epoch: i32,
    target: &Assignment,
    owned: Option<&Assignment>,
    taken: &dyn Fn(Uuid, i32) -> bool,
    exists: &dyn Fn(Uuid) -> bool,
) -> Current {
    let empty_owned = BTreeMap::new();
    let empty_set = BTreeSet::new();
    let topics: BTreeSet<Uuid> = target.keys().chain(cur.assigned.keys()).copied().collect();
    let mut kept: Owned = BTreeMap::new();
    let mut revoke: Assignment = BTreeMap::new();
    let mut to_assign: Assignment = BTreeMap::new();
    let mut unreleased = false;
    for t in topics {
        let gone = !exists(t);
        let have = cur.assigned.get(&t).unwrap_or(&empty_owned);
        let want = target.get(&t).unwrap_or(&empty_set);
        for (p, e) in have {
            if want.contains(p) {
                kept.entry(t).or_default().insert(*p, *e);
            } else if !gone {
                revoke.entry(t).or_default().insert(*p);
            }
        }
        for p in want {
            if have.contains_key(p) {
                continue;
            }
            if taken(t, *p) {
                unreleased = true;
            } else {
                to_assign.entry(t).or_default().insert(*p);
            }
        }
    }
    let candidate = if !revoke.is_empty() && owns_any(owned, &revoke) {
        Current {
            epoch: cur.epoch,
            previous_epoch: cur.epoch,
            state: MemberState::UnrevokedPartitions,
            assigned: kept,
            pending: revoke,
        }
    } else {
        for (t, ps) in to_assign {
            let slot = kept.entry(t).or_default();
            for p in ps {
                slot.insert(p, target_epoch);
            }
        }
        Current {
            epoch: target_epoch,
            previous_epoch: cur.epoch,
            state: if unreleased {
                MemberState::UnreleasedPartitions
            } else {
                MemberState::Stable
            },
            assigned: kept,
            pending: BTreeMap::new(),
        }
    };
    // Nothing moved: keep the previous epoch (a lost answer stays acceptable).
    if candidate.epoch == cur.epoch
        && candidate.state == cur.state
        && candidate.assigned == cur.assigned
        && candidate.pending == cur.pending
    {
        return cur.clone();
    }
    candidate
}
