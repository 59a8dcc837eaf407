//! `--scrape-every`: scrapes the broker's metrics endpoint
//! (`metrics.listener`, `GET /metrics`) at a fixed interval during a run,
//! as a monitoring system would, so that a run with scraping can be set
//! against one without (the cost of scraping).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::stats::Report;
use crate::wire::Res;
use crate::Common;

/// What the scraper saw over a run.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct ScrapeTally {
    /// Scrapes answered with HTTP 200.
    pub ok: u64,
    /// Scrapes that failed (connection, timeout or another status).
    pub failed: u64,
    /// The slowest answered scrape, in milliseconds.
    pub max_ms: f64,
    /// Bytes of metrics text read over all answered scrapes.
    pub bytes: u64,
}

impl ScrapeTally {
    /// The tally as report figures (`metrics scrapes`, `… failed`,
    /// `… max ms`, `… bytes`).
    pub fn figures(&self) -> Vec<(String, f64)> {
        vec![
            ("metrics scrapes".into(), self.ok as f64),
            ("metrics scrapes failed".into(), self.failed as f64),
            ("metrics scrape max ms".into(), self.max_ms),
            ("metrics scrape bytes".into(), self.bytes as f64),
        ]
    }
}

/// A thread fetching `/metrics` every `interval` until [`Scraper::finish`].
pub struct Scraper {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<ScrapeTally>,
}

impl Scraper {
    /// Starts scraping `address` (host:port); the first scrape is one
    /// `interval` after the start.
    pub fn start(address: String, interval: Duration) -> Scraper {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::spawn(move || {
            let start = Instant::now();
            let mut tally = ScrapeTally::default();
            let mut n = 1u32;
            loop {
                let next = start + interval * n;
                while Instant::now() < next && !s.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                if s.load(Ordering::Relaxed) {
                    return tally;
                }
                let t0 = Instant::now();
                match fjord::metrics::fetch(&address, "/metrics") {
                    Ok((200, body)) => {
                        tally.ok += 1;
                        tally.bytes += body.len() as u64;
                        tally.max_ms = tally.max_ms.max(t0.elapsed().as_secs_f64() * 1e3);
                    }
                    Ok(_) | Err(_) => tally.failed += 1,
                }
                n += 1;
            }
        });
        Scraper { stop, handle }
    }

    /// Stops the thread and gives its tally.
    pub fn finish(self) -> ScrapeTally {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// Runs `f` with the `--scrape-every` scraper beside it (when set) and
/// adds the scraper's tally to the report's figures.
pub(crate) fn scraped(c: &Common, f: impl FnOnce() -> Res<Report>) -> Res<(Report, Common)> {
    let scraper = match (c.scrape_every, &c.metrics) {
        (Some(s), Some(addr)) if s > 0.0 => {
            Some(Scraper::start(addr.clone(), Duration::from_secs_f64(s)))
        }
        (Some(s), _) => return Err(format!("--scrape-every {s}: needs --metrics and s > 0").into()),
        _ => None,
    };
    let mut r = f();
    if let Some(s) = scraper {
        let tally = s.finish();
        if let Ok(r) = &mut r {
            r.extra.extend(tally.figures());
        }
    }
    r.map(|r| (r, c.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    #[test]
    fn scrapes_at_the_interval_and_counts_failures() {
        use std::sync::atomic::AtomicUsize;
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let served = Arc::new(AtomicUsize::new(0));
        let sv = served.clone();
        std::thread::spawn(move || {
            for (i, conn) in l.incoming().enumerate() {
                let mut c = conn.unwrap();
                // The whole request head, so that closing after the
                // answer leaves nothing unread (which would reset it).
                let mut head = Vec::new();
                let mut buf = [0u8; 256];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match c.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let status = if i == 1 { "500 Oops" } else { "200 OK" };
                let body = "fjord_up 1\n";
                let _ = write!(
                    c,
                    "HTTP/1.0 {status}\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                drop(c);
                sv.fetch_add(1, Ordering::SeqCst);
            }
        });
        let s = Scraper::start(addr, Duration::from_millis(20));
        let deadline = Instant::now() + Duration::from_secs(30);
        while served.load(Ordering::SeqCst) < 4 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let t = s.finish();
        assert!(t.ok + t.failed >= 4, "{t:?}");
        assert_eq!(t.failed, 1, "{t:?}");
        assert_eq!(t.bytes, t.ok * 11);
        assert!(t.max_ms > 0.0);
    }
}
