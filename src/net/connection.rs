//! One client connection on its shard: read frames, dispatch them, write
//! responses in request order (as Kafka guarantees per connection).
//!
//! Produce requests are pipelined: once a Produce has reserved its appends
//! (offsets assigned, writes handed to the I/O thread; see
//! `handlers::dispatch_pipelined`), the next request is read and dispatched
//! while the earlier writes complete, up to [`PIPELINE_DEPTH`] Produce
//! requests in flight; their responses are written in order as they
//! complete, once every complete frame in the receive buffer is dispatched,
//! those ready together in one write ([`deliver_ready`]), so a client with
//! a window of requests in flight is woken once per group of answers, not
//! once per answer. Any other request first waits until every earlier
//! response is written, then runs alone, as before.
//!
//! Frames are cut out of one receive buffer with `split_to` + `freeze`, so a
//! request's record bytes stay where the socket read put them until they are
//! written to the segment. A frame whose size is outside
//! [8, `socket.request.max.bytes`] closes the connection (logged at warn); a
//! frame that does not parse closes it too. Other connections are unaffected.
//!
//! Security: a TLS listener's connection completes its handshake first
//! (within [`TLS_HANDSHAKE_TIMEOUT`]); its bytes then go through
//! `transport::Transport`. Every frame passes the connection's session
//! (`security::session`): on a SASL listener only ApiVersions and
//! SaslHandshake before authentication (frames capped at
//! `sasl.server.max.receive.size`), SaslHandshake/SaslAuthenticate answered
//! by `handlers::sasl`, a failed authentication closed after
//! `connection.failed.authentication.delay.ms`, and a session past its
//! KIP-368 lifetime closed at its next request that is not a
//! re-authentication. Requests carry the listener and principal
//! (`RequestFrame::context`).

use std::cell::Cell;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use glommio::net::TcpStream;

use futures_channel::oneshot;
use futures_lite::AsyncReadExt;
use kafka_protocol::messages::ApiKey;

use super::sendfile::write_response;
use crate::handlers::{dispatch_pipelined, Outcome};
use crate::metrics::shard::RequestTiming;
use crate::protocol::ProtocolError;
use crate::protocol::RequestFrame;
use crate::security::session::{Gate, Session};
use crate::security::{ListenerSecurity, RequestContext};
use crate::shard::Shard;
use crate::transport::{TlsState, Transport};

/// Receive buffer growth step (bytes). Large, so that a frame cut by the end
/// of the buffer (whose prefix must then move) is rare relative to the bytes
/// received.
const READ_CHUNK: usize = 1 << 20;

/// Bytes zeroed and read through glommio when the socket had nothing ready.
const WAIT_WINDOW: usize = 4096;

/// Most Produce requests of one connection in flight at once (reserved,
/// their writes and commits pending).
pub const PIPELINE_DEPTH: usize = 8;

/// How long a TLS client may take to complete its handshake before the
/// connection is closed (a stalled handshake holds a connection slot).
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Takes the bytes buffered on a connection and `socket.request.max.bytes`;
/// gives the size of the first frame (its `i32` size field, the 4 bytes of
/// the field not counted), None while fewer than 4 bytes are buffered, or
/// [`ProtocolError::FrameSize`] when the size is outside [8, `max`] (the
/// connection is then closed).
pub fn frame_size(buf: &[u8], max: usize) -> Result<Option<usize>, ProtocolError> {
    let Some(field) = buf.first_chunk::<4>() else {
        return Ok(None);
    };
    let size = i64::from(i32::from_be_bytes(*field));
    match usize::try_from(size) {
        Ok(s) if (8..=max).contains(&s) => Ok(Some(s)),
        _ => Err(ProtocolError::FrameSize { size, max }),
    }
}

/// Receives what the socket holds now into the spare capacity of `buf`
/// (recv(2) with MSG_DONTWAIT, no zero-fill); gives None when nothing is
/// ready, Some(0) at EOF.
fn try_recv(
    transport: &mut Transport,
    buf: &mut BytesMut,
    max_frame: usize,
) -> std::io::Result<Option<usize>> {
    let stream = match transport {
        Transport::Plain(s) => s,
        Transport::Tls(..) => return transport.tls_try_recv(buf),
    };
    if buf.capacity() - buf.len() < 4096 {
        buf.reserve(READ_CHUNK.min(max_frame + 4).max(4096));
    }
    crate::transport::recv_spare(std::os::fd::AsRawFd::as_raw_fd(stream), buf)
}

/// A request's outcome and its timing (None: not counted in the request
/// metrics), as dispatch gives them.
type Dispatched = (Outcome, Option<RequestTiming>);

/// Produce requests dispatched and not yet answered, oldest first. Dropped
/// (connection closed) ones keep running to the end, unanswered, so no
/// append is abandoned half way (their timing counts them when dropped).
/// Beside each task, a flag its task sets when its outcome acts on the
/// connection (a close, or a quota's throttle and mute): such an outcome is
/// delivered before the next frame is read, not merged later. Each entry
/// keeps its request's Produce version, for the log line of a close.
struct InFlight(VecDeque<(glommio::Task<Dispatched>, Rc<Cell<bool>>, i16)>);

impl InFlight {
    /// Dispatches one Produce request in a task of its own (`dispatch`
    /// is [`dispatch_pipelined`] with its reservation signal; `version` is
    /// the request's Produce version).
    fn push(
        &mut self,
        version: i16,
        dispatch: impl std::future::Future<Output = Dispatched> + 'static,
    ) {
        // Boxed here, so that the moves into the task move a pointer, not
        // the handler's state.
        let dispatch = Box::pin(dispatch);
        let acts = Rc::new(Cell::new(false));
        let flag = acts.clone();
        let task = crate::shard::stall::spawn_local("produce", async move {
            let outcome = dispatch.await;
            if matches!(outcome.0, Outcome::Close(_) | Outcome::Throttled(_)) {
                flag.set(true);
            }
            outcome
        });
        self.0.push_back((task, acts, version));
    }

    /// The oldest task, taken out, with its request's Produce version.
    fn pop_front(&mut self) -> Option<(glommio::Task<Dispatched>, i16)> {
        self.0.pop_front().map(|(t, _, v)| (t, v))
    }

    /// True when a finished task's outcome acts on the connection.
    fn acts(&self) -> bool {
        self.0.iter().any(|(_, a, _)| a.get())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        for (t, _, _) in self.0.drain(..) {
            t.detach();
        }
    }
}

/// Delivers every Produce answer still in flight, in order (waiting for
/// each), those ready together in one write: before a request that runs
/// alone, before a mute is waited out, before the connection closes for a
/// later frame, and when the client half-closes (their records are
/// appended, so the client is told).
/// Gives false when the connection must close.
async fn deliver_all(
    stream: &mut Transport,
    peer: SocketAddr,
    inflight: &mut InFlight,
    mute: &mut Option<Instant>,
) -> bool {
    while let Some((t, version)) = inflight.pop_front() {
        let oldest = t.await;
        if !deliver_ready(stream, peer, inflight, Some((oldest, version)), mute).await {
            return false;
        }
    }
    true
}

/// Writes (or acts on) one request's outcome and tells its timing when
/// the response's send started and ended (a request without a response
/// is counted when its timing drops, here). Gives false when the
/// connection must close.
async fn deliver(
    stream: &mut Transport,
    peer: SocketAddr,
    (outcome, timing): Dispatched,
    what: (ApiKey, i16),
    mute: &mut Option<Instant>,
) -> bool {
    match outcome {
        Outcome::Respond(resp) => {
            let send_start = Instant::now();
            let written = write_response(stream, resp).await;
            if let Some(t) = timing {
                t.sent(send_start, Instant::now());
            }
            if let Err(e) = written {
                log::debug!("connection from {peer} closed while writing: {e}");
                return false;
            }
            true
        }
        Outcome::NoResponse => true,
        Outcome::Throttled(t) => {
            // KIP-219: a response the client backs off on goes at once; an
            // older version's is held. Either way the connection takes no
            // further request until the throttle time is over: one
            // deadline per connection (the latest), waited for by
            // `wait_mute` before the next request is read or dispatched.
            let until = Instant::now() + Duration::from_millis(t.ms);
            if t.mode == crate::handlers::quota::Mode::Held {
                glommio::timer::sleep(Duration::from_millis(t.ms)).await;
            }
            // A held response's throttle time is in its response queue
            // time.
            if let Some(resp) = t.response {
                let send_start = Instant::now();
                let written = write_response(stream, resp).await;
                if let Some(t) = timing {
                    t.sent(send_start, Instant::now());
                }
                if let Err(e) = written {
                    log::debug!("connection from {peer} closed while writing: {e}");
                    return false;
                }
            }
            if t.mode == crate::handlers::quota::Mode::ClientBacksOff {
                *mute = Some(mute.map_or(until, |m| m.max(until)));
            }
            true
        }
        Outcome::Close(reason) => {
            log::warn!(
                "closing connection from {peer} after {:?} v{}: {reason}",
                what.0,
                what.1
            );
            false
        }
    }
}

/// Answers the Produce requests at the front of `inflight` that are already
/// done (`first`, when given, is the oldest's outcome and Produce version,
/// taken already), in order. Consecutive responses go out as one write, so
/// a client with several requests in flight is woken once for all the
/// answers that were ready together; any other outcome (throttled, no
/// response, close) is delivered alone as [`deliver`] does. Gives false
/// when the connection must close.
async fn deliver_ready(
    stream: &mut Transport,
    peer: SocketAddr,
    inflight: &mut InFlight,
    first: Option<(Dispatched, i16)>,
    mute: &mut Option<Instant>,
) -> bool {
    let mut ready: Vec<(Dispatched, i16)> = first.into_iter().collect();
    loop {
        if let Some((front, _, version)) = inflight.0.front_mut() {
            let version = *version;
            if let Some(outcome) = futures_lite::future::poll_once(front).await {
                inflight.pop_front();
                ready.push((outcome, version));
                continue;
            }
        }
        break;
    }
    let mut merged: Vec<crate::protocol::ResponseChunk> = Vec::new();
    let mut timings: Vec<RequestTiming> = Vec::new();
    for ((outcome, timing), version) in ready {
        match outcome {
            Outcome::Respond(resp) => {
                merged.extend(resp.chunks);
                timings.extend(timing);
            }
            other => {
                if !send_merged(stream, peer, &mut merged, &mut timings).await
                    || !deliver(
                        stream,
                        peer,
                        (other, timing),
                        (ApiKey::Produce, version),
                        mute,
                    )
                    .await
                {
                    return false;
                }
            }
        }
    }
    send_merged(stream, peer, &mut merged, &mut timings).await
}

/// Writes the gathered response chunks as one response and counts each
/// request's timing with the write's start and end; gives false when the
/// connection must close.
async fn send_merged(
    stream: &mut Transport,
    peer: SocketAddr,
    merged: &mut Vec<crate::protocol::ResponseChunk>,
    timings: &mut Vec<RequestTiming>,
) -> bool {
    if merged.is_empty() {
        for t in timings.drain(..) {
            let now = Instant::now();
            t.sent(now, now);
        }
        return true;
    }
    let send_start = Instant::now();
    let written = write_response(
        stream,
        crate::protocol::Response {
            chunks: std::mem::take(merged),
        },
    )
    .await;
    let send_end = Instant::now();
    for t in timings.drain(..) {
        t.sent(send_start, send_end);
    }
    if let Err(e) = written {
        log::debug!("connection from {peer} closed while writing: {e}");
        return false;
    }
    true
}

/// Receives into the spare capacity of `buf` without zero-filling it first:
/// recv(2) with MSG_DONTWAIT straight into the buffer's uninitialised tail
/// (through a raw pointer, so no `&mut [u8]` to uninitialised memory is
/// formed); when nothing is ready, glommio's own read (which waits for
/// readability) fills a small zeroed window. Gives the bytes received, 0 at
/// EOF.
async fn recv_into(
    transport: &mut Transport,
    buf: &mut BytesMut,
    max_frame: usize,
) -> std::io::Result<usize> {
    let stream = match transport {
        Transport::Plain(s) => s,
        Transport::Tls(..) => {
            // Bytes the frame being read still misses (0 when its size is
            // not known yet or not valid).
            let want = match frame_size(buf, max_frame) {
                Ok(Some(size)) => (4 + size).saturating_sub(buf.len()),
                _ => 0,
            };
            return transport.tls_recv(buf, want).await;
        }
    };
    if buf.capacity() - buf.len() < 4096 {
        buf.reserve(READ_CHUNK.min(max_frame + 4).max(4096));
    }
    match crate::transport::recv_spare(std::os::fd::AsRawFd::as_raw_fd(stream), buf)? {
        Some(n) => Ok(n),
        None => {
            // Nothing buffered: let glommio wait for readability and read
            // the first bytes into a small zeroed window; the next call
            // takes the rest with recv(2) again.
            let spare = buf.spare_capacity_mut();
            let k = spare.len().min(WAIT_WINDOW);
            // SAFETY: `k` bytes of spare capacity are zero-initialised
            // before a `&mut [u8]` is formed over them.
            let window = unsafe {
                std::ptr::write_bytes(spare.as_mut_ptr(), 0, k);
                std::slice::from_raw_parts_mut(spare.as_mut_ptr() as *mut u8, k)
            };
            let n = stream.read(window).await?;
            // SAFETY: the first `n` bytes of the window were written.
            unsafe { buf.set_len(buf.len() + n) };
            Ok(n)
        }
    }
}

/// One connection's transport and session.
pub struct Conn {
    /// Its bytes (plain TCP or TLS).
    pub transport: Transport,
    /// Its authentication.
    pub session: Session,
    /// The context its requests carry (refreshed when the session's
    /// principal changes).
    context: Arc<RequestContext>,
}

impl Conn {
    fn new(transport: Transport, session: Session) -> Conn {
        let context = context_of(&session);
        Conn {
            transport,
            session,
            context,
        }
    }
}

fn context_of(session: &Session) -> Arc<RequestContext> {
    Arc::new(RequestContext {
        listener: Arc::from(session.listener.name.as_str()),
        protocol: session.listener.protocol,
        principal: session.principal.clone(),
    })
}

/// Serves one connection accepted on `listener` until the peer closes it,
/// an I/O error occurs or a request forces a close. A TLS listener's
/// handshake runs first. A follower's fetch connection may move to the
/// shard owning its partitions at its first request after authentication
/// (`net::handoff`).
pub async fn serve(
    shard: Rc<Shard>,
    stream: TcpStream,
    peer: SocketAddr,
    listener: Arc<ListenerSecurity>,
) {
    let _ = stream.set_nodelay(true);
    let mut transport = match &listener.tls {
        None => Transport::Plain(stream),
        Some(config) => match TlsState::server(config.clone()) {
            Ok(tls) => Transport::Tls(stream, Box::new(tls)),
            Err(e) => {
                log::warn!("TLS on listener {} for {peer}: {e}", listener.name);
                return;
            }
        },
    };
    if transport.is_tls() {
        let timeout = async {
            glommio::timer::sleep(TLS_HANDSHAKE_TIMEOUT).await;
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "no completed handshake within 10 s",
            ))
        };
        if let Err(e) = futures_lite::future::or(transport.handshake(), timeout).await {
            log::info!(
                "TLS handshake with {peer} on listener {} failed: {e}",
                listener.name
            );
            return;
        }
    }
    let mut session = Session::new(listener, peer);
    if let Some(dn) = transport.peer_certificates().and_then(|c| {
        c.first()
            .and_then(|d| crate::security::principal::rfc2253(d))
    }) {
        session.set_certificate_subject(&dn);
    }
    let first = shard.shards > 1;
    let listener_name = session.listener.name.clone();
    serve_from(
        shard.clone(),
        Conn::new(transport, session),
        BytesMut::with_capacity(64 * 1024),
        first,
    )
    .await;
    // KIP-932: the share sessions this connection opened close with it.
    crate::handlers::share_fetch::connection_closed(&shard, &listener_name, peer).await;
}

/// Serves a connection another shard handed to this one (`net::handoff`),
/// starting with the bytes it had received (its first request, whole, and
/// anything after it). A panic ends this connection only, as for accepted
/// ones.
pub async fn serve_moved(
    shard: Rc<Shard>,
    stream: TcpStream,
    tls: Option<Box<TlsState>>,
    session: Session,
    buf: BytesMut,
) {
    let peer = session.peer;
    let listener_name = session.listener.name.clone();
    let conn = Conn::new(Transport::from_parts(stream, tls), session);
    let serving = std::panic::AssertUnwindSafe(serve_from(shard.clone(), conn, buf, false));
    if futures_lite::FutureExt::catch_unwind(serving)
        .await
        .is_err()
    {
        log::error!("closing connection from {peer}: the request handler panicked (a bug; see the panic message above)");
    }
    crate::handlers::share_fetch::connection_closed(&shard, &listener_name, peer).await;
}

/// Answers a SASL frame (a SaslHandshake/SaslAuthenticate request, or a
/// raw token after SaslHandshake v0). Gives false when the connection must
/// close (after the answer and the listener's delay).
async fn sasl_frame(shard: &Shard, conn: &mut Conn, frame: bytes::Bytes, raw: bool) -> bool {
    let peer = conn.session.peer;
    let answer = if raw {
        crate::handlers::sasl::raw_token(shard, &mut conn.session, &frame)
    } else {
        let request = match RequestFrame::parse(frame) {
            Ok(r) => r,
            Err(e) => {
                log::warn!("closing connection from {peer}: {e}");
                return false;
            }
        };
        match crate::handlers::sasl::handle(shard, &mut conn.session, &request) {
            Ok(a) => a,
            Err(e) => {
                log::warn!("closing connection from {peer}: {e}");
                return false;
            }
        }
    };
    conn.context = context_of(&conn.session);
    let what = (ApiKey::SaslAuthenticate, 0);
    let mut mute = None;
    if !deliver(
        &mut conn.transport,
        peer,
        (answer.outcome, None),
        what,
        &mut mute,
    )
    .await
    {
        return false;
    }
    match answer.close_after {
        None => true,
        Some((delay, reason)) => {
            log::info!("closing connection from {peer}: {reason}");
            if !delay.is_zero() {
                glommio::timer::sleep(delay).await;
            }
            conn.transport.close().await;
            false
        }
    }
}

/// While the connection is muted by a client quota: answers what is in
/// flight, then waits out the deadline. Gives false when the connection
/// must close.
async fn wait_mute(
    stream: &mut Transport,
    peer: SocketAddr,
    inflight: &mut InFlight,
    mute: &mut Option<Instant>,
) -> bool {
    if mute.is_none() {
        return true;
    }
    if !deliver_all(stream, peer, inflight, mute).await {
        return false;
    }
    if let Some(until) = mute.take() {
        let now = Instant::now();
        if until > now {
            glommio::timer::sleep(until - now).await;
        }
    }
    true
}

/// The connection loop: `buf` holds bytes already received; with
/// `may_move`, the first request after authentication may hand the
/// connection to another shard.
async fn serve_from(shard: Rc<Shard>, mut conn: Conn, mut buf: BytesMut, mut may_move: bool) {
    let socket_max = shard.config.socket_request_max_bytes;
    let peer = conn.session.peer;
    let mut inflight = InFlight(VecDeque::new());
    // Muted by a client quota until then (KIP-219).
    let mut mute: Option<Instant> = None;
    // When the last read ended: every complete frame in `buf` was
    // completed by it (frames are dispatched before the next read), so it
    // is when each was read whole (the start of its request queue time).
    let mut received = Instant::now();
    loop {
        if !wait_mute(&mut conn.transport, peer, &mut inflight, &mut mute).await {
            return;
        }
        let max = conn.session.max_frame(socket_max);
        // Dispatch every complete frame already buffered.
        while buf.len() >= 4 {
            if !wait_mute(&mut conn.transport, peer, &mut inflight, &mut mute).await {
                return;
            }
            let size = match frame_size(&buf, max) {
                Ok(Some(size)) => size,
                Ok(None) => break,
                Err(e) => {
                    log::warn!("closing connection from {peer}: {e}");
                    deliver_all(&mut conn.transport, peer, &mut inflight, &mut mute).await;
                    return;
                }
            };
            if buf.len() < 4 + size {
                // Only when the frame does not fit, grow by at least a whole
                // chunk: moving the partial frame (what `reserve` does) then
                // happens about once per chunk, not once per frame. Growth
                // follows the bytes received (doubling at most), so a client
                // that claims a huge frame and sends little does not make
                // the broker allocate what it claimed.
                let missing = 4 + size - buf.len();
                if buf.capacity() - buf.len() < missing {
                    buf.reserve(READ_CHUNK.max(missing.min(buf.len())));
                }
                break;
            }
            buf.advance(4);
            let frame = buf.split_to(size).freeze();
            let key = frame
                .first_chunk::<2>()
                .and_then(|k| ApiKey::try_from(i16::from_be_bytes(*k)).ok());
            match conn.session.gate(key, Instant::now()) {
                Gate::Serve => {}
                Gate::Close(reason) => {
                    log::warn!("closing connection from {peer}: {reason}");
                    deliver_all(&mut conn.transport, peer, &mut inflight, &mut mute).await;
                    return;
                }
                gate @ (Gate::Sasl | Gate::RawToken) => {
                    if !deliver_all(&mut conn.transport, peer, &mut inflight, &mut mute).await {
                        return;
                    }
                    if !sasl_frame(&shard, &mut conn, frame, gate == Gate::RawToken).await {
                        return;
                    }
                    break;
                }
            }
            let raw = (may_move && conn.session.authenticated()).then(|| frame.clone());
            let mut request = match RequestFrame::parse(frame) {
                Ok(mut r) => {
                    r.peer = Some(peer);
                    r
                }
                Err(e) => {
                    log::warn!("closing connection from {peer}: {e}");
                    deliver_all(&mut conn.transport, peer, &mut inflight, &mut mute).await;
                    return;
                }
            };
            request.context = Some(conn.context.clone());
            if let Some(raw) = raw.filter(|_| inflight.0.is_empty()) {
                use super::handoff::Placement;
                let placement = super::handoff::replica_fetch_owner(&shard, &request);
                may_move = placement == Placement::Undecided;
                if let Placement::Move(target) = placement {
                    let rest = std::mem::take(&mut buf);
                    match super::handoff::move_connection(&shard, target, conn, raw, rest).await {
                        Ok(()) => return,
                        Err((back, pending)) => {
                            // Not moved: served here, from this request.
                            return Box::pin(serve_from(shard, back, pending, false)).await;
                        }
                    }
                }
            }
            let api = request.api_key;
            let version = request.prefix.api_version;
            let name = crate::protocol::versions::api_name(api);
            crate::shard::stall::set_request(api as i16, name, version);
            let stream = &mut conn.transport;
            if api == ApiKey::Produce {
                let (tx, rx) = oneshot::channel();
                let sh = shard.clone();
                inflight.push(version, async move {
                    dispatch_pipelined(&sh, request, Some(tx), received).await
                });
                // Reserved: go on (up to the depth); else wait for the answer.
                let keep = if rx.await.is_ok() {
                    PIPELINE_DEPTH - 1
                } else {
                    0
                };
                // An outcome that closes the connection or mutes it (a
                // quota) acts before the next frame is read, as when each
                // request was served alone.
                while inflight.0.len() > keep || inflight.acts() {
                    let Some((t, version)) = inflight.pop_front() else {
                        break;
                    };
                    let oldest = t.await;
                    let first = Some((oldest, version));
                    if !deliver_ready(stream, peer, &mut inflight, first, &mut mute).await {
                        return;
                    }
                }
                // What is already done is answered once no complete frame
                // is left to dispatch (below), in one write.
                continue;
            }
            if !deliver_all(stream, peer, &mut inflight, &mut mute).await {
                return;
            }
            let outcome = dispatch_pipelined(&shard, request, None, received).await;
            if !deliver(stream, peer, outcome, (api, version), &mut mute).await {
                return;
            }
        }
        // Answer the Produce requests already done, in order, together.
        if !deliver_ready(&mut conn.transport, peer, &mut inflight, None, &mut mute).await {
            return;
        }
        // With Produce answers pending, take only what the socket already
        // holds; when it holds nothing, wait for the oldest and answer it
        // with those done by then.
        if !inflight.0.is_empty() {
            match try_recv(&mut conn.transport, &mut buf, max) {
                Ok(Some(0)) => {
                    // The client half-closed after its requests: their
                    // records are appended, so it is still told (a socket
                    // shut for writing still reads).
                    deliver_all(&mut conn.transport, peer, &mut inflight, &mut mute).await;
                    return;
                }
                Ok(Some(_)) => {
                    received = Instant::now();
                    continue;
                }
                Ok(None) => {
                    let Some((t, version)) = inflight.pop_front() else {
                        continue;
                    };
                    let oldest = t.await;
                    if !deliver_ready(
                        &mut conn.transport,
                        peer,
                        &mut inflight,
                        Some((oldest, version)),
                        &mut mute,
                    )
                    .await
                    {
                        return;
                    }
                    continue;
                }
                Err(e) => {
                    // A reset (plain TCP) or a broken TLS session: no
                    // answer could be written any more.
                    log::debug!("connection from {peer} read error: {e}");
                    return;
                }
            }
        }
        // A SASL answer may have left complete frames buffered.
        if frame_size(&buf, max)
            .ok()
            .flatten()
            .is_some_and(|n| buf.len() >= 4 + n)
        {
            continue;
        }
        // Read more bytes at the end of the buffer.
        match recv_into(&mut conn.transport, &mut buf, max).await {
            Ok(0) => return,
            Ok(_) => received = Instant::now(),
            Err(e) => {
                log::debug!("connection from {peer} read error: {e}");
                return;
            }
        }
    }
}
