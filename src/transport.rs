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

use bytes::BytesMut;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;

use crate::security::sasl::SaslClient;
use crate::security::ClientSecurity;

/// Ciphertext read from the socket at once (bytes).
const CIPHER_CHUNK: usize = 64 * 1024;

/// Plaintext handed to rustls before its records are written (bytes).
const PLAIN_CHUNK: usize = 64 * 1024;

/// Decrypted plaintext rustls may hold before more ciphertext is given to
/// it (bytes): rustls refuses `read_tls` once it holds more than its
/// received-plaintext limit (16 KiB), so ciphertext beyond that waits in
/// `pending` until the plaintext is taken.
const PLAINTEXT_HIGH: usize = 16 * 1024;

thread_local! {
    /// The ciphertext receive buffer of this shard's non-blocking reads
    /// ([`Transport::tls_try_recv`]), allocated once per thread.
    static RECV_SCRATCH: std::cell::RefCell<Vec<u8>> =
        std::cell::RefCell::new(vec![0u8; CIPHER_CHUNK]);
}

/// The TLS half of a connection, apart from its socket: `Send`, so it can
/// go to another shard with the socket's duplicate.
pub struct TlsState {
    conn: rustls::Connection,
    /// Ciphertext read but not yet taken by rustls.
    pending: Vec<u8>,
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
            pending: Vec::new(),
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
            pending: Vec::new(),
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
        self.pending.drain(..consumed);
        result
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

/// Writes the TLS records rustls has queued to `stream`.
async fn flush_tls(stream: &mut TcpStream, tls: &mut TlsState) -> io::Result<()> {
    while tls.conn.wants_write() {
        let mut out = Vec::with_capacity(PLAIN_CHUNK + 1024);
        tls.conn.write_tls(&mut out)?;
        stream.write_all(&out).await?;
    }
    Ok(())
}

/// Reads ciphertext (waiting for it) and gives it to rustls; true at EOF.
async fn read_cipher(stream: &mut TcpStream, tls: &mut TlsState) -> io::Result<bool> {
    let mut chunk = vec![0u8; CIPHER_CHUNK];
    let n = stream.read(&mut chunk).await?;
    if n == 0 {
        tls.eof = true;
        return Ok(true);
    }
    tls.pending.extend_from_slice(&chunk[..n]);
    let absorbed = tls.absorb();
    // An alert for a bad record, or the handshake's next flight.
    flush_tls(stream, tls).await?;
    absorbed.map(|()| false)
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
            if read_cipher(stream, tls).await? {
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
        // The shard's one receive buffer: nothing awaits between the recv
        // and the copy, so connections on the shard take turns with it.
        let received = RECV_SCRATCH.with(|scratch| {
            let mut chunk = scratch.borrow_mut();
            // SAFETY: recv(2) into a buffer of `chunk.len()` initialised
            // bytes.
            let n = unsafe {
                libc::recv(
                    stream.as_raw_fd(),
                    chunk.as_mut_ptr() as *mut libc::c_void,
                    chunk.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            let n = n as usize;
            tls.pending.extend_from_slice(&chunk[..n]);
            Ok(n)
        });
        let n = match received {
            Ok(n) => n,
            Err(err) => {
                return match err.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
                    _ => Err(err),
                }
            }
        };
        if n == 0 {
            tls.eof = true;
            return Ok(Some(0));
        }
        tls.absorb()?;
        // Records to send (alerts, key updates) go out with the next write.
        tls.take_plain(buf)
    }

    /// TLS: waits until plaintext is decrypted and appends it to `buf`;
    /// gives the bytes appended, 0 at EOF. (Plain TCP reads through the
    /// caller's raw path; this gives 0 for it.)
    pub async fn tls_recv(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
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
            read_cipher(stream, tls).await?;
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
                            if tls.eof || read_cipher(stream, tls).await? {
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
