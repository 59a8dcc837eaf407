//! The controller listener: other nodes' Raft RPCs and their requests for
//! the active controller, answered on shard 0. A malformed frame closes
//! that connection only (with a log line).

use std::net::SocketAddr;
use std::rc::Rc;

use glommio::net::{TcpListener, TcpStream};
use openraft::storage::Snapshot;

use super::rpc::{read_frame, write_frame, QuorumRequest, QuorumResponse};
use super::Quorum;

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

async fn connection(q: Rc<Quorum>, mut s: TcpStream, peer: SocketAddr) {
    // The first frame names the caller's cluster.
    match read_frame::<QuorumRequest>(&mut s).await {
        Ok(Some(QuorumRequest::Hello { cluster_id })) if cluster_id == q.settings.cluster_id => {
            if write_frame(&mut s, &QuorumResponse::Welcome).await.is_err() {
                return;
            }
        }
        Ok(Some(QuorumRequest::Hello { cluster_id })) => {
            log::error!(
                "controller listener: refusing {peer}: it is of cluster {cluster_id}, this node of {}",
                q.settings.cluster_id
            );
            let why = format!(
                "cluster id {cluster_id} is not this cluster's ({})",
                q.settings.cluster_id
            );
            let _ = write_frame(&mut s, &QuorumResponse::Malformed(why)).await;
            return;
        }
        Ok(Some(_)) => {
            log::warn!("controller listener: closing the connection from {peer}: no hello first");
            let _ = write_frame(&mut s, &QuorumResponse::Malformed("hello expected".into())).await;
            return;
        }
        Ok(None) => return,
        Err(e) => {
            log::warn!("controller listener: closing the connection from {peer}: {e}");
            return;
        }
    }
    loop {
        let req = match read_frame::<QuorumRequest>(&mut s).await {
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
    }
}
