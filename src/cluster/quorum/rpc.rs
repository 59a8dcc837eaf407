//! What nodes send each other on the controller listener: the Raft RPCs of
//! the metadata quorum and the requests forwarded to the active controller.
//! Each message is one frame, `u32` big-endian length then JSON; a
//! connection carries one request at a time, each answered before the next.
//! (Kafka's own KRaft RPCs are not spoken: no client talks to a controller
//! listener; DescribeQuorum is answered on the client listener.)
//!
//! A connection is secured as the controller listener's protocol says
//! (`listener.security.protocol.map`): TLS first, then, on a SASL
//! listener, a SASL exchange in this framing (`SaslHandshake`,
//! `SaslAuthenticate`, the same mechanisms and credentials as a Kafka
//! client's), then the hello. Before its hello is accepted a connection's
//! frames are capped at [`MAX_FRAME_BEFORE_HELLO`]; on any listener but
//! PLAINTEXT only a principal of `super.users` is welcome (the brokers'
//! own principals belong there, as Kafka recommends).

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::time::Duration;

use openraft::error::RaftError;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use serde::{Deserialize, Serialize};

use super::types::{SnapshotMeta, TypeConfig, Vote};
use crate::cluster::control::{ControllerReply, ControllerRequest};
use crate::security::sasl::SaslClient;
use crate::security::ClientSecurity;
use crate::transport::Transport;

/// Largest frame accepted (bytes): a snapshot of a large cluster fits.
pub const MAX_FRAME: usize = 256 << 20;

/// Largest frame accepted before a connection's hello is welcome (bytes):
/// the hello and the SASL exchange are small.
pub const MAX_FRAME_BEFORE_HELLO: usize = 64 << 10;

/// What a node presents to another's controller listener: its cluster id
/// (in the hello) and how it connects and authenticates.
#[derive(Debug, Clone)]
pub struct PeerAuth {
    /// This node's `cluster.id`.
    pub cluster_id: String,
    /// The controller listener's protocol and this node's credentials
    /// (`sasl.mechanism.controller.protocol`).
    pub client: ClientSecurity,
}

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
    /// A SASL listener's handshake: the mechanism the caller uses.
    SaslHandshake {
        /// The mechanism's name.
        mechanism: String,
    },
    /// One SASL token of the caller.
    SaslAuthenticate {
        /// The token.
        token: Vec<u8>,
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
    /// The handshake's answer: accepted, or why not.
    SaslHandshake(Result<(), String>),
    /// The server's token, or why the credentials were refused (the
    /// connection then closes).
    SaslAuthenticate(Result<Vec<u8>, String>),
    /// The request could not be read, or the caller is of another cluster.
    Malformed(String),
}

/// Reads one frame of at most `max` bytes; `Ok(None)` at a clean end of
/// stream.
pub async fn read_frame<T: serde::de::DeserializeOwned>(
    s: &mut Transport,
    max: usize,
) -> io::Result<Option<T>> {
    let mut len = [0u8; 4];
    match s.read_exact(&mut len).await {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {len} bytes is larger than {max}"),
        ));
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Writes one frame.
pub async fn write_frame<T: Serialize>(s: &mut Transport, v: &T) -> io::Result<()> {
    let body = serde_json::to_vec(v).map_err(io::Error::other)?;
    let len = u32::try_from(body.len()).map_err(io::Error::other)?;
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&body);
    s.write_all(&out).await
}

/// One request and its answer on a connection being opened.
async fn ask(s: &mut Transport, req: &QuorumRequest) -> io::Result<QuorumResponse> {
    write_frame(s, req).await?;
    read_frame::<QuorumResponse>(s, MAX_FRAME)
        .await?
        .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"))
}

/// Opens a connection to the controller listener at `addr`: TCP and TLS
/// ([`Transport::connect`]), the SASL exchange, the hello. Errors with
/// `PermissionDenied` when the other node refuses the credentials or the
/// cluster id.
async fn open(addr: &str, auth: &PeerAuth, timeout: Duration) -> io::Result<Transport> {
    let denied = |why: String| io::Error::new(io::ErrorKind::PermissionDenied, why);
    let unexpected = |r: QuorumResponse| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unexpected answer {r:?}"),
        )
    };
    let mut s = Transport::connect(addr, timeout, &auth.client).await?;
    if let Some(sasl) = &auth.client.sasl {
        let hs = QuorumRequest::SaslHandshake {
            mechanism: sasl.mechanism.name().to_string(),
        };
        match ask(&mut s, &hs).await? {
            QuorumResponse::SaslHandshake(Ok(())) => {}
            QuorumResponse::SaslHandshake(Err(why)) => return Err(denied(why)),
            other => return Err(unexpected(other)),
        }
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let (mut client, mut token) = SaslClient::start(
            sasl.mechanism,
            &sasl.username,
            &sasl.password,
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64),
            &nonce,
        );
        loop {
            match ask(&mut s, &QuorumRequest::SaslAuthenticate { token }).await? {
                QuorumResponse::SaslAuthenticate(Ok(server)) => {
                    let (c, next) = crate::transport::sasl_step(client, server).await?;
                    client = c;
                    match next {
                        Some(t) => token = t,
                        None => break,
                    }
                }
                QuorumResponse::SaslAuthenticate(Err(why)) => return Err(denied(why)),
                other => return Err(unexpected(other)),
            }
        }
    }
    let hello = QuorumRequest::Hello {
        cluster_id: auth.cluster_id.clone(),
    };
    match ask(&mut s, &hello).await? {
        QuorumResponse::Welcome => Ok(s),
        QuorumResponse::Malformed(why) => Err(denied(why)),
        other => Err(unexpected(other)),
    }
}

/// One request/response exchange with the node at `addr` over `conn`
/// (connected first when empty; dropped after any failure so the next call
/// reconnects), within `timeout`.
pub async fn exchange(
    conn: &mut Option<Transport>,
    addr: &str,
    auth: &PeerAuth,
    req: &QuorumRequest,
    timeout: Duration,
) -> io::Result<QuorumResponse> {
    let run = async {
        if conn.is_none() {
            *conn = Some(open(addr, auth, timeout).await?);
        }
        let Some(s) = conn.as_mut() else {
            return Err(io::Error::other("no connection"));
        };
        ask(s, req).await
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
#[derive(Debug)]
pub struct Peers {
    auth: PeerAuth,
    idle: RefCell<HashMap<String, Vec<Transport>>>,
}

impl Peers {
    /// Connections of a node presenting `auth`.
    pub fn new(auth: PeerAuth) -> Peers {
        Peers {
            auth,
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
        let out = exchange(&mut conn, addr, &self.auth, req, timeout).await;
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
