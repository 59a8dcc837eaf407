//! The follower side of a fetch session (KIP-227), as Kafka's
//! `FetchSessionHandler`: what one replica fetcher's session on its leader
//! holds, and the next request's partitions. The first request is full
//! (session id 0, epoch 0) and names every partition; once the leader
//! answers with a session id, each request names only the partitions whose
//! fields (fetch offset, epochs, log start offset, limit) changed since the
//! leader last saw them, plus `forgotten_topics_data` for the partitions
//! the fetcher dropped. An error answer (FETCH_SESSION_ID_NOT_FOUND,
//! INVALID_FETCH_SESSION_EPOCH, any other top-level error) or a lost
//! connection starts over with a full request. A plain data structure: the
//! fetcher ([`super::fetcher`]) sends and applies.

use std::collections::BTreeMap;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use uuid::Uuid;

use crate::error::codes;

/// (topic id, partition index).
type PartitionId = (Uuid, i32);

/// What the leader's session holds for this fetcher.
#[derive(Debug, Default)]
pub struct FollowerSession {
    /// The leader's session id; 0 when there is none (the next request is
    /// full).
    session_id: i32,
    /// The epoch of the next request (0: full).
    epoch: i32,
    /// Each partition's fields as the leader's session has them.
    sent: BTreeMap<PartitionId, FetchPartition>,
}

/// One request built by [`FollowerSession::build`], to send and then hand
/// back to [`FollowerSession::answered`].
#[derive(Debug)]
pub struct Built {
    /// `session_id` to send.
    pub session_id: i32,
    /// `session_epoch` to send (0: a full request that asks for a session).
    pub epoch: i32,
    /// `topics` to send (by topic id).
    pub topics: Vec<FetchTopic>,
    /// `forgotten_topics_data` to send (by topic id).
    pub forgotten: Vec<ForgottenTopic>,
    /// The session's partitions once the leader takes this request.
    next: BTreeMap<PartitionId, FetchPartition>,
}

impl FollowerSession {
    /// The session id of the next request (0: none).
    pub fn session_id(&self) -> i32 {
        self.session_id
    }

    /// Whether the next request is full (it names every partition).
    pub fn is_full(&self) -> bool {
        self.session_id == 0 || self.epoch == 0
    }

    /// Forgets the session: the next request is full (after a lost
    /// connection, or an answer refusing the session).
    pub fn reset(&mut self) {
        self.session_id = 0;
        self.epoch = 0;
        self.sent.clear();
    }

    /// Takes every partition the fetcher reads now, with its topic id and
    /// fields; gives the request: all of them when full, else those new or
    /// changed since the leader last saw them and the dropped ones as
    /// forgotten.
    pub fn build(&self, wanted: Vec<(Uuid, FetchPartition)>) -> Built {
        let full = self.is_full();
        let mut next = BTreeMap::new();
        let mut topics: Vec<FetchTopic> = Vec::new();
        for (topic_id, p) in wanted {
            let id = (topic_id, p.partition);
            let changed = full || self.sent.get(&id) != Some(&p);
            if changed {
                match topics.iter_mut().find(|t| t.topic_id == topic_id) {
                    Some(t) => t.partitions.push(p.clone()),
                    None => topics.push(
                        FetchTopic::default()
                            .with_topic_id(topic_id)
                            .with_partitions(vec![p.clone()]),
                    ),
                }
            }
            next.insert(id, p);
        }
        let mut forgotten: Vec<ForgottenTopic> = Vec::new();
        if !full {
            for (topic_id, partition) in self.sent.keys() {
                if next.contains_key(&(*topic_id, *partition)) {
                    continue;
                }
                match forgotten.iter_mut().find(|t| t.topic_id == *topic_id) {
                    Some(t) => t.partitions.push(*partition),
                    None => forgotten.push(
                        ForgottenTopic::default()
                            .with_topic_id(*topic_id)
                            .with_partitions(vec![*partition]),
                    ),
                }
            }
        }
        Built {
            session_id: self.session_id,
            epoch: if full { 0 } else { self.epoch },
            topics,
            forgotten,
            next,
        }
    }

    /// Takes the request sent and the answer's top-level `error_code` and
    /// `session_id`. No error: the leader's session now holds the request's
    /// partitions; a full request's answer names the new session (0: the
    /// leader keeps none, the next request is full again), an incremental
    /// one moves the epoch on. Any error: the next request is full. Gives
    /// whether the session was refused (FETCH_SESSION_ID_NOT_FOUND,
    /// INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR): the
    /// fetcher then sends the full request at once, without backing off.
    pub fn answered(&mut self, built: Built, error_code: i16, session_id: i32) -> bool {
        if error_code != codes::NONE {
            self.reset();
            return matches!(
                error_code,
                codes::FETCH_SESSION_ID_NOT_FOUND
                    | codes::INVALID_FETCH_SESSION_EPOCH
                    | codes::FETCH_SESSION_TOPIC_ID_ERROR
            );
        }
        if built.epoch == 0 {
            self.session_id = session_id;
            self.epoch = 1;
            if session_id == 0 {
                self.reset();
                return false;
            }
        } else {
            self.epoch = if self.epoch == i32::MAX {
                1
            } else {
                self.epoch + 1
            };
        }
        self.sent = built.next;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(p: i32, offset: i64, epoch: i32) -> FetchPartition {
        FetchPartition::default()
            .with_partition(p)
            .with_fetch_offset(offset)
            .with_current_leader_epoch(epoch)
            .with_last_fetched_epoch(epoch)
            .with_partition_max_bytes(1 << 20)
    }

    fn named(b: &Built) -> Vec<(u128, i32, i64)> {
        b.topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(move |p| (t.topic_id.as_u128(), p.partition, p.fetch_offset))
            })
            .collect()
    }

    fn forgotten(b: &Built) -> Vec<(u128, i32)> {
        b.forgotten
            .iter()
            .flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id.as_u128(), *p)))
            .collect()
    }

    fn a() -> Uuid {
        Uuid::from_u128(1)
    }
    fn b() -> Uuid {
        Uuid::from_u128(2)
    }

    #[test]
    fn first_request_is_full_then_only_changes_are_sent() {
        let mut s = FollowerSession::default();
        let b0 = s.build(vec![
            (a(), part(0, 5, 1)),
            (a(), part(1, 7, 1)),
            (b(), part(0, 0, 3)),
        ]);
        assert_eq!((b0.session_id, b0.epoch), (0, 0));
        assert_eq!(named(&b0), vec![(1, 0, 5), (1, 1, 7), (2, 0, 0)]);
        assert!(b0.forgotten.is_empty());
        assert!(!s.answered(b0, 0, 42));
        assert!(!s.is_full());

        // Only a-1 moved: epoch 1 names it alone.
        let b1 = s.build(vec![
            (a(), part(0, 5, 1)),
            (a(), part(1, 9, 1)),
            (b(), part(0, 0, 3)),
        ]);
        assert_eq!((b1.session_id, b1.epoch), (42, 1));
        assert_eq!(named(&b1), vec![(1, 1, 9)]);
        assert!(b1.forgotten.is_empty());
        s.answered(b1, 0, 42);

        // Nothing moved: an empty request (the leader reads the session).
        let b2 = s.build(vec![
            (a(), part(0, 5, 1)),
            (a(), part(1, 9, 1)),
            (b(), part(0, 0, 3)),
        ]);
        assert_eq!(b2.epoch, 2);
        assert!(named(&b2).is_empty());
        s.answered(b2, 0, 42);

        // A new leader epoch counts as a change; a dropped partition is
        // forgotten; a new one is named.
        let b3 = s.build(vec![(a(), part(0, 5, 2)), (b(), part(1, 0, 3))]);
        assert_eq!(b3.epoch, 3);
        assert_eq!(named(&b3), vec![(1, 0, 5), (2, 1, 0)]);
        assert_eq!(forgotten(&b3), vec![(1, 1), (2, 0)]);
        s.answered(b3, 0, 42);
        // A partition forgotten and wanted again is named in full.
        let b4 = s.build(vec![
            (a(), part(0, 5, 2)),
            (a(), part(1, 9, 1)),
            (b(), part(1, 0, 3)),
        ]);
        assert_eq!(named(&b4), vec![(1, 1, 9)]);
        assert!(b4.forgotten.is_empty());
    }

    #[test]
    fn refused_sessions_start_over_with_a_full_request() {
        for code in [70, 71, 106] {
            let mut s = FollowerSession::default();
            let first = s.build(vec![(a(), part(0, 5, 1))]);
            s.answered(first, 0, 42);
            let inc = s.build(vec![(a(), part(0, 6, 1))]);
            assert_eq!(inc.epoch, 1);
            assert!(s.answered(inc, code, 0), "{code} retries at once");
            let full = s.build(vec![(a(), part(0, 6, 1))]);
            assert_eq!((full.session_id, full.epoch), (0, 0));
            assert_eq!(named(&full), vec![(1, 0, 6)]);
        }
        // Another error also starts over, after the usual backoff.
        let mut s = FollowerSession::default();
        let first = s.build(vec![(a(), part(0, 5, 1))]);
        s.answered(first, 0, 42);
        let inc = s.build(vec![(a(), part(0, 5, 1))]);
        assert!(!s.answered(inc, 7, 0));
        assert!(s.is_full());
    }

    #[test]
    fn no_session_from_the_leader_keeps_requests_full() {
        let mut s = FollowerSession::default();
        let first = s.build(vec![(a(), part(0, 5, 1))]);
        s.answered(first, 0, 0);
        assert!(s.is_full());
        let again = s.build(vec![(a(), part(0, 5, 1))]);
        assert_eq!((again.session_id, again.epoch), (0, 0));
        assert_eq!(named(&again), vec![(1, 0, 5)]);
        // A lost connection forgets the session.
        s.answered(again, 0, 9);
        assert_eq!(s.session_id(), 9);
        s.reset();
        assert!(s.is_full());
    }
}
