//! One client connection on its shard: read frames, dispatch them one at a
//! time (responses leave in request order, as Kafka guarantees per
//! connection), write responses.
//!
//! Frames are cut out of one receive buffer with `split_to` + `freeze`, so a
//! request's record bytes stay where the socket read put them until they are
//! written to the segment. A frame whose size is outside
//! [8, `socket.request.max.bytes`] closes the connection (logged at warn); a
//! frame that does not parse closes it too. Other connections are unaffected.

use std::net::SocketAddr;
use std::rc::Rc;

use bytes::{Buf, BytesMut};
use futures_lite::AsyncReadExt;
use glommio::net::TcpStream;

use super::sendfile::write_response;
use crate::error::ProtocolError;
use crate::handlers::{dispatch, Outcome};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

const READ_CHUNK: usize = 64 * 1024;

/// Serves one connection until the peer closes it, an I/O error occurs or a
/// request forces a close.
pub async fn serve(shard: Rc<Shard>, mut stream: TcpStream, peer: SocketAddr) {
    let _ = stream.set_nodelay(true);
    let max = shard.config.socket_request_max_bytes;
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    loop {
        // Dispatch every complete frame already buffered.
        while buf.len() >= 4 {
            let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as i64;
            if size < 8 || size as usize > max {
                log::warn!(
                    "closing connection from {peer}: {}",
                    ProtocolError::FrameSize { size, max }
                );
                return;
            }
            let size = size as usize;
            if buf.len() < 4 + size {
                buf.reserve(4 + size - buf.len());
                break;
            }
            buf.advance(4);
            let frame = buf.split_to(size).freeze();
            let request = match RequestFrame::parse(frame) {
                Ok(mut r) => {
                    r.peer = Some(peer);
                    r
                }
                Err(e) => {
                    log::warn!("closing connection from {peer}: {e}");
                    return;
                }
            };
            let api = request.api_key;
            let version = request.prefix.api_version;
            match dispatch(&shard, request).await {
                Outcome::Respond(resp) => {
                    if let Err(e) = write_response(&mut stream, resp).await {
                        log::debug!("connection from {peer} closed while writing: {e}");
                        return;
                    }
                }
                Outcome::NoResponse => {}
                Outcome::Close(reason) => {
                    log::warn!("closing connection from {peer} after {api:?} v{version}: {reason}");
                    return;
                }
            }
        }
        // Read more bytes at the end of the buffer.
        let len = buf.len();
        let spare = buf.capacity() - len;
        let want = spare.max(READ_CHUNK.min(max + 4));
        buf.resize(len + want, 0);
        match stream.read(&mut buf[len..]).await {
            Ok(0) => return,
            Ok(n) => buf.truncate(len + n),
            Err(e) => {
                log::debug!("connection from {peer} read error: {e}");
                return;
            }
        }
    }
}
