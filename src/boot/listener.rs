//! The listening sockets of the broker's listeners and of the controller
//! listener, with the socket options every accepted connection inherits.

use std::net::SocketAddr;

use glommio::net::TcpListener;

use crate::config::Config;
use crate::transport::{buffer_size, capped};

/// A shard's listening socket on `addr`: SO_REUSEPORT so every shard
/// accepts on the one port, and SO_REUSEADDR (which glommio's own `bind`
/// does not set) so that the connections it accepts, once closed, never keep
/// a restarted broker from binding the port again while they linger in
/// FIN_WAIT2 or TIME_WAIT. The socket's SO_SNDBUF and SO_RCVBUF, which every
/// connection it accepts inherits, come from `socket.send.buffer.bytes` and
/// `socket.receive.buffer.bytes` ([`socket_buffers`]).
pub(super) fn bind_listener(addr: SocketAddr, config: &Config) -> std::io::Result<TcpListener> {
    use std::os::fd::{FromRawFd, IntoRawFd};
    let s = listening_socket(addr, config)?;
    // SAFETY: the descriptor is a bound, listening TCP socket that we own;
    // `into_raw_fd` gives up that ownership, so the listener is its only
    // owner and closes it exactly once.
    Ok(unsafe { TcpListener::from_raw_fd(s.into_raw_fd()) })
}

/// `socket.send.buffer.bytes` and `socket.receive.buffer.bytes` as the
/// sizes to set (bytes), None for a value of 0 or -1 ([`buffer_size`]).
fn socket_buffers(config: &Config) -> (Option<usize>, Option<usize>) {
    (
        buffer_size(config.socket_send_buffer_bytes),
        buffer_size(config.socket_receive_buffer_bytes),
    )
}

/// Logs at warn when the kernel gave the listening socket less than the
/// `key`'s `asked` bytes ([`capped`]); `sysctl` names the kernel's cap.
fn warn_if_capped(key: &str, sysctl: &str, asked: usize, got: std::io::Result<usize>) {
    if let Some(got) = capped(asked, got) {
        log::warn!(
            "{key}={asked} is above the kernel's limit ({sysctl}): the connections get {got} bytes"
        );
    }
}

/// The bound, listening socket behind [`bind_listener`].
fn listening_socket(addr: SocketAddr, config: &Config) -> std::io::Result<socket2::Socket> {
    let domain = if addr.is_ipv4() {
        socket2::Domain::IPV4
    } else {
        socket2::Domain::IPV6
    };
    let s = socket2::Socket::new(domain, socket2::Type::STREAM, Some(socket2::Protocol::TCP))?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    // Set before listen(2): an accepted connection copies both sizes (and
    // their lock against autotuning) from its listener, and a receive
    // buffer set then also sizes the window offered in the handshake.
    // The kernel caps a size at net.core.wmem_max / rmem_max (212992
    // bytes by default) without an error, as it does for Kafka: the size
    // read back says so.
    let (send, receive) = socket_buffers(config);
    if let Some(n) = send {
        s.set_send_buffer_size(n)?;
        warn_if_capped(
            "socket.send.buffer.bytes",
            "net.core.wmem_max",
            n,
            s.send_buffer_size(),
        );
    }
    if let Some(n) = receive {
        s.set_recv_buffer_size(n)?;
        warn_if_capped(
            "socket.receive.buffer.bytes",
            "net.core.rmem_max",
            n,
            s.recv_buffer_size(),
        );
    }
    s.bind(&addr.into())?;
    s.listen(1024)?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SO_SNDBUF and SO_RCVBUF of a connection accepted on a listening
    /// socket made with `config`, as getsockopt(2) gives them (Linux
    /// doubles what was set, for its bookkeeping).
    fn accepted_buffers(config: &Config) -> (usize, usize) {
        let l = listening_socket("127.0.0.1:0".parse().unwrap(), config).unwrap();
        let addr = l.local_addr().unwrap().as_socket().unwrap();
        let _client = std::net::TcpStream::connect(addr).unwrap();
        let (conn, _) = l.accept().unwrap();
        (
            conn.send_buffer_size().unwrap(),
            conn.recv_buffer_size().unwrap(),
        )
    }

    fn config(send: i32, receive: i32) -> Config {
        Config {
            socket_send_buffer_bytes: send,
            socket_receive_buffer_bytes: receive,
            ..Config::default()
        }
    }

    #[test]
    fn accepted_connections_take_the_configured_buffers() {
        let (send, receive) = accepted_buffers(&config(102_400, 65_536));
        assert_eq!(send, 2 * 102_400);
        assert_eq!(receive, 2 * 65_536);
    }

    #[test]
    fn minus_one_leaves_the_kernel_default() {
        let defaults = accepted_buffers(&config(-1, -1));
        let plain = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let _client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let conn = socket2::Socket::from(l.accept().unwrap().0);
            (
                conn.send_buffer_size().unwrap(),
                conn.recv_buffer_size().unwrap(),
            )
        };
        assert_eq!(defaults, plain);
        assert_eq!(socket_buffers(&config(0, -1)), (None, None));
    }

    #[test]
    fn a_capped_size_is_told() {
        use crate::transport::capped;
        assert_eq!(capped(102_400, Ok(204_800)), None);
        assert_eq!(capped(10_000_000, Ok(8_388_608)), Some(4_194_304));
        assert_eq!(capped(1, Err(std::io::ErrorKind::Other.into())), None);
    }

    #[test]
    fn values_below_minus_one_are_refused() {
        let mut c = Config::default();
        for key in ["socket.send.buffer.bytes", "socket.receive.buffer.bytes"] {
            assert!(c.set(key, "-2").is_err(), "{key}=-2");
            assert!(c.set(key, "ten").is_err(), "{key}=ten");
            c.set(key, "-1").unwrap();
        }
        assert_eq!(socket_buffers(&c), (None, None));
    }
}
