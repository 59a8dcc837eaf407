//! A broker-only node (`process.roles=broker`) in the quorum: it is not a
//! voter and keeps no log of its own. As KRaft's observers do, it fetches
//! the committed metadata log from the active controller — the image first
//! when the entries it lacks are purged — applies it to its image and
//! publishes that to its shards; requests for the controller are forwarded
//! as on every node. The controller lists it among DescribeQuorum's
//! observers.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::rpc::{ControllerUnavailable, QuorumRequest, QuorumResponse};
use super::Quorum;

/// A broker-only node's view of the quorum.
#[derive(Debug, Default)]
pub struct Observer {
    /// The active controller as last answered.
    leader: Cell<Option<i32>>,
    /// The first offset not fetched yet.
    next: Cell<u64>,
    /// One fetch has been applied.
    synced: Cell<bool>,
    /// Which voter to ask when no controller is known.
    turn: Cell<usize>,
}

impl Observer {
    /// The active controller as last answered.
    pub fn leader(&self) -> Option<i32> {
        self.leader.get()
    }

    /// Waits (up to `timeout`) for the first fetch; false when none came.
    pub async fn wait_synced(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while !self.synced.get() {
            if Instant::now() >= deadline {
                return false;
            }
            glommio::timer::sleep(Duration::from_millis(10)).await;
        }
        true
    }
}

/// Starts the fetch loop of a broker-only node.
pub fn start(q: &Rc<Quorum>) {
    let me = Rc::downgrade(q);
    crate::stall::spawn_local("metadata observer", async move {
        loop {
            let Some(q) = me.upgrade() else { break };
            let pause = fetch_once(&q).await;
            drop(q);
            if let Some(p) = pause {
                glommio::timer::sleep(p).await;
            }
        }
    })
    .detach();
}

/// One fetch from the active controller (or a voter, which names it);
/// gives how long to pause before the next.
async fn fetch_once(q: &Quorum) -> Option<Duration> {
    let Some(o) = q.observer.as_ref() else {
        return Some(Duration::from_secs(1));
    };
    let voters = &q.settings.voters;
    if voters.is_empty() {
        return Some(Duration::from_secs(1));
    }
    let addr = o
        .leader
        .get()
        .and_then(|l| voters.iter().find(|(id, _)| *id == l))
        .or_else(|| {
            let t = o.turn.get();
            o.turn.set(t.wrapping_add(1));
            voters.get(t % voters.len())
        })
        .map(|(_, a)| a.clone())?;
    let req = QuorumRequest::FetchLog {
        broker_id: q.settings.node_id,
        from: o.next.get(),
    };
    let timeout = q.attempt_timeout() + Duration::from_millis(500);
    match q.peers.call(&addr, &req, timeout).await {
        Ok(QuorumResponse::Log(Ok(chunk))) => {
            if o.leader.get() != Some(chunk.leader_id) {
                o.leader.set(Some(chunk.leader_id));
                q.publisher.controller(chunk.leader_id).await;
            }
            if let Some(snapshot) = &chunk.snapshot {
                if let Err(e) = q.state.install_fetched(snapshot).await {
                    log::warn!("metadata observer: bad snapshot from the controller: {e}");
                    return Some(Duration::from_millis(200));
                }
            }
            q.state.apply_fetched(&chunk.entries).await;
            let last = chunk.entries.last().map_or(0, |(i, _)| *i);
            o.next.set(o.next.get().max(chunk.committed.max(last) + 1));
            o.synced.set(true);
            None
        }
        Ok(QuorumResponse::Log(Err(ControllerUnavailable::NotController { leader }))) => {
            o.leader.set(leader);
            if let Some(l) = leader {
                q.publisher.controller(l).await;
            }
            Some(Duration::from_millis(if leader.is_some() {
                20
            } else {
                100
            }))
        }
        Ok(other) => {
            log::debug!("metadata observer: {addr} answered {other:?}");
            o.leader.set(None);
            Some(Duration::from_millis(200))
        }
        Err(e) => {
            log::debug!("metadata observer: {addr}: {e}");
            o.leader.set(None);
            Some(Duration::from_millis(200))
        }
    }
}
