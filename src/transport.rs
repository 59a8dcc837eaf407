//! The byte stream of a Kafka connection: plain TCP, or TLS over it
//! (rustls, driven here by hand rather than through an async adaptor, so
//! that the connection keeps its raw `recv(2)` fast path, a plaintext
//! socket keeps `sendfile(2)`, and a TLS connection's state can move to
//! another shard with its socket: [`TlsState`] is `Send`, the glommio
//! socket is rebuilt from a duplicated descriptor on the target shard).
//!
//! Used by the broker's connections (`net`, server side) and by its own
//! connections to other brokers and the controllers (client side).
//!
//! Reads: plaintext already decrypted by rustls is given first; then
//! ciphertext is read from the socket (waiting for readability through
//! glommio), given to rustls and decrypted. Writes: plaintext goes to
//! rustls's buffer in pieces of at most 64 KiB, each followed by the TLS
//! records it produced. Errors of the TLS layer (a bad record, a failed
//! handshake) come back as `io::Error`s of kind `InvalidData`, after the
//! alert rustls wants sent is written.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;

use crate::security::sasl::SaslClient;
use crate::security::ClientSecurity;

/// Spare room made in `pending` before a receive (bytes): ciphertext is
/// received straight into it, up to this much per recv(2).
const CIPHER_CHUNK: usize = 64 * 1024;

/// Bytes read through glommio (which waits for readability) when the
/// socket had nothing ready; the rest follows with recv(2) at once.
const WAIT_WINDOW: usize = 4096;

/// Largest SO_RCVLOWAT set while a frame's rest is awaited (bytes): the
/// kernel grows the socket's receive buffer to hold it.
const RCVLOWAT_MAX: usize = 256 * 1024;

/// Smallest missing amount worth a SO_RCVLOWAT change (bytes): below one
/// record's worth, the wake it saves does not pay for the system calls.
const RCVLOWAT_MIN: usize = 16 * 1024;

/// Largest TLS record on the wire (bytes): a 5-byte header and at most
/// 2^14 + 2048 bytes of payload (RFC 5246 §6.2.3; TLS 1.3 allows less).
const RECORD_MAX_PAYLOAD: usize = (1 << 14) + 2048;

/// Plaintext handed to rustls before its records are written (bytes).
const PLAIN_CHUNK: usize = 64 * 1024;

/// Decrypted plaintext rustls may hold before more ciphertext is given to
/// it (bytes): rustls refuses `read_tls` once it holds more than its
/// received-plaintext limit (16 KiB), so ciphertext beyond that waits in
/// `pending` until the plaintext is taken.
const PLAINTEXT_HIGH: usize = 16 * 1024;

/// Where the ciphertext given to rustls stands in TLS's record framing
/// (each record a 5-byte header: content type 20–24, version 3.x, payload
/// length; then the payload): how many bytes of a record not yet complete
/// rustls holds, which no plaintext has come out of yet.
#[derive(Debug, Default)]
struct Framing {
    /// Header bytes of the next record seen so far (0–4).
    header: [u8; 5],
    header_have: usize,
    /// Payload length of the record being given, and how much of it is
    /// still to come.
    record_len: usize,
    body_left: usize,
    /// Bytes that are not TLS records were seen (rustls refuses them).
    broken: bool,
}

impl Framing {
    /// Takes bytes just given to rustls, in stream order.
    fn advance(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() && !self.broken {
            if self.body_left > 0 {
                let k = self.body_left.min(bytes.len());
                self.body_left -= k;
                bytes = &bytes[k..];
                continue;
            }
            let k = (5 - self.header_have).min(bytes.len());
            self.header[self.header_have..self.header_have + k].copy_from_slice(&bytes[..k]);
            self.header_have += k;
            bytes = &bytes[k..];
            if self.header_have == 5 {
                let h = self.header;
                let len = usize::from(u16::from_be_bytes([h[3], h[4]]));
                self.broken = !(20..=24).contains(&h[0]) || h[1] != 3 || len > RECORD_MAX_PAYLOAD;
                self.header_have = 0;
                self.record_len = len;
                self.body_left = len;
            }
        }
    }

    /// Bytes of the unfinished record given to rustls (None once the
    /// framing is lost).
    fn held(&self) -> Option<usize> {
        if self.broken {
            None
        } else if self.body_left > 0 {
            Some(5 + self.record_len - self.body_left)
        } else {
            Some(self.header_have)
        }
    }
}

/// The TLS half of a connection, apart from its socket: `Send`, so it can
/// go to another shard with the socket's duplicate.
pub struct TlsState {
    conn: rustls::Connection,
    /// Ciphertext read but not yet taken by rustls (received into its
    /// spare capacity; taken from its front in O(1)).
    pending: BytesMut,
    /// TLS records to send, reused from one write to the next.
    outgoing: Vec<u8>,
    /// The socket's SO_RCVLOWAT as last set here (bytes; the kernel's
    /// default is 1).
    rcvlowat: usize,
    /// The record framing of the ciphertext rustls has taken.
    framing: Framing,
    /// The peer closed the TCP connection.
    eof: bool,
}

impl std::fmt::Debug for TlsState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsState")
            .field("handshaking", &self.conn.is_handshaking())
            .field("pending", &self.pending.len())
            .field("eof", &self.eof)
            .finish()
    }
}

/// A connection's stream.
pub enum Transport {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP.
    Tls(TcpStream, Box<TlsState>),
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Transport::Plain(_) => f.write_str("Transport::Plain"),
            Transport::Tls(_, s) => write!(f, "Transport::Tls({s:?})"),
        }
    }
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl TlsState {
    /// A server-side TLS state for a new connection.
    pub fn server(config: std::sync::Arc<rustls::ServerConfig>) -> io::Result<TlsState> {
        let conn = rustls::ServerConnection::new(config).map_err(tls_error)?;
        Ok(TlsState {
            conn: conn.into(),
            pending: BytesMut::new(),
            outgoing: Vec::new(),
            rcvlowat: 1,
            framing: Framing::default(),
            eof: false,
        })
    }

    /// A client-side TLS state towards `host` (checked against the
    /// server's certificate unless the configuration says otherwise).
    pub fn client(
        config: std::sync::Arc<rustls::ClientConfig>,
        host: &str,
    ) -> io::Result<TlsState> {
        let name = rustls::pki_types::ServerName::try_from(host.to_string())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let conn = rustls::ClientConnection::new(config, name).map_err(tls_error)?;
        Ok(TlsState {
            conn: conn.into(),
            pending: BytesMut::new(),
            outgoing: Vec::new(),
            rcvlowat: 1,
            framing: Framing::default(),
            eof: false,
        })
    }

    /// The peer's certificate chain (DER), once the handshake is done.
    pub fn peer_certificates(&self) -> Option<Vec<Vec<u8>>> {
        self.conn
            .peer_certificates()
            .map(|c| c.iter().map(|d| d.as_ref().to_vec()).collect())
    }

    /// Gives the ciphertext in `pending` to rustls and decrypts it, until
    /// all is given or rustls holds [`PLAINTEXT_HIGH`] bytes of plaintext
    /// (the rest stays in `pending` for after [`TlsState::take_plain`]).
    /// Errors when a record is bad (the alert is then queued).
    fn absorb(&mut self) -> io::Result<()> {
        let mut rd: &[u8] = &self.pending;
        let total = rd.len();
        let mut result = Ok(());
        while !rd.is_empty() {
            match self.conn.process_new_packets() {
                Ok(state) if state.plaintext_bytes_to_read() >= PLAINTEXT_HIGH => break,
                Ok(_) => {}
                Err(e) => {
                    result = Err(tls_error(e));
                    break;
                }
            }
            match self.conn.read_tls(&mut rd) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if result.is_ok() {
            result = self
                .conn
                .process_new_packets()
                .map(|_| ())
                .map_err(tls_error);
        }
        let consumed = total - rd.len();
        self.framing.advance(&self.pending[..consumed]);
        self.pending.advance(consumed);
        result
    }

    /// Before waiting for ciphertext on socket `fd` while `want` plaintext
    /// bytes are missing from the frame being read: sets the socket's
    /// SO_RCVLOWAT so that the kernel signals readability only once the
    /// rest can have arrived (each ciphertext byte carries at most one
    /// plaintext byte; the ciphertext in `pending` and the unfinished
    /// record's bytes rustls holds may carry some of the rest), at most
    /// [`RCVLOWAT_MAX`]; back to 1 when nothing large is missing or the
    /// framing is lost. A frame sent as several TLS records then costs one wake
    /// instead of one per record. The kernel still wakes at EOF and when
    /// its receive window is nearly full. Changes the option only when the
    /// value differs; a failure leaves the default behaviour.
    fn set_rcvlowat(&mut self, fd: i32, want: usize) {
        let held = self.framing.held().map(|h| h + self.pending.len());
        let mut lowat = held.map_or(0, |h| want.saturating_sub(h).min(RCVLOWAT_MAX));
        if lowat < RCVLOWAT_MIN {
            lowat = 1;
        }
        if lowat == self.rcvlowat {
            return;
        }
        let value = lowat as libc::c_int;
        // SAFETY: setsockopt reads `size_of::<c_int>()` bytes from a live
        // `c_int`.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVLOWAT,
                &value as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            self.rcvlowat = lowat;
        }
    }

    /// Receives what the socket `fd` holds now (recv(2) with MSG_DONTWAIT)
    /// straight into the spare capacity of `pending`, without zero-filling
    /// it; gives the bytes received, None when nothing is ready, `Some(0)`
    /// at EOF (and marks it).
    fn recv_now(&mut self, fd: i32) -> io::Result<Option<usize>> {
        if self.pending.capacity() - self.pending.len() < WAIT_WINDOW {
            self.pending.reserve(CIPHER_CHUNK);
        }
        let got = recv_spare(fd, &mut self.pending)?;
        if got == Some(0) {
            self.eof = true;
        }
        Ok(got)
    }

    /// [`TlsState::absorb`] of ciphertext already in `pending`; true when
    /// rustls took some of it (more plaintext may be ready).
    fn absorb_pending(&mut self) -> io::Result<bool> {
        let before = self.pending.len();
        if before == 0 {
            return Ok(false);
        }
        self.absorb()?;
        Ok(self.pending.len() < before)
    }

    /// Moves the plaintext rustls has decrypted into `buf`, giving rustls
    /// the ciphertext still in `pending` first when it holds none; gives
    /// the bytes moved, `Some(0)` once the peer closed TLS cleanly
    /// (close_notify), None when nothing is decrypted yet.
    fn take_plain(&mut self, buf: &mut BytesMut) -> io::Result<Option<usize>> {
        loop {
            let state = self.conn.process_new_packets().map_err(tls_error)?;
            let avail = state.plaintext_bytes_to_read();
            if avail == 0 {
                if self.absorb_pending()? {
                    continue;
                }
                return Ok(state.peer_has_closed().then_some(0));
            }
            let start = buf.len();
            buf.resize(start + avail, 0);
            return match self.conn.reader().read(&mut buf[start..]) {
                Ok(n) => {
                    buf.truncate(start + n);
                    Ok(Some(n))
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    buf.truncate(start);
                    Ok(None)
                }
                Err(e) => {
                    buf.truncate(start);
                    Err(e)
                }
            };
        }
    }
}

/// Receives what socket `fd` holds now into the spare capacity of `buf`
/// (recv(2) with MSG_DONTWAIT, no zero-fill; the caller makes the room):
/// gives the bytes received, None when nothing is ready, `Some(0)` at EOF.
/// Shared by the plaintext receive path (`net::connection`) and TLS's.
pub fn recv_spare(fd: i32, buf: &mut BytesMut) -> io::Result<Option<usize>> {
    loop {
        let spare = buf.spare_capacity_mut();
        // SAFETY: the pointer and length describe `buf`'s spare capacity,
        // which recv writes at most `len` bytes into; `set_len` covers only
        // the bytes the kernel initialised.
        let n = unsafe {
            libc::recv(
                fd,
                spare.as_mut_ptr() as *mut libc::c_void,
                spare.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n >= 0 {
            let n = n as usize;
            // SAFETY: recv initialised the first `n` spare bytes.
            unsafe { buf.set_len(buf.len() + n) };
            return Ok(Some(n));
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EAGAIN) => return Ok(None),
            Some(libc::EINTR) => continue,
            _ => return Err(err),
        }
    }
}

/// Writes the TLS records rustls has queued to `stream` (through one
/// buffer that the connection keeps).
async fn flush_tls(stream: &mut TcpStream, tls: &mut TlsState) -> io::Result<()> {
    if !tls.conn.wants_write() {
        return Ok(());
    }
    let mut out = std::mem::take(&mut tls.outgoing);
    let mut result = Ok(());
    while tls.conn.wants_write() {
        out.clear();
        if let Err(e) = tls.conn.write_tls(&mut out) {
            result = Err(e);
            break;
        }
        if let Err(e) = stream.write_all(&out).await {
            result = Err(e);
            break;
        }
    }
    out.clear();
    tls.outgoing = out;
    result
}

/// Reads ciphertext and gives it to rustls, `want` being the plaintext
/// bytes the caller still misses (0: unknown); true at EOF. What the socket
/// holds is taken with recv(2) at once; only when it holds nothing does
/// this wait (a small read through glommio, then the rest with recv(2)),
/// as the plaintext path does, so a busy connection costs no reactor
/// round trip per read.
async fn read_cipher(stream: &mut TcpStream, tls: &mut TlsState, want: usize) -> io::Result<bool> {
    let fd = stream.as_raw_fd();
    if tls.recv_now(fd)?.is_none() {
        tls.set_rcvlowat(fd, want);
        let mut window = [0u8; WAIT_WINDOW];
        let n = stream.read(&mut window).await?;
        if n == 0 {
            tls.eof = true;
        } else {
            tls.pending.extend_from_slice(&window[..n]);
            // EOF right after is noted (`eof`) and seen on the next read.
            let _ = tls.recv_now(fd)?;
        }
    }
    if tls.pending.is_empty() && tls.eof {
        return Ok(true);
    }
    let absorbed = tls.absorb();
    // An alert for a bad record, or the handshake's next flight.
    flush_tls(stream, tls).await?;
    absorbed.map(|()| false)
}

/// A socket-buffer key's value (`socket.send.buffer.bytes` and the like)
/// as the size to set (bytes), None for 0 or -1: the kernel's own size and
/// autotuning then, as Kafka leaves a -1 to the OS.
pub fn buffer_size(value: i32) -> Option<usize> {
    usize::try_from(value).ok().filter(|&n| n > 0)
}

/// The size in effect (bytes) when the kernel gave a socket less than the
/// `asked` bytes of a buffer key (it caps sizes at net.core.wmem_max /
/// rmem_max without an error); None when it did not, or `got` (the
/// getsockopt result: twice the size in effect) is an error.
pub fn capped(asked: usize, got: io::Result<usize>) -> Option<usize> {
    got.ok().map(|g| g / 2).filter(|&g| g < asked)
}

impl Transport {
    /// Connects to `addr` (`host:port`) within `timeout` with `security`'s
    /// protocol: the TCP connection, the TLS handshake and the SASL exchange.
    /// Errors with the connect failure, the handshake's, or
    /// `PermissionDenied` when the other broker refuses the credentials.
    pub async fn connect(
        addr: &str,
        timeout: Duration,
        security: &ClientSecurity,
    ) -> io::Result<Transport> {
        let stream = TcpStream::connect_timeout(addr, timeout)
            .await
            .map_err(|e| io::Error::new(io::ErrorKind::ConnectionRefused, e.to_string()))?;
        let _ = stream.set_nodelay(true);
        let mut transport = match &security.tls {
            None => Transport::Plain(stream),
            Some(config) => {
                let host = addr
                    .rsplit_once(':')
                    .map_or(addr, |(h, _)| h)
                    .trim_start_matches('[')
                    .trim_end_matches(']');
                Transport::Tls(stream, Box::new(TlsState::client(config.clone(), host)?))
            }
        };
        if transport.is_tls() {
            let timer = async {
                glommio::timer::sleep(timeout).await;
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no TLS handshake with {addr} within {timeout:?}"),
                ))
            };
            futures_lite::future::or(transport.handshake(), timer).await?;
        }
        Ok(transport)
    }

    /// The socket's descriptor.
    pub fn fd(&self) -> i32 {
        match self {
            Transport::Plain(s) | Transport::Tls(s, _) => s.as_raw_fd(),
        }
    }

    /// The socket.
    pub fn stream(&self) -> &TcpStream {
        match self {
            Transport::Plain(s) | Transport::Tls(s, _) => s,
        }
    }

    /// Splits into the socket and the TLS state (None for plain TCP), to
    /// move the connection to another shard.
    pub fn into_parts(self) -> (TcpStream, Option<Box<TlsState>>) {
        match self {
            Transport::Plain(s) => (s, None),
            Transport::Tls(s, t) => (s, Some(t)),
        }
    }

    /// Rebuilds a transport from its parts.
    pub fn from_parts(stream: TcpStream, tls: Option<Box<TlsState>>) -> Transport {
        match tls {
            None => Transport::Plain(stream),
            Some(t) => Transport::Tls(stream, t),
        }
    }

    /// Whether it is TLS.
    pub fn is_tls(&self) -> bool {
        matches!(self, Transport::Tls(..))
    }

    /// Runs the TLS handshake to its end (nothing for plain TCP). Errors
    /// with the handshake's failure (a bad certificate, no client
    /// certificate where one is required, a protocol error) or EOF.
    pub async fn handshake(&mut self) -> io::Result<()> {
        let Transport::Tls(stream, tls) = self else {
            return Ok(());
        };
        loop {
            flush_tls(stream, tls).await?;
            if !tls.conn.is_handshaking() {
                return Ok(());
            }
            if read_cipher(stream, tls, 0).await? {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the peer closed the connection during the TLS handshake",
                ));
            }
        }
    }

    /// The peer's certificate chain (DER), for TLS connections whose peer
    /// sent one.
    pub fn peer_certificates(&self) -> Option<Vec<Vec<u8>>> {
        match self {
            Transport::Plain(_) => None,
            Transport::Tls(_, t) => t.peer_certificates(),
        }
    }

    /// Non-blocking: for TLS, plaintext already decrypted or ciphertext the
    /// socket already holds; gives the plaintext bytes appended to `buf`,
    /// None when nothing is ready, `Some(0)` at EOF. Plain TCP takes this
    /// path through `plain_try_recv` (the caller's raw recv).
    pub fn tls_try_recv(&mut self, buf: &mut BytesMut) -> io::Result<Option<usize>> {
        let Transport::Tls(stream, tls) = self else {
            return Ok(None);
        };
        if let Some(n) = tls.take_plain(buf)? {
            return Ok(Some(n));
        }
        if tls.eof {
            return Ok(Some(0));
        }
        match tls.recv_now(stream.as_raw_fd())? {
            None => return Ok(None),
            Some(0) if tls.pending.is_empty() => return Ok(Some(0)),
            Some(_) => {}
        }
        tls.absorb()?;
        // Records to send (alerts, key updates) go out with the next write.
        tls.take_plain(buf)
    }

    /// TLS: waits until plaintext is decrypted and appends it to `buf`;
    /// gives the bytes appended, 0 at EOF. `want` is how many plaintext
    /// bytes the frame being read still misses (0 when unknown): the wait
    /// lasts until about that many have arrived (SO_RCVLOWAT). (Plain TCP reads through the
    /// caller's raw path; this gives 0 for it.)
    pub async fn tls_recv(&mut self, buf: &mut BytesMut, want: usize) -> io::Result<usize> {
        let Transport::Tls(stream, tls) = self else {
            return Ok(0);
        };
        loop {
            if let Some(n) = tls.take_plain(buf)? {
                return Ok(n);
            }
            if tls.eof {
                return Ok(0);
            }
            read_cipher(stream, tls, want).await?;
        }
    }

    /// Reads exactly `buf.len()` bytes (plaintext). Errors with
    /// `UnexpectedEof` when the peer closes first.
    pub async fn read_exact(&mut self, buf: &mut [u8]) -> io::Result<()> {
        match self {
            Transport::Plain(s) => s.read_exact(buf).await,
            Transport::Tls(stream, tls) => {
                let mut filled = 0;
                while filled < buf.len() {
                    match tls.conn.reader().read(&mut buf[filled..]) {
                        Ok(0) => {
                            return Err(io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                "the peer closed TLS",
                            ))
                        }
                        Ok(n) => filled += n,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            // Ciphertext already read comes before the socket.
                            if tls.absorb_pending()? {
                                continue;
                            }
                            if tls.eof || read_cipher(stream, tls, 0).await? {
                                return Err(io::Error::new(
                                    io::ErrorKind::UnexpectedEof,
                                    "the peer closed the connection",
                                ));
                            }
                        }
                        Err(e) => return Err(e),
                    }
                }
                Ok(())
            }
        }
    }

    /// Writes all of `data`.
    pub async fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            Transport::Plain(s) => s.write_all(data).await,
            Transport::Tls(stream, tls) => {
                for piece in data.chunks(PLAIN_CHUNK) {
                    tls.conn.writer().write_all(piece)?;
                    flush_tls(stream, tls).await?;
                }
                Ok(())
            }
        }
    }

    /// Sends TLS's close_notify (nothing for plain TCP).
    pub async fn close(&mut self) {
        if let Transport::Tls(stream, tls) = self {
            tls.conn.send_close_notify();
            let _ = flush_tls(stream, tls).await;
        }
    }
}

/// Takes a SASL client and the server's token; gives the client back with
/// its next token (None: done), computed off the reactor (SCRAM's
/// client-final runs PBKDF2). Errors (`PermissionDenied`) when the server's
/// token is wrong.
pub async fn sasl_step(
    client: SaslClient,
    server: Vec<u8>,
) -> io::Result<(SaslClient, Option<Vec<u8>>)> {
    let (client, next) = glommio::executor()
        .spawn_blocking(move || {
            let mut client = client;
            let next = client.step(&server);
            (client, next)
        })
        .await;
    let next = next.map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()))?;
    Ok((client, next))
}

#[cfg(test)]
mod tests {
    use super::Framing;

    fn record(kind: u8, payload: usize) -> Vec<u8> {
        let mut r = vec![kind, 3, 3];
        r.extend_from_slice(&(payload as u16).to_be_bytes());
        r.resize(5 + payload, 0xab);
        r
    }

    #[test]
    fn framing_counts_the_unfinished_record_in_any_cut() {
        let mut wire = record(23, 100);
        wire.extend(record(23, 16_401));
        wire.extend(record(21, 0));
        for cut in [1, 3, 5, 104, 105, 107, 110, 5000, 16_511, wire.len() - 1] {
            let mut f = Framing::default();
            f.advance(&wire[..cut]);
            let boundary = [0, 105, 105 + 16_406, wire.len()];
            let start = boundary
                .iter()
                .rev()
                .find(|b| **b <= cut)
                .copied()
                .unwrap_or(0);
            assert_eq!(f.held(), Some(cut - start), "cut at {cut}");
            // The same bytes given in several pieces.
            let mut g = Framing::default();
            for piece in wire[..cut].chunks(7) {
                g.advance(piece);
            }
            assert_eq!(g.held(), f.held(), "cut at {cut}, in pieces");
        }
        let mut f = Framing::default();
        f.advance(&wire);
        assert_eq!(f.held(), Some(0));
    }

    #[test]
    fn bytes_that_are_not_tls_records_lose_the_framing() {
        let mut f = Framing::default();
        f.advance(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(f.held(), None);
        let mut f = Framing::default();
        f.advance(&[23, 3, 3, 0xff, 0xff, 0, 0]);
        assert_eq!(f.held(), None, "longer than a record may be");
    }
}
