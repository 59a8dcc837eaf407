//! The controller listener: other nodes' Raft RPCs and their requests for
//! the active controller, answered on shard 0. A malformed frame closes
//! that connection only (with a log line). A connection is secured as the
//! listener's protocol says (TLS, SASL; see `rpc`), and only a welcome
//! hello opens it to Raft and controller requests.

use std::net::SocketAddr;
use std::rc::Rc;

use glommio::net::{TcpListener, TcpStream};
use openraft::storage::Snapshot;

use super::rpc::{
    read_frame, write_frame, QuorumRequest, QuorumResponse, MAX_FRAME, MAX_FRAME_BEFORE_HELLO,
};
use super::Quorum;
use crate::config::SecurityProtocol;
use crate::security::sasl::CredentialSource;
use crate::security::session::{Authenticated, Session};
use crate::transport::{TlsState, Transport};

/// Accepts on `listener` until the quorum is dropped.
pub async fn serve(listener: TcpListener, quorum: std::rc::Weak<Quorum>) {
    loop {
        match listener.accept().await {
            Ok(stream) => {
                let Some(q) = quorum.upgrade() else { break };
                let peer = stream
                    .peer_addr()
                    .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
                let _ = stream.set_nodelay(true);
                crate::stall::spawn_local("controller connection", async move {
                    connection(q, stream, peer).await;
                })
                .detach();
            }
            Err(e) => {
                log::warn!("controller listener: accept failed: {e}");
                glommio::timer::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
    }
}

async fn connection(q: Rc<Quorum>, stream: TcpStream, peer: SocketAddr) {
    let listener = q.settings.controller_listener.clone();
    let mut s = match listener.as_ref().and_then(|l| l.tls.clone()) {
        None => Transport::Plain(stream),
        Some(config) => match TlsState::server(config) {
            Ok(tls) => Transport::Tls(stream, Box::new(tls)),
            Err(e) => {
                log::warn!("controller listener: TLS for {peer}: {e}");
                return;
            }
        },
    };
    if s.is_tls() {
        let timer = async {
            glommio::timer::sleep(HANDSHAKE_TIMEOUT).await;
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "no completed handshake",
            ))
        };
        if let Err(e) = futures_lite::future::or(s.handshake(), timer).await {
            log::info!("controller listener: TLS handshake with {peer} failed: {e}");
            return;
        }
    }
    let mut session = listener.clone().map(|l| Session::new(l, peer));
    if let (Some(session), Some(dn)) = (
        session.as_mut(),
        s.peer_certificates().and_then(|c| {
            c.first()
                .and_then(|d| crate::security::principal::rfc2253(d))
        }),
    ) {
        session.set_certificate_subject(&dn);
    }
    // Until the hello is welcome: the SASL exchange, then the hello.
    loop {
        let req = match read_frame::<QuorumRequest>(&mut s, MAX_FRAME_BEFORE_HELLO).await {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(e) => {
                log::warn!("controller listener: closing the connection from {peer}: {e}");
                return;
            }
        };
        match (req, session.as_mut()) {
            (QuorumRequest::SaslHandshake { mechanism }, Some(session)) => {
                let answer = session.handshake(&mechanism, 1).map_err(|e| e.to_string());
                let refused = answer.is_err();
                if write_frame(&mut s, &QuorumResponse::SaslHandshake(answer))
                    .await
                    .is_err()
                    || refused
                {
                    return;
                }
            }
            (QuorumRequest::SaslAuthenticate { token }, Some(session)) => {
                let image = q.image();
                let creds = WithBootstrap {
                    image: &image,
                    bootstrap: &q.settings.bootstrap_scram,
                };
                let nonce = uuid::Uuid::new_v4().simple().to_string();
                let step = session.authenticate(
                    &token,
                    2,
                    &creds as &dyn CredentialSource,
                    std::time::Instant::now(),
                    now_ms(),
                    &nonce,
                );
                let (answer, failed) = match step {
                    Authenticated::Continue(t) | Authenticated::Done { token: t, .. } => {
                        (Ok(t), None)
                    }
                    Authenticated::Failed { message, detail } => (Err(message), Some(detail)),
                };
                let written = write_frame(&mut s, &QuorumResponse::SaslAuthenticate(answer)).await;
                if let Some(detail) = failed {
                    log::warn!("controller listener: authentication of {peer} failed: {detail}");
                    glommio::timer::sleep(session.listener.failed_auth_delay).await;
                    return;
                }
                if written.is_err() {
                    return;
                }
            }
            (QuorumRequest::Hello { cluster_id }, session) => {
                if let Some(why) = refusal(&q, session.as_deref(), &cluster_id) {
                    log::error!("controller listener: refusing {peer}: {why}");
                    let _ = write_frame(&mut s, &QuorumResponse::Malformed(why)).await;
                    return;
                }
                if write_frame(&mut s, &QuorumResponse::Welcome).await.is_err() {
                    return;
                }
                break;
            }
            (_, _) => {
                log::warn!(
                    "controller listener: closing the connection from {peer}: a request before the hello"
                );
                let _ =
                    write_frame(&mut s, &QuorumResponse::Malformed("hello expected".into())).await;
                return;
            }
        }
    }
    loop {
        let req = match read_frame::<QuorumRequest>(&mut s, MAX_FRAME).await {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(e) => {
                log::warn!("controller listener: closing the connection from {peer}: {e}");
                let _ = write_frame(&mut s, &QuorumResponse::Malformed(e.to_string())).await;
                return;
            }
        };
        let resp = answer(&q, req).await;
        if let Err(e) = write_frame(&mut s, &resp).await {
            log::debug!("controller listener: {peer}: {e}");
            return;
        }
    }
}

/// Why a hello is refused: another cluster's id, a SASL listener's caller
/// that has not authenticated, or, on a listener that is not PLAINTEXT, a
/// principal outside `super.users`. None: welcome.
fn refusal(q: &Quorum, session: Option<&Session>, cluster_id: &str) -> Option<String> {
    if cluster_id != q.settings.cluster_id {
        return Some(format!(
            "it is of cluster {cluster_id}, this node of {}",
            q.settings.cluster_id
        ));
    }
    let session = session?;
    if !session.authenticated() {
        return Some("it has not authenticated (SASL listener)".into());
    }
    if session.listener.protocol != SecurityProtocol::Plaintext
        && !q.settings.super_users.contains(&session.principal)
    {
        return Some(format!(
            "{} is not in super.users (only brokers and super users may use the controller listener)",
            session.principal
        ));
    }
    None
}

/// The credentials a controller listener checks: the metadata log's, then
/// those of `fjord format --add-scram` (the nodes authenticate to each
/// other before the log holds any).
struct WithBootstrap<'a> {
    image: &'a crate::cluster::metadata::MetadataImage,
    bootstrap: &'a [crate::cluster::bootstrap_scram::BootstrapCredential],
}

impl CredentialSource for WithBootstrap<'_> {
    fn scram(
        &self,
        user: &str,
        mechanism: crate::security::scram::ScramMechanism,
    ) -> Option<crate::security::scram::ScramCredential> {
        self.image.scram(user, mechanism).or_else(|| {
            self.bootstrap
                .iter()
                .find(|c| c.name == user && c.mechanism == mechanism)
                .map(|c| c.credential.clone())
        })
    }
}

/// Wall-clock ms since the Unix epoch.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// How long a TLS client may take to complete its handshake.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

async fn answer(q: &Quorum, req: QuorumRequest) -> QuorumResponse {
    let Some(raft) = q.raft.as_ref() else {
        return QuorumResponse::Malformed("this node is not a voter".into());
    };
    match req {
        QuorumRequest::Append(r) => QuorumResponse::Append(raft.append_entries(r).await),
        QuorumRequest::Vote(r) => QuorumResponse::Vote(raft.vote(r).await),
        QuorumRequest::PreVote(r) => QuorumResponse::Vote(raft.pre_vote(r).await),
        QuorumRequest::Snapshot { vote, meta, data } => QuorumResponse::Snapshot(
            raft.install_full_snapshot(
                vote,
                Snapshot {
                    meta,
                    snapshot: data,
                },
            )
            .await
            .map_err(|e| e.to_string()),
        ),
        QuorumRequest::Controller(r) => QuorumResponse::Controller(q.handle(r).await),
        QuorumRequest::Describe => QuorumResponse::Describe(q.status()),
        QuorumRequest::FetchLog { broker_id, from } => QuorumResponse::Log(
            q.fetch_log(broker_id, from, std::time::Duration::from_millis(500))
                .await,
        ),
        QuorumRequest::Hello { .. } => QuorumResponse::Welcome,
        QuorumRequest::SaslHandshake { .. } | QuorumRequest::SaslAuthenticate { .. } => {
            QuorumResponse::Malformed("SASL after the hello".into())
        }
    }
}
