//! openraft's network: one client per target node, over the target's
//! controller listener ([`super::rpc`]). A client connects on first use
//! and again after any failure; openraft backs off on `Unreachable`.

use std::future::Future;
use std::io;

use openraft::error::{NetworkError, RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::{BasicNode, RaftNetworkFactory, RaftNetworkV2};

use super::rpc::{exchange, PeerAuth, QuorumRequest, QuorumResponse};
use super::types::{MetadataSnapshot, TypeConfig, Vote};
use crate::transport::Transport;

/// Makes a [`Network`] per target.
#[derive(Debug)]
pub struct NetworkFactory {
    /// This node's `cluster.id` (sent in each connection's hello) and how
    /// it connects and authenticates.
    pub auth: PeerAuth,
    /// Each voter's address from this node's `controller.quorum.voters`:
    /// it wins over the address in the membership log, so voters that
    /// moved are reached where this node's configuration says (as Kafka's
    /// static quorum reads the voters from the configuration at each start).
    pub voters: std::collections::BTreeMap<i32, String>,
    /// The shortest timeout of an RPC: `controller.quorum.election.timeout.ms`.
    /// openraft asks for its heartbeat interval on AppendEntries; a follower
    /// that needs longer (a loaded machine, a slow fsync) is still within
    /// its election timeout, so the leader waits that long rather than drop
    /// the connection and retry.
    pub min_timeout: std::time::Duration,
}

impl RaftNetworkFactory<TypeConfig> for NetworkFactory {
    type Network = Network;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> Network {
        let addr = self
            .voters
            .get(&super::types::kafka_id(target))
            .filter(|a| !a.is_empty())
            .cloned()
            .unwrap_or_else(|| node.addr.clone());
        Network {
            target,
            addr,
            auth: self.auth.clone(),
            min_timeout: self.min_timeout,
            conn: None,
        }
    }
}

/// The client of one target node.
#[derive(Debug)]
pub struct Network {
    target: u64,
    addr: String,
    auth: PeerAuth,
    min_timeout: std::time::Duration,
    conn: Option<Transport>,
}

fn unreachable(e: &io::Error) -> RPCError<TypeConfig> {
    match e.kind() {
        io::ErrorKind::ConnectionRefused
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::NotConnected
        | io::ErrorKind::TimedOut
        | io::ErrorKind::UnexpectedEof
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::PermissionDenied => RPCError::Unreachable(Unreachable::new(e)),
        _ => RPCError::Network(NetworkError::new(e)),
    }
}

fn unexpected(r: &QuorumResponse) -> RPCError<TypeConfig> {
    RPCError::Network(NetworkError::from_string(format!(
        "unexpected response {r:?}"
    )))
}

impl Network {
    async fn call(
        &mut self,
        req: &QuorumRequest,
        option: &RPCOption,
    ) -> Result<QuorumResponse, RPCError<TypeConfig>> {
        let timeout = option.hard_ttl().max(self.min_timeout);
        exchange(&mut self.conn, &self.addr, &self.auth, req, timeout)
            .await
            .map_err(|e| {
                log::debug!(
                    "metadata quorum: node {} at {}: {e}",
                    self.target,
                    self.addr
                );
                unreachable(&e)
            })
    }
}

impl RaftNetworkV2<TypeConfig> for Network {
    type SnapshotData = Vec<u8>;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<TypeConfig>, RPCError<TypeConfig>> {
        match self.call(&QuorumRequest::Append(rpc), &option).await? {
            QuorumResponse::Append(Ok(r)) => Ok(r),
            QuorumResponse::Append(Err(e)) => Err(RPCError::Unreachable(Unreachable::new(&e))),
            other => Err(unexpected(&other)),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        match self.call(&QuorumRequest::Vote(rpc), &option).await? {
            QuorumResponse::Vote(Ok(r)) => Ok(r),
            QuorumResponse::Vote(Err(e)) => Err(RPCError::Unreachable(Unreachable::new(&e))),
            other => Err(unexpected(&other)),
        }
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        match self.call(&QuorumRequest::PreVote(rpc), &option).await? {
            QuorumResponse::Vote(Ok(r)) => Ok(r),
            QuorumResponse::Vote(Err(e)) => Err(RPCError::Unreachable(Unreachable::new(&e))),
            other => Err(unexpected(&other)),
        }
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: MetadataSnapshot,
        cancel: impl Future<Output = ReplicationClosed> + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<TypeConfig>, StreamingError<TypeConfig>> {
        let req = QuorumRequest::Snapshot {
            vote,
            meta: snapshot.meta,
            data: snapshot.snapshot,
        };
        let send = self.call(&req, &option);
        let r =
            match futures_lite::future::or(async { Ok(send.await) }, async { Err(cancel.await) })
                .await
            {
                Ok(r) => r,
                Err(closed) => return Err(StreamingError::Closed(closed)),
            };
        match r {
            Ok(QuorumResponse::Snapshot(Ok(r))) => Ok(r),
            Ok(QuorumResponse::Snapshot(Err(e))) => {
                Err(StreamingError::Unreachable(Unreachable::from_string(e)))
            }
            Ok(other) => Err(StreamingError::Network(NetworkError::from_string(format!(
                "unexpected response {other:?}"
            )))),
            Err(RPCError::Unreachable(u)) => Err(StreamingError::Unreachable(u)),
            Err(e) => Err(StreamingError::Network(NetworkError::from_string(
                e.to_string(),
            ))),
        }
    }
}
