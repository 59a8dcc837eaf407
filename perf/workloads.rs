//! The produce, consume and end-to-end workloads.
//!
//! Threads: one writer and one reader per producer connection (the writer
//! runs ahead by up to `--inflight` requests, the reader takes responses in
//! order), one thread per consumer connection. Every thread is pinned to a
//! `--client-cores` core.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hdrhistogram::Histogram;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{ApiKey, FetchRequest, ProduceResponse, ResponseHeader};
use kafka_protocol::protocol::{Decodable, HeaderVersion};
use kafka_protocol::records::Compression;

use crate::batch::{build_batch, read_stamp, walk_batches, ProduceFrame};
use crate::rate::{fine_timer_slack, wait_until, Schedule};
use crate::stats::{new_hist, record, Counters};
use crate::wire::{list_offsets, topic_name, Conn, Res, Versions};

pub fn pin(cores: &[usize], i: usize) {
    if cores.is_empty() {
        return;
    }
    let id = cores[i % cores.len()];
    if !core_affinity::set_for_current(core_affinity::CoreId { id }) {
        eprintln!("warning: could not pin to core {id}");
    }
}

pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

#[derive(Clone)]
pub struct ProducerCfg {
    pub bootstrap: String,
    pub topic: String,
    pub partitions: i32,
    pub connections: usize,
    pub record_size: usize,
    pub batch_bytes: usize,
    pub acks: i16,
    pub compression: Compression,
    pub compressible: bool,
    pub inflight: usize,
    /// Bytes per second over all connections; None = unlimited.
    pub rate: Option<f64>,
    pub duration: Duration,
    pub cores: Vec<usize>,
    /// Stamp the intended send time into every batch.
    pub stamp: bool,
    pub version: i16,
}

impl ProducerCfg {
    pub fn records_per_batch(&self) -> usize {
        (self.batch_bytes / self.record_size.max(1)).max(1)
    }
}

pub struct ProducerRun {
    pub handles: Vec<JoinHandle<Histogram<u64>>>,
    pub acked_records: Arc<AtomicU64>,
}

/// Pre-builds frames and starts the writer/reader threads; `start` is the
/// common origin of every connection's schedule.
pub fn start_producers(
    cfg: &ProducerCfg,
    counters: Arc<Counters>,
    start: Instant,
    thread_index: &mut usize,
) -> Res<ProducerRun> {
    let n = cfg.records_per_batch();
    let batch = build_batch(
        n,
        cfg.record_size,
        cfg.compression,
        cfg.compressible,
        0,
        0x5eed,
    )?;
    if cfg.stamp && cfg.compression != Compression::None {
        return Err(
            "end-to-end latency needs --compression none (the stamp is in the value)".into(),
        );
    }
    let sched = Schedule::for_rate(cfg.rate, batch.len(), cfg.connections);
    // Wall-clock time of `start` (which may lie slightly in the future).
    let (now_i, now_u) = (Instant::now(), unix_ns());
    let base_unix = if start >= now_i {
        now_u + (start - now_i).as_nanos() as u64
    } else {
        now_u.saturating_sub((now_i - start).as_nanos() as u64)
    };
    let acked_records = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for c in 0..cfg.connections {
        // Connection c sends to partitions c, c+C, c+2C, …; one frame each.
        let mut frames = Vec::new();
        let mut p = c as i32 % cfg.partitions.max(1);
        loop {
            frames.push(ProduceFrame::new(
                &cfg.topic,
                p,
                cfg.acks,
                &batch,
                n,
                cfg.version,
            )?);
            p += cfg.connections as i32;
            if p >= cfg.partitions {
                break;
            }
        }
        let wconn = Conn::connect(&cfg.bootstrap)?;
        let mut rconn = wconn.try_clone()?;
        let (tx, rx) = sync_channel::<(Instant, i32, u64, u64)>(cfg.inflight.max(1));
        let cfg2 = cfg.clone();
        let cores = cfg.cores.clone();
        let ti = *thread_index;
        *thread_index += 2;
        let wcounters = counters.clone();
        let writer = std::thread::spawn(move || {
            pin(&cores, ti);
            fine_timer_slack();
            let mut wconn = wconn;
            let end = start + cfg2.duration;
            let mut k: u64 = 0;
            loop {
                let intended = if sched.unlimited() {
                    Instant::now()
                } else {
                    let t = sched.intended(start, k);
                    wait_until(t);
                    t
                };
                if intended >= end {
                    break;
                }
                let nf = frames.len();
                let f = &mut frames[(k as usize) % nf];
                let corr = (k as i32) & 0x7fff_ffff;
                f.set_correlation(corr);
                if cfg2.stamp {
                    f.stamp(base_unix + (intended - start).as_nanos() as u64);
                }
                let (bytes, recs) = (f.batch_len as u64, f.records as u64);
                if cfg2.acks != 0 && tx.send((intended, corr, bytes, recs)).is_err() {
                    break; // reader failed
                }
                if let Err(e) = wconn.stream.write_all(&f.frame) {
                    eprintln!("producer {c}: write: {e}");
                    break;
                }
                if cfg2.acks == 0 {
                    wcounters.add(bytes, recs);
                }
                k += 1;
            }
            drop(tx);
            if cfg2.acks == 0 {
                let _ = wconn.stream.flush();
            }
        });
        let cores = cfg.cores.clone();
        let version = cfg.version;
        let rcounters = counters.clone();
        let acked = acked_records.clone();
        let reader = std::thread::spawn(move || {
            pin(&cores, ti + 1);
            let mut h = new_hist();
            let mut first_error = true;
            while let Ok((intended, corr, bytes, recs)) = rx.recv() {
                let mut body = match rconn.read_frame() {
                    Ok(b) => b,
                    Err(e) => {
                        eprintln!("producer {c}: read: {e}");
                        break;
                    }
                };
                let lat = intended.elapsed().as_nanos() as u64;
                let ok =
                    ResponseHeader::decode(&mut body, ProduceResponse::header_version(version))
                        .ok()
                        .filter(|hd| hd.correlation_id == corr)
                        .and_then(|_| ProduceResponse::decode(&mut body, version).ok())
                        .map(|r| {
                            r.responses
                                .iter()
                                .flat_map(|t| t.partition_responses.iter())
                                .find(|p| p.error_code != 0)
                                .map(|p| p.error_code)
                        });
                match ok {
                    Some(None) => {
                        record(&mut h, lat, recs);
                        rcounters.add(bytes, recs);
                        acked.fetch_add(recs, Ordering::Relaxed);
                    }
                    other => {
                        rcounters.errors.fetch_add(1, Ordering::Relaxed);
                        if first_error {
                            eprintln!("producer {c}: bad produce response: {other:?}");
                            first_error = false;
                        }
                    }
                }
            }
            h
        });
        handles.push(std::thread::spawn(move || {
            let _ = writer.join();
            reader.join().unwrap_or_else(|_| new_hist())
        }));
    }
    Ok(ProducerRun {
        handles,
        acked_records,
    })
}

#[derive(Clone)]
pub struct ConsumerCfg {
    pub bootstrap: String,
    pub topic: String,
    pub partitions: i32,
    pub consumers: usize,
    pub max_bytes: i32,
    pub partition_max_bytes: i32,
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    pub cores: Vec<usize>,
    pub version: i16,
    /// Restart from the log start when caught up (re-reads cached data).
    pub rewind: bool,
    /// Stop once every partition reached these offsets (cold catch-up).
    pub stop_at: Option<HashMap<i32, i64>>,
    pub stamps: bool,
    /// With `stamps`: records whose stamp (intended send time, Unix ns) is
    /// at or after this value also go into [`ConsumerOut::e2e_steady`]; 0
    /// (not yet set) or None: none do.
    pub steady_from_unix_ns: Option<Arc<AtomicU64>>,
}

pub struct ConsumerOut {
    pub fetch_rtt: Histogram<u64>,
    pub e2e: Histogram<u64>,
    /// The `e2e` records stamped at or after `steady_from_unix_ns`.
    pub e2e_steady: Histogram<u64>,
}

/// Starts consumer threads at `from` offsets; they run until `stop` is set,
/// or (with `stop_at`) until caught up.
pub fn start_consumers(
    cfg: &ConsumerCfg,
    from: &HashMap<i32, i64>,
    log_start: &HashMap<i32, i64>,
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    thread_index: &mut usize,
) -> Res<Vec<JoinHandle<ConsumerOut>>> {
    let mut out = Vec::new();
    for c in 0..cfg.consumers.max(1) {
        let parts: Vec<i32> = (0..cfg.partitions)
            .filter(|p| *p as usize % cfg.consumers.max(1) == c)
            .collect();
        if parts.is_empty() {
            continue;
        }
        let mut conn = Conn::connect(&cfg.bootstrap)?;
        let cfg = cfg.clone();
        let mut offsets: HashMap<i32, i64> = parts.iter().map(|p| (*p, from[p])).collect();
        let starts: HashMap<i32, i64> = parts.iter().map(|p| (*p, log_start[p])).collect();
        let counters = counters.clone();
        let stop = stop.clone();
        let ti = *thread_index;
        *thread_index += 1;
        out.push(std::thread::spawn(move || {
            pin(&cfg.cores, ti);
            let mut rtt = new_hist();
            let mut e2e = new_hist();
            let mut e2e_steady = new_hist();
            let topic = topic_name(&cfg.topic);
            let mut first_error = true;
            while !stop.load(Ordering::Relaxed) {
                if let Some(targets) = &cfg.stop_at {
                    if parts.iter().all(|p| offsets[p] >= targets[p]) {
                        break;
                    }
                }
                let mut req = FetchRequest::default();
                req.replica_id = (-1).into();
                req.max_wait_ms = cfg.max_wait_ms;
                req.min_bytes = cfg.min_bytes;
                req.max_bytes = cfg.max_bytes;
                req.session_id = 0;
                req.session_epoch = -1;
                let mut ft = FetchTopic::default();
                ft.topic = topic.clone();
                for p in &parts {
                    let mut fp = FetchPartition::default();
                    fp.partition = *p;
                    fp.current_leader_epoch = -1;
                    fp.fetch_offset = offsets[p];
                    fp.last_fetched_epoch = -1;
                    fp.log_start_offset = -1;
                    fp.partition_max_bytes = cfg.partition_max_bytes;
                    ft.partitions.push(fp);
                }
                req.topics.push(ft);
                let t0 = Instant::now();
                let resp = match conn.call(&req, cfg.version) {
                    Ok(r) => r,
                    Err(e) => {
                        eprintln!("consumer {c}: fetch: {e}");
                        counters.errors.fetch_add(1, Ordering::Relaxed);
                        break;
                    }
                };
                record(&mut rtt, t0.elapsed().as_nanos() as u64, 1);
                let now_ns = unix_ns();
                for t in &resp.responses {
                    for pd in &t.partitions {
                        let p = pd.partition_index;
                        if pd.error_code != 0 {
                            counters.errors.fetch_add(1, Ordering::Relaxed);
                            if first_error {
                                eprintln!("consumer {c}: partition {p}: error {}", pd.error_code);
                                first_error = false;
                            }
                            continue;
                        }
                        let recs: &Bytes = match &pd.records {
                            Some(r) => r,
                            None => continue,
                        };
                        let w = walk_batches(recs, |b| {
                            if cfg.stamps {
                                if let Some(s) = read_stamp(b) {
                                    let n = i32::from_be_bytes(b[57..61].try_into().unwrap());
                                    let ns = now_ns.saturating_sub(s);
                                    record(&mut e2e, ns, n.max(1) as u64);
                                    let from = cfg
                                        .steady_from_unix_ns
                                        .as_ref()
                                        .map_or(0, |f| f.load(Ordering::Relaxed));
                                    if from != 0 && s >= from {
                                        record(&mut e2e_steady, ns, n.max(1) as u64);
                                    }
                                }
                            }
                        });
                        if let Some(next) = w.next_offset {
                            offsets.insert(p, next);
                            counters.bytes.fetch_add(w.bytes, Ordering::Relaxed);
                            counters.records.fetch_add(w.records, Ordering::Relaxed);
                        }
                        if cfg.rewind && offsets[&p] >= pd.high_watermark {
                            offsets.insert(p, starts[&p]);
                        }
                    }
                }
                counters.requests.fetch_add(1, Ordering::Relaxed);
            }
            ConsumerOut {
                fetch_rtt: rtt,
                e2e,
                e2e_steady,
            }
        }));
    }
    Ok(out)
}

/// Fetch version: v12 preferred (topic names), whatever both ends support.
pub fn fetch_version(v: &Versions) -> Res<i16> {
    v.pick(ApiKey::Fetch, 12, 4)
}

pub fn produce_version(v: &Versions) -> Res<i16> {
    v.pick(ApiKey::Produce, 9, 3)
}

pub fn offsets(
    bootstrap: &str,
    versions: &Versions,
    topic: &str,
    partitions: i32,
    ts: i64,
) -> Res<HashMap<i32, i64>> {
    let mut conn = Conn::connect(bootstrap)?;
    let parts: Vec<i32> = (0..partitions).collect();
    list_offsets(&mut conn, versions, topic, &parts, ts)
}
