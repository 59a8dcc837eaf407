//! Idempotent producer (KIP-98) through connections that break mid-stream:
//! a proxy between librdkafka and the broker cuts the producer's connections
//! repeatedly, so some produce requests are appended but their responses are
//! lost and the producer retries them. Every record must land exactly once,
//! in order per partition.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::{assign, consume_n, Broker};
use rdkafka::producer::FutureRecord;
use rdkafka::Message;
use rdkafka::Offset;

/// Forwards connections to `target`; while `breaking` is set, closes a
/// connection after `every` Produce requests went through it (their
/// responses dropped), at most
/// `MAX_CUTS` times in all (a connection cut on every retry could never make
/// progress; a handful of cuts with requests in flight is what matters).
const MAX_CUTS: u64 = 6;

struct Proxy {
    port: u16,
    breaking: Arc<AtomicBool>,
    cuts: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    fn start() -> (Proxy, TcpListener) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let port = listener.local_addr().expect("proxy addr").port();
        let p = Proxy {
            port,
            breaking: Arc::new(AtomicBool::new(true)),
            cuts: Arc::new(AtomicU64::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
        };
        (p, listener)
    }

    fn run(&self, listener: TcpListener, target: String, every: u64) {
        let (breaking, cuts, stop) = (self.breaking.clone(), self.cuts.clone(), self.stop.clone());
        listener.set_nonblocking(true).expect("nonblocking");
        thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let client = match listener.accept() {
                    Ok((c, _)) => c,
                    Err(_) => {
                        thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                };
                let _ = client.set_nonblocking(false);
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                let (c2, s2) = match (client.try_clone(), server.try_clone()) {
                    (Ok(c), Ok(s)) => (c, s),
                    _ => continue,
                };
                let (breaking, cuts) = (breaking.clone(), cuts.clone());
                // Set when this connection is being cut: responses are dropped.
                let mute = Arc::new(AtomicBool::new(false));
                let mute2 = mute.clone();
                // client → broker, frame by frame: after `every` complete
                // Produce requests, mute the responses, give the broker time to
                // append, and cut the connection.
                thread::spawn(move || {
                    let (mut from, mut to) = (client, server);
                    let mut produced = 0u64;
                    loop {
                        let mut size = [0u8; 4];
                        if from.read_exact(&mut size).is_err() {
                            break;
                        }
                        let n = i32::from_be_bytes(size).max(0) as usize;
                        let mut frame = vec![0u8; n];
                        if from.read_exact(&mut frame).is_err() {
                            break;
                        }
                        if to.write_all(&size).is_err() || to.write_all(&frame).is_err() {
                            break;
                        }
                        let is_produce = frame.len() >= 2 && frame[0] == 0 && frame[1] == 0;
                        if is_produce {
                            produced += 1;
                        }
                        if breaking.load(Ordering::SeqCst)
                            && produced >= every
                            && cuts.load(Ordering::SeqCst) < MAX_CUTS
                        {
                            // The client retries requests that were in fact appended.
                            mute.store(true, Ordering::SeqCst);
                            thread::sleep(Duration::from_millis(200));
                            cuts.fetch_add(1, Ordering::SeqCst);
                            break;
                        }
                    }
                    let _ = from.shutdown(Shutdown::Both);
                    let _ = to.shutdown(Shutdown::Both);
                });
                // broker → client
                thread::spawn(move || {
                    let (mut from, mut to) = (s2, c2);
                    let mut buf = [0u8; 16 * 1024];
                    loop {
                        let n = match from.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        if mute2.load(Ordering::SeqCst) {
                            continue;
                        }
                        if to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = from.shutdown(Shutdown::Both);
                    let _ = to.shutdown(Shutdown::Both);
                });
            }
        });
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_producer_survives_broken_connections_exactly_once() {
    const N: usize = 10_000;
    // Produce requests forwarded on a connection before it is cut.
    const EVERY: u64 = 8;
    let (proxy, listener) = Proxy::start();
    let advertised = format!("advertised.listeners=PLAINTEXT://127.0.0.1:{}", proxy.port);
    let broker = Broker::start_with(&[advertised.as_str()]);
    proxy.run(listener, broker.bootstrap(), EVERY);
    broker.create_topic("idem", 2).await;

    let mut cfg = broker.client_config();
    cfg.set("bootstrap.servers", format!("127.0.0.1:{}", proxy.port))
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "2")
        .set("batch.size", "4096")
        .set("message.timeout.ms", "30000")
        .set("max.in.flight.requests.per.connection", "5");
    let producer: rdkafka::producer::FutureProducer = cfg.create().expect("producer");
    let mut futures = Vec::with_capacity(N);
    for i in 0..N {
        let key = format!("k{}", i % 10);
        let value = format!("{i:06}-{}", "x".repeat(100));
        let f = producer.send_result(FutureRecord::to("idem").key(&key).payload(&value));
        futures.push(f.expect("enqueue"));
    }
    for f in futures {
        if let Err((e, _)) = f.await.expect("delivery future") {
            let log = broker.stderr_text();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            panic!(
                "delivery failed: {e}; proxy cuts: {}; broker log tail:\n{}",
                proxy.cuts.load(Ordering::SeqCst),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
    }
    assert!(
        proxy.cuts.load(Ordering::SeqCst) >= 3,
        "the proxy should have cut connections"
    );
    proxy.breaking.store(false, Ordering::SeqCst);

    let consumer = broker.consumer(&[]);
    assign(&consumer, "idem", &[0, 1], Offset::Beginning);
    let msgs = consume_n(&consumer, N, Duration::from_secs(60));
    common::assert_no_more(&consumer, Duration::from_millis(500));
    let mut per_key: HashMap<String, Vec<usize>> = HashMap::new();
    let mut seen = vec![0u32; N];
    for m in &msgs {
        let v = std::str::from_utf8(m.payload().expect("value")).expect("utf8");
        let i: usize = v[..6].parse().expect("number");
        seen[i] += 1;
        let k = String::from_utf8_lossy(m.key().expect("key")).to_string();
        per_key.entry(k).or_default().push(i);
    }
    let dups: Vec<usize> = (0..N).filter(|i| seen[*i] > 1).collect();
    let missing: Vec<usize> = (0..N).filter(|i| seen[*i] == 0).collect();
    assert!(
        dups.is_empty(),
        "duplicated records: {:?}",
        &dups[..dups.len().min(10)]
    );
    assert!(
        missing.is_empty(),
        "missing records: {:?}",
        &missing[..missing.len().min(10)]
    );
    for (k, v) in per_key {
        assert!(
            v.windows(2).all(|w| w[0] < w[1]),
            "records of key {k} out of order"
        );
    }
}
