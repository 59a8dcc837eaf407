//! A fault-injecting TCP proxy for the integration tests: forwards every
//! connection accepted on its own loopback port to a target address, and can
//! be told to refuse or black-hole traffic, and later to heal, for every
//! client or only for the connections of one source.
//!
//! A source is whatever [`Proxy::with_sources`]' classifier makes of a
//! connection's peer address; [`super::cluster::Cluster`] names the node
//! process that opened it ([`owner_pid`]), so the one proxy in front of a
//! node's controller listener can cut the link from one node and not the
//! others.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// What a [`Proxy`] does with traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward everything.
    Pass,
    /// Close open connections, and each new one as soon as it is accepted
    /// (the peer sees resets and EOFs at once, as with a process that died).
    Refuse,
    /// Keep connections open but forward nothing in either direction; new
    /// connections are accepted and never reach the target (the peer sees
    /// only timeouts, as with a cable pulled out). Once healed, connections
    /// that lost bytes this way are closed, since their streams are no
    /// longer whole; the peer reconnects.
    BlackHole,
}

/// Names the source of a connection from its peer address and the proxy's
/// port (`None`: not known).
pub type Classifier = Arc<dyn Fn(SocketAddr, u16) -> Option<i32> + Send + Sync>;

/// How long a pump blocks in `read` before it looks at the fault again.
const POLL: Duration = Duration::from_millis(20);

struct Faults {
    /// For every source without an entry in `per_source`.
    default: Fault,
    per_source: HashMap<i32, Fault>,
}

struct Inner {
    target: Mutex<String>,
    faults: Mutex<Faults>,
    classify: Option<Classifier>,
    stop: AtomicBool,
    /// Bumped by [`Proxy::reset_connections`]: older connections close.
    generation: AtomicU64,
    accepted: AtomicU64,
    unclassified: AtomicU64,
    forwarded: AtomicU64,
    dropped: AtomicU64,
}

impl Inner {
    fn fault(&self, source: Option<i32>) -> Fault {
        let f = self.faults.lock().expect("faults lock");
        source
            .and_then(|s| f.per_source.get(&s).copied())
            .unwrap_or(f.default)
    }
}

/// One proxied connection, as its pumps see it.
#[derive(Clone)]
struct Conn {
    source: Option<i32>,
    generation: u64,
    /// Set once a byte was dropped on this connection (or it never reached
    /// the target).
    tainted: Arc<AtomicBool>,
    closed: Arc<AtomicBool>,
}

impl Conn {
    /// Whether the connection must close now, under `inner`'s faults.
    fn must_close(&self, inner: &Inner) -> bool {
        if self.closed.load(Ordering::SeqCst)
            || inner.stop.load(Ordering::SeqCst)
            || inner.generation.load(Ordering::SeqCst) != self.generation
        {
            return true;
        }
        match inner.fault(self.source) {
            Fault::Refuse => true,
            Fault::Pass => self.tainted.load(Ordering::SeqCst),
            Fault::BlackHole => false,
        }
    }
}

/// A TCP proxy on `127.0.0.1:<port>` in front of one target.
pub struct Proxy {
    port: u16,
    inner: Arc<Inner>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `target` (which need
    /// not accept yet: a connection made while it does not is closed).
    pub fn start(target: &str) -> Proxy {
        Proxy::start_inner(target, None)
    }

    /// [`Proxy::start`] with faults per source: `classify` names the source
    /// of each accepted connection (see [`Proxy::set_fault_from`]); one it
    /// cannot name is closed at once.
    pub fn with_sources(target: &str, classify: Classifier) -> Proxy {
        Proxy::start_inner(target, Some(classify))
    }

    fn start_inner(target: &str, classify: Option<Classifier>) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let port = listener.local_addr().expect("proxy addr").port();
        listener.set_nonblocking(true).expect("nonblocking proxy");
        let inner = Arc::new(Inner {
            target: Mutex::new(target.to_string()),
            faults: Mutex::new(Faults {
                default: Fault::Pass,
                per_source: HashMap::new(),
            }),
            classify,
            stop: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            unclassified: AtomicU64::new(0),
            forwarded: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        });
        let i = inner.clone();
        thread::Builder::new()
            .name(format!("proxy-{port}"))
            .spawn(move || accept_loop(listener, i))
            .expect("spawn proxy thread");
        Proxy { port, inner }
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Where new connections go.
    pub fn set_target(&self, target: &str) {
        *self.inner.target.lock().expect("target lock") = target.to_string();
    }

    /// The fault for connections from `source` (`None`: from an unknown
    /// source).
    pub fn fault_from(&self, source: Option<i32>) -> Fault {
        self.inner.fault(source)
    }

    /// Sets the fault for every source (dropping per-source settings); open
    /// connections follow within a few milliseconds.
    pub fn set_fault(&self, fault: Fault) {
        let mut f = self.inner.faults.lock().expect("faults lock");
        f.default = fault;
        f.per_source.clear();
    }

    /// Sets the fault for connections from `source` only.
    pub fn set_fault_from(&self, source: i32, fault: Fault) {
        assert!(
            self.inner.classify.is_some(),
            "a proxy without a classifier does not know sources"
        );
        self.inner
            .faults
            .lock()
            .expect("faults lock")
            .per_source
            .insert(source, fault);
    }

    /// [`Fault::BlackHole`] for everyone.
    pub fn black_hole(&self) {
        self.set_fault(Fault::BlackHole);
    }

    /// [`Fault::Refuse`] for everyone.
    pub fn refuse(&self) {
        self.set_fault(Fault::Refuse);
    }

    /// [`Fault::Pass`] for everyone.
    pub fn heal(&self) {
        self.set_fault(Fault::Pass);
    }

    /// Closes every open connection (the faults stay as they are).
    pub fn reset_connections(&self) {
        self.inner.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.inner.accepted.load(Ordering::SeqCst)
    }

    /// Connections whose source the classifier could not name (closed at
    /// once).
    pub fn unclassified(&self) -> u64 {
        self.inner.unclassified.load(Ordering::SeqCst)
    }

    /// Bytes forwarded so far (both directions).
    pub fn forwarded_bytes(&self) -> u64 {
        self.inner.forwarded.load(Ordering::SeqCst)
    }

    /// Bytes black-holed so far (both directions).
    pub fn dropped_bytes(&self) -> u64 {
        self.inner.dropped.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.inner.stop.store(true, Ordering::SeqCst);
    }
}

fn accept_loop(listener: TcpListener, inner: Arc<Inner>) {
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    while !inner.stop.load(Ordering::SeqCst) {
        let (client, peer) = match listener.accept() {
            Ok(c) => c,
            Err(_) => {
                thread::sleep(Duration::from_millis(5));
                continue;
            }
        };
        inner.accepted.fetch_add(1, Ordering::SeqCst);
        if client.set_nonblocking(false).is_err() {
            continue;
        }
        let _ = client.set_nodelay(true);
        let source = inner.classify.as_ref().and_then(|c| c(peer, port));
        if inner.classify.is_some() && source.is_none() {
            // (A client that gave up and closed already leaves nothing to
            // find.) Closed, so that no connection escapes the faults of
            // its source: a live client connects again.
            inner.unclassified.fetch_add(1, Ordering::SeqCst);
            let _ = client.shutdown(Shutdown::Both);
            continue;
        }
        let conn = Conn {
            source,
            generation: inner.generation.load(Ordering::SeqCst),
            tainted: Arc::new(AtomicBool::new(false)),
            closed: Arc::new(AtomicBool::new(false)),
        };
        match inner.fault(source) {
            Fault::Refuse => {
                let _ = client.shutdown(Shutdown::Both);
                continue;
            }
            Fault::BlackHole => {
                // Accepted, and nothing ever comes back.
                conn.tainted.store(true, Ordering::SeqCst);
                let i = inner.clone();
                thread::spawn(move || sink(client, i, conn));
                continue;
            }
            Fault::Pass => {}
        }
        let target = inner.target.lock().expect("target lock").clone();
        let Ok(upstream) = TcpStream::connect(&target) else {
            let _ = client.shutdown(Shutdown::Both);
            continue;
        };
        let _ = upstream.set_nodelay(true);
        let (Ok(c2), Ok(u2)) = (client.try_clone(), upstream.try_clone()) else {
            continue;
        };
        for (from, to) in [(client, u2), (upstream, c2)] {
            let (i, c) = (inner.clone(), conn.clone());
            thread::spawn(move || pump(from, to, i, c));
        }
    }
}

/// Copies `from` to `to` while the connection's fault is [`Fault::Pass`];
/// drops what it reads under [`Fault::BlackHole`]; stops on EOF, an error,
/// or when the connection must close.
fn pump(mut from: TcpStream, mut to: TcpStream, inner: Arc<Inner>, conn: Conn) {
    let _ = from.set_read_timeout(Some(POLL));
    let _ = to.set_write_timeout(Some(Duration::from_secs(10)));
    let mut buf = vec![0u8; 64 * 1024];
    while !conn.must_close(&inner) {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(_) => break,
        };
        match inner.fault(conn.source) {
            Fault::Pass if conn.tainted.load(Ordering::SeqCst) => break,
            Fault::Pass => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
                inner.forwarded.fetch_add(n as u64, Ordering::SeqCst);
            }
            Fault::BlackHole => {
                conn.tainted.store(true, Ordering::SeqCst);
                inner.dropped.fetch_add(n as u64, Ordering::SeqCst);
            }
            Fault::Refuse => break,
        }
    }
    conn.closed.store(true, Ordering::SeqCst);
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// Reads and drops everything a connection accepted while black-holed
/// sends, until it must close.
fn sink(mut from: TcpStream, inner: Arc<Inner>, conn: Conn) {
    let _ = from.set_read_timeout(Some(POLL));
    let mut buf = vec![0u8; 64 * 1024];
    while !conn.must_close(&inner) {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                inner.dropped.fetch_add(n as u64, Ordering::SeqCst);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    conn.closed.store(true, Ordering::SeqCst);
    let _ = from.shutdown(Shutdown::Both);
}

/// The process (among `pids`) that owns the local end of the TCP connection
/// from `peer` to `127.0.0.1:<to_port>`, found through `/proc/net/tcp` (the
/// socket's inode) and `/proc/<pid>/fd` (who holds it). IPv4 only.
pub fn owner_pid(peer: SocketAddr, to_port: u16, pids: &[u32]) -> Option<u32> {
    let SocketAddr::V4(peer) = peer else {
        return None;
    };
    let local = format!(
        "{:08X}:{:04X}",
        u32::from_ne_bytes(peer.ip().octets()),
        peer.port()
    );
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let inode = table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let rem_port = f.get(2)?.rsplit(':').next()?;
        if f.get(1) == Some(&local.as_str())
            && u16::from_str_radix(rem_port, 16).ok() == Some(to_port)
        {
            f.get(9).map(|s| s.to_string())
        } else {
            None
        }
    })?;
    let link = format!("socket:[{inode}]");
    pids.iter().copied().find(|pid| {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|dir| {
                dir.flatten().any(|e| {
                    std::fs::read_link(e.path())
                        .map(|l| l.to_string_lossy() == link)
                        .unwrap_or(false)
                })
            })
            .unwrap_or(false)
    })
}
