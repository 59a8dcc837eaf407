//! Share sessions (KIP-932): a ShareFetch or ShareAcknowledge names a
//! session by (group id, member id) and its `ShareSessionEpoch`. Epoch 0
//! opens a session (replacing one of the same key), -1 closes it (the
//! caller releases what the member holds in its partitions), any other
//! epoch must be the session's next one, which then moves on by one. A
//! session keeps the set of partitions fetched: a ShareFetch adds its
//! partitions and removes its forgotten ones, and every ShareFetch of the
//! session reads the whole set. Pure: the broker keeps one cache per shard
//! (docs/decisions/share-groups.md says which shard).

use std::collections::HashMap;

use uuid::Uuid;

/// A partition of a session: (topic id, partition index).
pub type SharePartitionKey = (Uuid, i32);

/// `ShareSessionEpoch` 0: open a session.
pub const INITIAL_EPOCH: i32 = 0;
/// `ShareSessionEpoch` -1: close the session.
pub const FINAL_EPOCH: i32 = -1;

/// Why a request's session was refused; each maps to its Kafka code in
/// `crate::error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShareSessionError {
    /// SHARE_SESSION_NOT_FOUND (122): no session for the member.
    #[error("no share session for member {member} of group {group}")]
    NotFound {
        /// Group id.
        group: String,
        /// Member id.
        member: String,
    },
    /// INVALID_SHARE_SESSION_EPOCH (123): not the session's next epoch (or
    /// 0 on a ShareAcknowledge, which cannot open a session).
    #[error("share session epoch {got}, expected {expected}")]
    InvalidEpoch {
        /// The epoch the session expects next (0 when there is none).
        expected: i32,
        /// The request's epoch.
        got: i32,
    },
    /// SHARE_SESSION_LIMIT_REACHED (133): `group.share.max.share.sessions`
    /// sessions are open already.
    #[error("share session limit {limit} reached")]
    LimitReached {
        /// The limit of this cache.
        limit: usize,
    },
}

/// What a request is, for its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareRequestKind {
    /// ShareFetch: epoch 0 opens.
    Fetch,
    /// ShareAcknowledge: cannot open a session.
    Acknowledge,
}

/// What the session of a request decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionBegun {
    /// Whether the request opened the session (epoch 0): its answer names
    /// every partition; a later one only those with something to say.
    pub full: bool,
    /// Whether the request closed the session (epoch -1).
    pub closed: bool,
    /// The session's partitions after the request, in the order they
    /// joined (read by a ShareFetch; released by a close).
    pub partitions: Vec<SharePartitionKey>,
}

#[derive(Debug, Clone)]
struct Session {
    next_epoch: i32,
    partitions: Vec<SharePartitionKey>,
    /// The connection that opened it (an opaque key): its close closes
    /// the session, as Kafka 4.4 does.
    connection: Option<String>,
}

/// The share sessions of one shard, keyed by (group id, member id).
#[derive(Debug)]
pub struct ShareSessionCache {
    sessions: HashMap<(String, String), Session>,
    limit: usize,
}

impl ShareSessionCache {
    /// An empty cache holding at most `limit` sessions.
    pub fn new(limit: usize) -> ShareSessionCache {
        ShareSessionCache {
            sessions: HashMap::new(),
            limit,
        }
    }

    /// Number of open sessions.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Begins a request of `member` in `group` at `epoch`, sent on
    /// `connection`: opens (remembering the connection), checks and moves
    /// on, or closes its session; a ShareFetch adds `wanted` to the
    /// session's partitions and removes `forgotten`.
    #[allow(clippy::too_many_arguments)]
    pub fn begin(
        &mut self,
        group: &str,
        member: &str,
        epoch: i32,
        kind: ShareRequestKind,
        wanted: &[SharePartitionKey],
        forgotten: &[SharePartitionKey],
        connection: Option<&str>,
    ) -> Result<SessionBegun, ShareSessionError> {
        let key = (group.to_string(), member.to_string());
        if epoch == INITIAL_EPOCH {
            if kind == ShareRequestKind::Acknowledge {
                return Err(ShareSessionError::InvalidEpoch {
                    expected: self.sessions.get(&key).map_or(0, |s| s.next_epoch),
                    got: epoch,
                });
            }
            if !self.sessions.contains_key(&key) && self.sessions.len() >= self.limit {
                return Err(ShareSessionError::LimitReached { limit: self.limit });
            }
            let mut session = Session {
                next_epoch: 1,
                partitions: Vec::new(),
                connection: connection.map(str::to_string),
            };
            apply(&mut session.partitions, wanted, forgotten);
            let partitions = session.partitions.clone();
            self.sessions.insert(key, session);
            return Ok(SessionBegun {
                full: true,
                closed: false,
                partitions,
            });
        }
        let Some(session) = self.sessions.get_mut(&key) else {
            return Err(ShareSessionError::NotFound {
                group: group.to_string(),
                member: member.to_string(),
            });
        };
        if epoch == FINAL_EPOCH {
            let mut partitions = session.partitions.clone();
            apply(&mut partitions, wanted, &[]);
            self.sessions.remove(&key);
            return Ok(SessionBegun {
                full: false,
                closed: true,
                partitions,
            });
        }
        if epoch != session.next_epoch {
            return Err(ShareSessionError::InvalidEpoch {
                expected: session.next_epoch,
                got: epoch,
            });
        }
        session.next_epoch = if session.next_epoch == i32::MAX {
            1
        } else {
            session.next_epoch + 1
        };
        if kind == ShareRequestKind::Fetch {
            apply(&mut session.partitions, wanted, forgotten);
        }
        Ok(SessionBegun {
            full: false,
            closed: false,
            partitions: session.partitions.clone(),
        })
    }

    /// Closes the session of `member` in `group` if `connection` opened it
    /// (that connection closed); gives its partitions, whose records the
    /// member holds are then released. None when the session is gone or
    /// was reopened on another connection.
    pub fn connection_closed(
        &mut self,
        group: &str,
        member: &str,
        connection: &str,
    ) -> Option<Vec<SharePartitionKey>> {
        let key = (group.to_string(), member.to_string());
        if self.sessions.get(&key)?.connection.as_deref() != Some(connection) {
            return None;
        }
        self.sessions.remove(&key).map(|s| s.partitions)
    }
}

fn apply(
    partitions: &mut Vec<SharePartitionKey>,
    wanted: &[SharePartitionKey],
    forgotten: &[SharePartitionKey],
) {
    for w in wanted {
        if !partitions.contains(w) {
            partitions.push(*w);
        }
    }
    partitions.retain(|p| !forgotten.contains(p));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(i: i32) -> SharePartitionKey {
        (Uuid::from_u128(7), i)
    }

    #[test]
    fn open_move_on_close() {
        let mut c = ShareSessionCache::new(10);
        let f = ShareRequestKind::Fetch;
        let b = c.begin("g", "m", 0, f, &[p(0)], &[], None).unwrap();
        assert!(b.full);
        assert_eq!(b.partitions, vec![p(0)]);
        let b = c.begin("g", "m", 1, f, &[p(1)], &[p(0)], None).unwrap();
        assert!(!b.full);
        assert_eq!(b.partitions, vec![p(1)]);
        assert_eq!(
            c.begin("g", "m", 1, f, &[], &[], None),
            Err(ShareSessionError::InvalidEpoch {
                expected: 2,
                got: 1
            })
        );
        let b = c
            .begin("g", "m", 2, ShareRequestKind::Acknowledge, &[], &[], None)
            .unwrap();
        assert_eq!(b.partitions, vec![p(1)]);
        let b = c.begin("g", "m", -1, f, &[], &[], None).unwrap();
        assert!(b.closed);
        assert_eq!(b.partitions, vec![p(1)]);
        assert!(matches!(
            c.begin("g", "m", 3, f, &[], &[], None),
            Err(ShareSessionError::NotFound { .. })
        ));
        assert!(c.is_empty());
    }

    #[test]
    fn acknowledge_cannot_open_and_limit_holds() {
        let mut c = ShareSessionCache::new(1);
        assert!(matches!(
            c.begin("g", "m", 0, ShareRequestKind::Acknowledge, &[], &[], None),
            Err(ShareSessionError::InvalidEpoch { .. })
        ));
        c.begin("g", "a", 0, ShareRequestKind::Fetch, &[], &[], None)
            .unwrap();
        assert_eq!(
            c.begin("g", "b", 0, ShareRequestKind::Fetch, &[], &[], None),
            Err(ShareSessionError::LimitReached { limit: 1 })
        );
        // Reopening an open session is not a new one.
        c.begin("g", "a", 0, ShareRequestKind::Fetch, &[p(0)], &[], None)
            .unwrap();
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn the_opening_connection_closing_closes() {
        let mut c = ShareSessionCache::new(10);
        let f = ShareRequestKind::Fetch;
        c.begin("g", "m", 0, f, &[p(0)], &[], Some("c1")).unwrap();
        assert_eq!(c.connection_closed("g", "m", "c2"), None);
        // Reopened on c2: c1 closing leaves it.
        c.begin("g", "m", 0, f, &[p(1)], &[], Some("c2")).unwrap();
        assert_eq!(c.connection_closed("g", "m", "c1"), None);
        assert_eq!(c.connection_closed("g", "m", "c2"), Some(vec![p(1)]));
        assert!(c.is_empty());
    }
}
