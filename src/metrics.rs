//! A tiny Prometheus-text metrics endpoint (`metrics.listener`): one
//! thread runs a current-thread tokio runtime that accepts connections and
//! answers each in a task of its own, so idle or slow clients cost a task
//! each and hold no one else's answer: a client has [`READ_TIMEOUT`] to
//! send its request head and [`IO_TIMEOUT`] to read the answer; at most
//! [`MAX_CONNECTIONS`] are open at once (one more is closed at once).
//! HTTP/1.0 style: one request per connection, closed after the response;
//! `GET` and `HEAD` of `/metrics`, 404 for another path, 405 for another
//! method, 431 for a request head over [`MAX_REQUEST`] bytes. The figures are the shards' [`ShardStallStats`]
//! and their Kafka-named metric sets ([`shard::ShardMetrics`]), read with
//! `Relaxed` atomic loads and encoded by the `prometheus-client` crate
//! ([`collect`]); the names follow the Prometheus JMX exporter's Kafka
//! rules (docs/metrics.md).
//!
//! Also the client side: [`fetch`] (used by `fjord metrics` and
//! `fjord-perf --metrics`) and [`parse`].

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::shard::stall::ShardStallStats;

pub mod collect;
pub mod coordinator;
pub mod errors;
pub mod quota;
pub mod raft;
pub mod requests;
pub mod shard;

/// How long a metrics client may take to read the response (and how long
/// [`fetch`] waits) before the connection is dropped.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a metrics client may take to send its whole request head.
pub const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// Largest request head accepted (bytes); a longer one is answered 431.
pub const MAX_REQUEST: usize = 64 * 1024;

/// Connections open at once; one more is closed without an answer.
pub const MAX_CONNECTIONS: usize = 4096;

/// The metrics of every shard in Prometheus text format (version 0.0.4),
/// encoded by `prometheus-client` from a [`collect::FjordCollector`] over
/// `stats`.
pub fn render(stats: &Arc<[ShardStallStats]>) -> String {
    let mut registry = prometheus_client::registry::Registry::default();
    registry.register_collector(Box::new(collect::FjordCollector::new(stats.clone())));
    let mut out = String::new();
    if let Err(e) = prometheus_client::encoding::prometheus_text::encode(&mut out, &registry) {
        log::warn!("metrics encoding failed: {e}");
    }
    out
}

/// Binds `addr` (port 0 picks a free port) and serves the metrics of
/// `stats` on a background thread for the life of the process. Gives the
/// bound address; errors when the address cannot be bound or the
/// runtime cannot be built.
pub fn serve(addr: SocketAddr, stats: Arc<[ShardStallStats]>) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()?;
    std::thread::Builder::new()
        .name("fjord-metrics".into())
        .spawn(move || {
            rt.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => {
                        log::error!("metrics listener: {e}; no metrics served");
                        return;
                    }
                };
                let open = Arc::new(AtomicUsize::new(0));
                loop {
                    let s = match listener.accept().await {
                        Ok((s, _)) => s,
                        Err(e) => {
                            log::warn!("metrics listener: accept failed: {e}");
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        }
                    };
                    if open.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
                        open.fetch_sub(1, Ordering::AcqRel);
                        log::debug!(
                            "metrics listener: {MAX_CONNECTIONS} connections open, one more closed"
                        );
                        continue;
                    }
                    let (stats, done) = (stats.clone(), open.clone());
                    tokio::spawn(async move {
                        if let Err(e) = answer(s, &stats).await {
                            log::debug!("metrics request failed: {e}");
                        }
                        done.fetch_sub(1, Ordering::AcqRel);
                    });
                }
            });
        })?;
    Ok(bound)
}

/// Takes a request head read so far; gives whether it is whole.
fn head_complete(h: &[u8]) -> bool {
    h.windows(4).any(|w| w == b"\r\n\r\n") || h.windows(2).any(|w| w == b"\n\n")
}

/// Reads one request head (within [`READ_TIMEOUT`]) and answers it: 200
/// with the metrics for `GET /metrics` (`HEAD`: the same head, no body),
/// 404 for any other path, 405 for another method, 431 for a head over
/// [`MAX_REQUEST`].
async fn answer(
    mut s: tokio::net::TcpStream,
    stats: &Arc<[ShardStallStats]>,
) -> std::io::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let timed_out =
        |what: &str| std::io::Error::new(std::io::ErrorKind::TimedOut, what.to_string());
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 4096];
    let read_head = async {
        while head.len() <= MAX_REQUEST && !head_complete(&head) {
            let n = s.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        Ok::<(), std::io::Error>(())
    };
    tokio::time::timeout(READ_TIMEOUT, read_head)
        .await
        .map_err(|_| timed_out("request head not sent in time"))??;
    let text = String::from_utf8_lossy(&head);
    let first = text.lines().next().unwrap_or("");
    let mut parts = first.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    let too_long = head.len() > MAX_REQUEST && !head_complete(&head);
    let (status, body) = match (method, path) {
        _ if too_long => (
            "431 Request Header Fields Too Large",
            format!("request head over {MAX_REQUEST} bytes\n"),
        ),
        ("GET" | "HEAD", "/metrics") => ("200 OK", render(stats)),
        ("GET" | "HEAD", _) => ("404 Not Found", "not found; try /metrics\n".to_string()),
        _ => ("405 Method Not Allowed", "GET or HEAD only\n".to_string()),
    };
    let mut resp = format!(
        "HTTP/1.0 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if method != "HEAD" {
        resp.push_str(&body);
    }
    let send = async {
        s.write_all(resp.as_bytes()).await?;
        s.shutdown().await?;
        if too_long {
            // Read what the client still sends (up to a bound) so that
            // closing with unread bytes does not reset the connection
            // before the client reads the answer.
            let mut left = 4 * MAX_REQUEST;
            while left > 0 {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => left = left.saturating_sub(n),
                }
            }
        }
        Ok::<(), std::io::Error>(())
    };
    tokio::time::timeout(IO_TIMEOUT, send)
        .await
        .map_err(|_| timed_out("answer not read in time"))?
}

/// Fetches `path` (e.g. `/metrics`) from the endpoint at `address`
/// (`host:port`, or `http://host:port`) with a plain HTTP/1.0 GET. Gives the status code and the
/// body; errors on connection or I/O failures and malformed responses.
pub fn fetch(address: &str, path: &str) -> std::io::Result<(u16, String)> {
    // `http://host:port[/…]` as `metrics.listener` may be written.
    let address = address.strip_prefix("http://").unwrap_or(address);
    let address = address.split('/').next().unwrap_or(address);
    let addr = address
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other(format!("{address}: no address")))?;
    let mut s = TcpStream::connect_timeout(&addr, IO_TIMEOUT)?;
    s.set_read_timeout(Some(IO_TIMEOUT))?;
    s.set_write_timeout(Some(IO_TIMEOUT))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n")?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("malformed HTTP response"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other("malformed HTTP status line"))?;
    Ok((status, body.to_string()))
}

/// One sample of Prometheus text: metric name, labels as written inside
/// the braces (`shard="0",gt="1"`, possibly empty) and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Metric name.
    pub name: String,
    /// Labels, as written between the braces.
    pub labels: String,
    /// Value.
    pub value: f64,
}

/// Parses Prometheus text into samples (comments and malformed lines are
/// skipped).
pub fn parse(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (key, value) = l.trim().rsplit_once(' ')?;
            let value = value.parse().ok()?;
            let (name, labels) = match key.split_once('{') {
                Some((n, rest)) => (n, rest.trim_end_matches('}')),
                None => (key, ""),
            };
            Some(Sample {
                name: name.to_string(),
                labels: labels.to_string(),
                value,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::stall::registry;

    #[test]
    fn render_and_parse() {
        let stats = registry(2);
        stats[1].record(1_500);
        let text = render(&stats);
        let samples = parse(&text);
        let get = |name: &str, labels: &str| {
            samples
                .iter()
                .find(|s| s.name == name && s.labels == labels)
                .map(|s| s.value)
        };
        assert_eq!(get("fjord_reactor_stalls_total", "shard=\"0\""), Some(0.0));
        assert_eq!(get("fjord_reactor_stalls_total", "shard=\"1\""), Some(1.0));
        assert_eq!(
            get("fjord_reactor_stall_max_us", "shard=\"1\""),
            Some(1500.0)
        );
        assert_eq!(
            get("fjord_reactor_stalls_over_ms", "shard=\"1\",gt=\"1\""),
            Some(1.0)
        );
        assert_eq!(
            get("fjord_reactor_stalls_over_ms", "shard=\"1\",gt=\"5\""),
            Some(0.0)
        );
    }

    #[test]
    fn serves_metrics_and_404() {
        let stats = registry(1);
        let addr = serve("127.0.0.1:0".parse().unwrap(), stats).unwrap();
        let (code, body) = fetch(&addr.to_string(), "/metrics").unwrap();
        assert_eq!(code, 200);
        assert!(
            body.contains("fjord_reactor_stalls_total{shard=\"0\"} 0"),
            "{body}"
        );
        let (code, _) = fetch(&addr.to_string(), "/other").unwrap();
        assert_eq!(code, 404);
        let (code, _) = fetch(&format!("http://{addr}/"), "/metrics").unwrap();
        assert_eq!(code, 200);
    }

    /// Idle connections hold only their own threads: a scrape is answered
    /// while several clients send nothing.
    #[test]
    fn idle_connections_do_not_hold_a_scrape() {
        let stats = registry(1);
        let addr = serve("127.0.0.1:0".parse().unwrap(), stats).unwrap();
        // Served one after another (or by a pool of 32 threads, closing
        // the rest), they would hold the scrape past `fetch`'s own
        // timeout, or have it closed, and it would fail.
        let idle: Vec<TcpStream> = (0..64).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let (code, _) = fetch(&addr.to_string(), "/metrics").unwrap();
        assert_eq!(code, 200);
        drop(idle);
    }

    /// HEAD gives the head only; a head over the limit gets 431, read
    /// whole before the close.
    #[test]
    fn head_and_oversized_requests() {
        let stats = registry(1);
        let addr = serve("127.0.0.1:0".parse().unwrap(), stats).unwrap();
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"HEAD /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw).unwrap();
        assert!(raw.starts_with("HTTP/1.0 200"), "{raw}");
        assert!(raw.ends_with("\r\n\r\n"), "no body after the head: {raw}");
        let mut s = TcpStream::connect(addr).unwrap();
        let big = format!(
            "GET /metrics HTTP/1.0\r\nX-Big: {}\r\n\r\n",
            "a".repeat(2 * MAX_REQUEST)
        );
        s.write_all(big.as_bytes()).unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw).unwrap();
        assert!(raw.starts_with("HTTP/1.0 431"), "{raw}");
    }
}
