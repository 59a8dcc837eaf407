//! Shard-local replication at the leader: a follower's fetch connection is
//! handed to the shard that owns the partitions it fetches.
//!
//! Every broker places a partition on shard `owner_shard(topic, partition,
//! shards)`, and a follower runs one replica fetcher per (shard, leader
//! broker) for the partitions that shard owns (`replication::fetcher`). With
//! the same shard count on both brokers, every partition of one fetcher's
//! requests is therefore owned by one and the same shard of the leader. The
//! kernel spreads accepted connections over the shards' SO_REUSEPORT
//! listeners by address hash, so the fetcher's connection usually lands on
//! another shard, and each fetch would cross cores twice (the read there,
//! the answer back). Instead, the first request of a connection is looked
//! at: a follower Fetch (`replica_state.replica_id` ≥ 0, KIP-903; the
//! `replica_id` field before v15) whose partitions all belong to one other
//! shard moves the connection there — the socket is duplicated, the request
//! and any bytes read after it go along over the channel mesh, and that
//! shard serves the connection from then on (this shard closes its copy of
//! the descriptor). A follower fetch that cannot tell yet (a topic id the
//! leader's image does not have yet, or no partition named) leaves the
//! decision to the connection's next request. Later fetches, the follower-state updates, the
//! high-watermark moves and the acks=all wake-ups they cause all stay on
//! the owner shard. A connection whose partitions span shards (different
//! shard counts, or a client that is not a Fjord follower) stays where it
//! landed and its reads cross cores as any other fetch does (counted in
//! `WriteStats::replica_reads_cross_shard`).

use std::os::fd::FromRawFd;
use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use glommio::net::TcpStream;
use kafka_protocol::messages::{ApiKey, FetchRequest};

use super::connection::Conn;
use crate::cluster::leadership::Requester;
use crate::protocol::RequestFrame;
use crate::shard::write_stats::WRITE_STATS;
use crate::shard::Shard;

/// Where a connection's request says the connection belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// A follower fetch whose partitions all belong to this other shard.
    Move(usize),
    /// Served where it is: one shard, another API, a consumer fetch, an
    /// undecodable request (the handler answers it), partitions on several
    /// shards or on this one.
    Stay,
    /// A follower fetch that cannot tell yet: no partition named (an
    /// incremental fetch with nothing to update) or a topic id this
    /// broker's image does not have yet (the follower applied the topic
    /// first). The next request decides.
    Undecided,
}

/// Takes a request of a connection not placed yet; gives where the
/// connection belongs (see [`Placement`]).
pub fn replica_fetch_owner(shard: &Shard, request: &RequestFrame) -> Placement {
    if shard.shards < 2 {
        return Placement::Stay;
    }
    // A client's first words (versions, authentication) do not tell what
    // it fetches.
    if matches!(
        request.api_key,
        ApiKey::ApiVersions | ApiKey::SaslHandshake | ApiKey::SaslAuthenticate
    ) {
        return Placement::Undecided;
    }
    if request.api_key != ApiKey::Fetch {
        return Placement::Stay;
    }
    let Ok(req) = request.decode::<FetchRequest>() else {
        return Placement::Stay;
    };
    let version = request.prefix.api_version;
    if crate::handlers::fetch::requester(&req, version) == Requester::Client {
        return Placement::Stay;
    }
    let image = shard.metadata();
    let mut owner = None;
    for t in &req.topics {
        let name = if version >= 13 {
            match image.topic_by_id(&t.topic_id) {
                Some(meta) => meta.name.clone(),
                None => return Placement::Undecided,
            }
        } else {
            std::sync::Arc::from(t.topic.0.as_str())
        };
        for p in &t.partitions {
            let o = shard.owner(&name, p.partition);
            if *owner.get_or_insert(o) != o {
                return Placement::Stay;
            }
        }
    }
    match owner {
        None => Placement::Undecided,
        Some(o) if o == shard.id => Placement::Stay,
        Some(o) => Placement::Move(o),
    }
}

/// Takes the connection (its transport, TLS state and session go along),
/// the target shard, the first request's frame (without its 4-byte size)
/// and the bytes received after it; hands the connection to `target`,
/// which serves it from that request on. Gives the connection back with
/// the bytes to serve (the request re-framed, then the rest) when the
/// hand-off failed (the descriptor could not be duplicated or the target
/// shard is gone): the caller then serves it here. On success the caller's
/// socket is dropped, which closes only its own descriptor.
pub async fn move_connection(
    shard: &Rc<Shard>,
    target: usize,
    conn: Conn,
    first: Bytes,
    rest: BytesMut,
) -> Result<(), (Conn, BytesMut)> {
    let peer = conn.session.peer;
    let mut pending = BytesMut::with_capacity(4 + first.len() + rest.len());
    pending.extend_from_slice(&(first.len() as u32).to_be_bytes());
    pending.extend_from_slice(&first);
    pending.extend_from_slice(&rest);
    // SAFETY: dup(2) of a descriptor this stream owns; the new descriptor
    // is owned by whoever rebuilds a stream from it below.
    let fd = unsafe { libc::fcntl(conn.transport.fd(), libc::F_DUPFD_CLOEXEC, 0) };
    if fd < 0 {
        log::warn!(
            "connection from {peer} stays on shard {}: dup failed: {}",
            shard.id,
            std::io::Error::last_os_error()
        );
        return Err((conn, pending));
    }
    let from = shard.id;
    let handed = pending.clone();
    let Conn {
        transport, session, ..
    } = conn;
    let (stream, tls) = transport.into_parts();
    let moved = shard
        .invoke_on(target, move |s| async move {
            // SAFETY: `fd` is the duplicate made above, owned by no one else.
            let stream = unsafe { TcpStream::from_raw_fd(fd) };
            log::debug!(
                "replica fetch connection from {peer} moved from shard {from} to shard {}",
                s.id
            );
            crate::shard::stall::spawn_local("connection", async move {
                super::connection::serve_moved(s, stream, tls, session, handed).await;
            })
            .detach();
        })
        .await;
    match moved {
        Ok(()) => {
            WRITE_STATS.with(|w| {
                w.replica_connections_moved
                    .set(w.replica_connections_moved.get() + 1)
            });
            Ok(())
        }
        Err(e) => {
            // The target shard is gone (shutdown): whether the task ran and
            // took the TLS state and session cannot be told, so the
            // connection cannot go on safely here; it is closed. The
            // duplicate is left open rather than closed: closing a
            // descriptor number another file may have reused would be
            // worse than one descriptor until exit.
            log::warn!("connection from {peer} closed on shard {from} during a hand-off: {e}");
            drop(stream);
            Ok(())
        }
    }
}
