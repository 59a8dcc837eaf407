//! Leadership listeners: how the layers above the shard (the group and
//! transaction coordinators) follow the partitions whose leadership they
//! depend on, without the shard knowing them. Each registers one
//! [`LeadershipListener`] per shard at start-up, before the first metadata
//! image is applied ([`Shard::add_leadership_listener`]); the shard calls
//! every listener when an image makes this broker the leader of a partition
//! it owns (newly opened as leader, or a follower promoted) and when it
//! stops leading one (Kafka's `onElection` / `onResignation` callbacks of
//! its coordinators). Listeners filter the topics they care about. They are
//! also told when an image changes the topics themselves (created, deleted,
//! grown), which the consumer group protocol follows.

use std::rc::Rc;

use super::partition::Partition;
use super::Shard;

/// Told of leadership changes of the partitions a shard owns. Called on the
/// shard's thread, after the image that caused the change is applied;
/// calls must not block (start background work with
/// `stall::spawn_local`).
pub trait LeadershipListener {
    /// This broker now leads `part` (at the partition's current leader
    /// epoch).
    fn became_leader(&self, shard: &Rc<Shard>, part: &Rc<Partition>);
    /// This broker no longer leads `part` (another broker does, or none).
    fn resigned(&self, shard: &Rc<Shard>, part: &Rc<Partition>);
    /// An applied image changed the topics (one was created or deleted, or
    /// gained partitions). Nothing by default.
    fn topics_changed(&self, _shard: &Rc<Shard>) {}
}

impl Shard {
    /// Registers `listener` (start-up, before the first image).
    pub fn add_leadership_listener(&self, listener: Rc<dyn LeadershipListener>) {
        self.leadership_listeners.borrow_mut().push(listener);
    }

    /// Tells every listener that this broker now leads (`leads`) or no
    /// longer leads `part`.
    pub(super) fn leadership_changed(&self, part: &Rc<Partition>, leads: bool) {
        let Ok(me) = super::current() else {
            return;
        };
        // Listeners are cloned out first: one may register work that
        // reaches the shard again.
        let listeners: Vec<Rc<dyn LeadershipListener>> = self.leadership_listeners.borrow().clone();
        for l in listeners {
            if leads {
                l.became_leader(&me, part);
            } else {
                l.resigned(&me, part);
            }
        }
    }

    /// Tells every listener that the applied image changed the topics.
    pub(super) fn topics_changed(&self) {
        let Ok(me) = super::current() else {
            return;
        };
        let listeners: Vec<Rc<dyn LeadershipListener>> = self.leadership_listeners.borrow().clone();
        for l in listeners {
            l.topics_changed(&me);
        }
    }
}
