//! What nodes send each other on the controller listener: the Raft RPCs of
//! the metadata quorum and the requests forwarded to the active controller.
//! Each message is one frame, `u32` big-endian length then JSON; a
//! connection carries one request at a time, each answered before the next.
//! (Kafka's own KRaft RPCs are not spoken: no client talks to a controller
//! listener; DescribeQuorum is answered on the client listener.)

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;
use openraft::error::RaftError;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use serde::{Deserialize, Serialize};

use super::types::{SnapshotMeta, TypeConfig, Vote};
use crate::cluster::control::{ControllerReply, ControllerRequest};

/// Largest frame accepted (bytes): a snapshot of a large cluster fits.
pub const MAX_FRAME: usize = 256 << 20;

/// A request between nodes.
#[derive(Debug, Serialize, Deserialize)]
pub enum QuorumRequest {
    /// The first frame of every connection: the caller's cluster id. A node
    /// of another cluster is refused (its connection closed), so a node
    /// formatted with another `cluster.id` never votes in this quorum.
    Hello {
        /// The caller's `cluster.id`.
        cluster_id: String,
    },
    /// Raft AppendEntries.
    Append(AppendEntriesRequest<TypeConfig>),
    /// Raft RequestVote.
    Vote(VoteRequest<TypeConfig>),
    /// Raft pre-vote.
    PreVote(VoteRequest<TypeConfig>),
    /// A whole snapshot.
    Snapshot {
        /// The leader's vote.
        vote: Vote,
        /// The snapshot's metadata.
        meta: SnapshotMeta,
        /// Its data.
        data: Vec<u8>,
    },
    /// A request for the active controller.
    Controller(ControllerRequest),
    /// The quorum's state, as the active controller sees it (DescribeQuorum).
    Describe,
    /// A broker-only node fetches the committed log from offset `from`.
    FetchLog {
        /// The fetching broker.
        broker_id: i32,
        /// The first offset it does not have.
        from: u64,
    },
}

/// Committed metadata for a broker-only node: the image when the entries it
/// asked for are purged, then the entries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogChunk {
    /// The active controller.
    pub leader_id: i32,
    /// The last committed offset.
    pub committed: u64,
    /// The image (its JSON snapshot form), when the log from `from` is gone.
    pub snapshot: Option<Vec<u8>>,
    /// Committed entries with records, by offset.
    pub entries: Vec<(u64, Vec<crate::cluster::records::MetadataRecord>)>,
}

/// One replica of the metadata log, as DescribeQuorum shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaStatus {
    /// Node id.
    pub node_id: i32,
    /// The offset after its last entry known to match the leader's; -1
    /// when unknown.
    pub log_end_offset: i64,
    /// Wall-clock time (ms) of its last answer to the leader; -1 when none.
    pub last_fetch_ms: i64,
    /// Wall-clock time (ms) it was last known caught up; -1 when never.
    pub last_caught_up_ms: i64,
}

/// The metadata quorum as the active controller reports it (Kafka's
/// DescribeQuorum of `__cluster_metadata-0`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuorumStatus {
    /// The active controller.
    pub leader_id: i32,
    /// Its term (KRaft's leader epoch).
    pub leader_epoch: i64,
    /// The offset after the last committed entry.
    pub high_watermark: i64,
    /// The voters.
    pub voters: Vec<ReplicaStatus>,
    /// Non-voting members (learners).
    pub observers: Vec<ReplicaStatus>,
    /// Each voter's controller listener, `host:port`.
    pub endpoints: Vec<(i32, String)>,
}

/// A committed answer of the active controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// The reply.
    pub reply: ControllerReply,
    /// The metadata offset at which its records (if any) were applied: a
    /// forwarding broker answers its client once it has applied it too.
    pub offset: u64,
}

/// Why a request for the active controller was not decided.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum ControllerUnavailable {
    /// This node is not the active controller (NOT_CONTROLLER); `leader` is
    /// the one it knows of.
    #[error("not the active controller (the active controller is {leader:?})")]
    NotController {
        /// The active controller's node id, when known.
        leader: Option<i32>,
    },
    /// No active controller could be reached in time (REQUEST_TIMED_OUT).
    #[error("no active controller answered within {timeout_ms} ms: {last}")]
    Timeout {
        /// How long it was tried (ms).
        timeout_ms: u64,
        /// The last failure.
        last: String,
    },
    /// The quorum is shutting down or failed (REQUEST_TIMED_OUT).
    #[error("the metadata quorum is not running: {reason}")]
    Stopped {
        /// Why.
        reason: String,
    },
}

/// A response between nodes.
#[derive(Debug, Serialize, Deserialize)]
pub enum QuorumResponse {
    /// AppendEntries' answer.
    Append(Result<AppendEntriesResponse<TypeConfig>, RaftError<TypeConfig>>),
    /// RequestVote's (or pre-vote's) answer.
    Vote(Result<VoteResponse<TypeConfig>, RaftError<TypeConfig>>),
    /// The snapshot's answer (an error as text: the receiver stopped).
    Snapshot(Result<SnapshotResponse<TypeConfig>, String>),
    /// The active controller's answer.
    Controller(Result<Answer, ControllerUnavailable>),
    /// The quorum's state.
    Describe(Result<QuorumStatus, ControllerUnavailable>),
    /// The committed log for a broker-only node.
    Log(Result<LogChunk, ControllerUnavailable>),
    /// The cluster ids match: requests may follow.
    Welcome,
    /// The request could not be read, or the caller is of another cluster.
    Malformed(String),
}

/// Reads one frame; `Ok(None)` at a clean end of stream.
pub async fn read_frame<T: serde::de::DeserializeOwned>(
    s: &mut TcpStream,
) -> io::Result<Option<T>> {
    let mut len = [0u8; 4];
    match s.read_exact(&mut len).await {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {len} bytes is larger than {MAX_FRAME}"),
        ));
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Writes one frame.
pub async fn write_frame<T: Serialize>(s: &mut TcpStream, v: &T) -> io::Result<()> {
    let body = serde_json::to_vec(v).map_err(io::Error::other)?;
    let len = u32::try_from(body.len()).map_err(io::Error::other)?;
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&body);
    s.write_all(&out).await?;
    s.flush().await
}

/// One request/response exchange with the node at `addr` over `conn`
/// (connected first when empty; dropped after any failure so the next call
/// reconnects), within `timeout`.
pub async fn exchange(
    conn: &mut Option<TcpStream>,
    addr: &str,
    cluster_id: &str,
    req: &QuorumRequest,
    timeout: Duration,
) -> io::Result<QuorumResponse> {
    let run = async {
        if conn.is_none() {
            let mut s = TcpStream::connect_timeout(addr, timeout)
                .await
                .map_err(|e| io::Error::new(io::ErrorKind::ConnectionRefused, e.to_string()))?;
            let _ = s.set_nodelay(true);
            let hello = QuorumRequest::Hello {
                cluster_id: cluster_id.to_string(),
            };
            write_frame(&mut s, &hello).await?;
            match read_frame::<QuorumResponse>(&mut s).await? {
                Some(QuorumResponse::Welcome) => {}
                Some(QuorumResponse::Malformed(why)) => {
                    return Err(io::Error::new(io::ErrorKind::PermissionDenied, why))
                }
                other => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("unexpected answer to hello: {other:?}"),
                    ))
                }
            }
            *conn = Some(s);
        }
        let Some(s) = conn.as_mut() else {
            return Err(io::Error::other("no connection"));
        };
        write_frame(s, req).await?;
        read_frame::<QuorumResponse>(s)
            .await?
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"))
    };
    let out = match futures_lite::future::or(async { Some(run.await) }, async {
        glommio::timer::sleep(timeout).await;
        None
    })
    .await
    {
        Some(r) => r,
        None => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no answer from {addr} within {timeout:?}"),
        )),
    };
    if out.is_err() {
        *conn = None;
    }
    out
}

/// Idle connections to other nodes' controller listeners, for forwarded
/// requests: a call takes one (or connects), and gives it back after a
/// clean exchange.
#[derive(Debug, Default)]
pub struct Peers {
    cluster_id: String,
    idle: RefCell<HashMap<String, Vec<TcpStream>>>,
}

impl Peers {
    /// Connections of a node of cluster `cluster_id`.
    pub fn new(cluster_id: String) -> Peers {
        Peers {
            cluster_id,
            idle: RefCell::default(),
        }
    }

    /// Sends `req` to the node at `addr` and gives its response.
    pub async fn call(
        &self,
        addr: &str,
        req: &QuorumRequest,
        timeout: Duration,
    ) -> io::Result<QuorumResponse> {
        let mut conn = self.idle.borrow_mut().get_mut(addr).and_then(Vec::pop);
        let out = exchange(&mut conn, addr, &self.cluster_id, req, timeout).await;
        if let Some(c) = conn {
            self.idle
                .borrow_mut()
                .entry(addr.to_string())
                .or_default()
                .push(c);
        }
        out
    }
}
