//! The socket buffers as the broker process sets them:
//! `socket.send.buffer.bytes` and `socket.receive.buffer.bytes` on every
//! connection a listener accepts, and `replica.socket.receive.buffer.bytes`
//! on a follower's connection to its leader
//! (docs/decisions/socket-buffers.md), read from the broker's own
//! descriptor of the connection.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use common::*;
use kafka_protocol::messages::ApiVersionsRequest;

/// SO_SNDBUF and SO_RCVBUF (as getsockopt(2) reads them: Linux doubles a
/// size that was set) of each of the broker process `pid`'s TCP
/// connections whose peer address is `peer`. Each of the broker's socket
/// descriptors is duplicated into this process with pidfd_getfd(2), which
/// the kernel allows for a child of this process (Yama's default ptrace
/// scope); the refusals are given too.
fn socket_buffers_to(pid: u32, peer: SocketAddr) -> (Vec<(usize, usize)>, Vec<io::Error>) {
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new
    // descriptor or -1; the descriptor is owned by `pidfd` at once.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    assert!(
        raw >= 0,
        "pidfd_open({pid}): {}",
        io::Error::last_os_error()
    );
    // SAFETY: `raw` is a descriptor this process just got and owns.
    let pidfd = unsafe { OwnedFd::from_raw_fd(raw as i32) };
    let (mut found, mut refused) = (Vec::new(), Vec::new());
    for entry in fs::read_dir(format!("/proc/{pid}/fd")).expect("the broker's descriptors") {
        let entry = entry.expect("a descriptor");
        let is_socket =
            fs::read_link(entry.path()).is_ok_and(|t| t.to_string_lossy().starts_with("socket:"));
        let target = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok());
        let (true, Some(target)) = (is_socket, target) else {
            continue;
        };
        // SAFETY: pidfd_getfd(2) takes a pidfd, a descriptor number of
        // that process and flags, and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), target, 0) };
        if fd < 0 {
            // The descriptor may have been closed since the listing.
            refused.push(io::Error::last_os_error());
            continue;
        }
        // SAFETY: `fd` is a socket descriptor this process just got and owns.
        let owned = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        let sock = socket2::Socket::from(std::net::TcpStream::from(owned));
        if sock.peer_addr().ok().and_then(|a| a.as_socket()) == Some(peer) {
            found.push((
                sock.send_buffer_size().expect("SO_SNDBUF"),
                sock.recv_buffer_size().expect("SO_RCVBUF"),
            ));
        }
    }
    (found, refused)
}

/// SO_SNDBUF and SO_RCVBUF of the connection the broker process `pid`
/// accepted from `client` ([`socket_buffers_to`]); none fails the test
/// with the refusals.
fn accepted_socket_buffers(pid: u32, client: SocketAddr) -> (usize, usize) {
    let (found, refused) = socket_buffers_to(pid, client);
    match found[..] {
        [one] => one,
        _ => panic!(
            "{} connections from {client} among the broker's sockets ({refused:?})",
            found.len()
        ),
    }
}

/// The SO_RCVBUF (as getsockopt(2) reads it) a new TCP connection starts
/// with when nothing sets it: net.ipv4.tcp_rmem's middle value, 131072 in
/// a stock kernel (Kafka's 65536 doubled).
fn kernel_receive_start() -> usize {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let _c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    socket2::Socket::from(l.accept().unwrap().0)
        .recv_buffer_size()
        .unwrap()
}

/// `socket.send.buffer.bytes` (Kafka's default 102400) and
/// `socket.receive.buffer.bytes` (-1 here: the kernel's autotuning) are set
/// on the connection a listener accepts, and values given replace the
/// defaults (both below the kernel's usual 212992-byte caps,
/// net.core.wmem_max and rmem_max).
#[test]
fn accepted_connections_take_the_socket_buffer_keys() {
    let kernel_default = kernel_receive_start();
    for (overrides, send, receive) in [
        (vec![], 2 * 102_400, kernel_default),
        (
            vec![
                "socket.send.buffer.bytes=65536",
                "socket.receive.buffer.bytes=131072",
            ],
            2 * 65_536,
            2 * 131_072,
        ),
    ] {
        let broker = Broker::start_with(&overrides);
        let mut c = raw::RawConn::new(&broker.bootstrap());
        // An ApiVersions answer: the connection is accepted and served.
        let versions = c.call(3, &ApiVersionsRequest::default());
        assert_eq!(versions.error_code, 0);
        let got = accepted_socket_buffers(broker.pid(), c.s.local_addr().unwrap());
        assert_eq!(got, (send, receive), "with {overrides:?}");
    }
}

/// `replica.socket.receive.buffer.bytes` (Kafka's default 65536, and a
/// value given) is the receive buffer of a follower's fetch connection to
/// its leader, which then does not grow with the traffic; with -1 the
/// kernel's autotuning grows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followers_fetch_connection_takes_the_replica_receive_buffer() {
    use common::cluster::Cluster;
    use common::layout::{admin, wait_topic};
    use rdkafka::admin::{NewTopic, TopicReplication};
    use rdkafka::producer::{FutureProducer, FutureRecord};
    let kernel_start = kernel_receive_start();
    // (overrides, the fetch connection's SO_RCVBUF as read back, or None
    // for one that grew past the kernel's start).
    for (overrides, receive) in [
        (vec![], Some(2 * 65_536)),
        (
            vec!["replica.socket.receive.buffer.bytes=49152"],
            Some(2 * 49_152),
        ),
        (vec!["replica.socket.receive.buffer.bytes=-1"], None),
    ] {
        let c = Cluster::start(2, &overrides);
        let a = admin(&c, &c.bootstrap_all());
        let t = NewTopic::new("replicated", 1, TopicReplication::Fixed(2));
        let r = a.create_topics(&[t], &admin_opts()).await.unwrap();
        assert!(r[0].is_ok(), "{r:?}");
        let leader = wait_topic(&c, &c.ids(), "replicated", 1).parts[&0].leader;
        let follower = *c.ids().iter().find(|&&id| id != leader).unwrap();
        let to_leader: SocketAddr = c.bootstrap(leader).parse().unwrap();
        // 32 MB through the follower's fetches: an unlocked receive buffer
        // grows with them (to megabytes), a set one does not.
        let p: FutureProducer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", c.bootstrap_all())
            .set("acks", "all")
            .create()
            .unwrap();
        let value = vec![7u8; 64 * 1024];
        let mut acks = Vec::new();
        for _ in 0..512 {
            let record = FutureRecord::<(), _>::to("replicated").payload(&value);
            acks.push(p.send_result(record).map_err(|(e, _)| e).unwrap());
        }
        for acked in acks {
            acked.await.unwrap().unwrap();
        }
        // Every acks=all answer came after the follower fetched its batch,
        // so the fetch connection carried the 32 MB by now. The follower's
        // other connections to the leader (coordinator calls) carried
        // little and keep the kernel's start.
        let (found, refused) = socket_buffers_to(c.pid(follower), to_leader);
        let largest = found.iter().map(|&(_, r)| r).max();
        let seen = format!("with {overrides:?}: connections {found:?}, refused {refused:?}");
        match receive {
            Some(r) => {
                assert!(found.iter().any(|&(_, got)| got == r), "{seen}");
                assert!(largest <= Some(r.max(kernel_start)), "none grew: {seen}");
            }
            None => assert!(
                largest > Some(kernel_start),
                "the fetch connection grew: {seen}"
            ),
        }
    }
}
