//! The transactional produce workload (`fjord-perf txn`).
//!
//! One thread per connection, each a transactional producer with its own
//! `transactional.id` (`<prefix>-<conn>`). Set-up, before the clock starts:
//! FindCoordinator (key type 1), InitProducerId. Then per transaction:
//! AddPartitionsToTxn for the partitions it will write, `--txn-batches`
//! transactional batches (up to `--inflight` ≤ 5 Produce requests in
//! flight, acks=all, per-partition base sequences), EndTxn (commit, or
//! abort every `--abort-every`th). With `--transaction-version 2`
//! (KIP-890 part 2) there is no AddPartitionsToTxn: Produce v12 has the
//! leader add the partition, and EndTxn v5 answers the epoch the next
//! transaction writes with (its sequences from 0). Bytes and records count when their
//! transaction commits. CONCURRENT_TRANSACTIONS and coordinator-loading
//! answers are retried after `--retry-backoff-ms`; any other error stops
//! that producer (after a best-effort abort) and the run reports it.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use hdrhistogram::Histogram;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey, EndTxnRequest,
    FindCoordinatorRequest, InitProducerIdRequest, ProduceResponse, ProducerId, ResponseHeader,
    TransactionalId,
};
use kafka_protocol::protocol::{Decodable, HeaderVersion, Request, StrBytes};
use kafka_protocol::ResponseError;
use serde_json::json;

use crate::batch::ProduceFrame;
use crate::batch::{build_batch, make_transactional, parse_compression, set_base_sequence};
use crate::rate::{fine_timer_slack, wait_until, Schedule};
use crate::stats::{merge, new_hist, record, Counters, Report, Timeline};
use crate::wire::{topic_name, Conn, Res, Versions};
use crate::workloads::{pin, produce_version, unix_ns};
use crate::{ceiling, parse_cores, prepare, Common, CpuProbe, StallProbe};

const CONCURRENT_TRANSACTIONS: i16 = 51;
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const NOT_COORDINATOR: i16 = 16;
const OPERATION_NOT_ATTEMPTED: i16 = 55;
/// Kafka's limit for idempotent producers: at most 5 requests in flight.
const MAX_INFLIGHT: usize = 5;

#[derive(Args, Clone)]
pub struct TxnArgs {
    #[command(flatten)]
    pub common: Common,
    /// Record value size in bytes.
    #[arg(long, default_value_t = 1024)]
    pub record_size: usize,
    /// Batch size in bytes (records per batch = batch / record size).
    #[arg(long, default_value_t = 16384)]
    pub batch_size: usize,
    /// none, gzip, snappy, lz4, zstd.
    #[arg(long, default_value = "none")]
    pub compression: String,
    /// Compressible (text-like) values instead of random bytes.
    #[arg(long)]
    pub compressible: bool,
    /// Producer connections, each its own transactional producer.
    #[arg(long, default_value_t = 1)]
    pub connections: usize,
    /// Produce requests in flight per producer within a transaction (≤ 5).
    #[arg(long, default_value_t = 5)]
    pub inflight: usize,
    /// Batches (Produce requests) per transaction.
    #[arg(long, default_value_t = 10)]
    pub txn_batches: usize,
    /// Abort every Nth transaction instead of committing it (0 = never).
    #[arg(long, default_value_t = 0)]
    pub abort_every: u64,
    /// transaction.timeout.ms sent in InitProducerId.
    #[arg(long, default_value_t = 60_000)]
    pub txn_timeout_ms: i32,
    /// transactional.id prefix; connection c uses `<prefix>-<c>`.
    #[arg(long, default_value = "fjord-perf-txn")]
    pub transactional_id: String,
    /// Wait before retrying CONCURRENT_TRANSACTIONS (and coordinator loading).
    #[arg(long, default_value_t = 20)]
    pub retry_backoff_ms: u64,
    /// Target MB/s over all connections, paced per transaction
    /// (default: unlimited).
    #[arg(long)]
    pub rate: Option<f64>,
    /// 1: transactions v1 (AddPartitionsToTxn, then Produce ≤ v11 and EndTxn
    /// ≤ v4); 2: transactions v2 (KIP-890 part 2: no AddPartitionsToTxn,
    /// Produce v12 adds the partition, EndTxn v5 answers the bumped epoch).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub transaction_version: u8,
}

/// Kafka's sequence increment: wraps from i32::MAX to 0.
pub fn next_sequence(seq: i32, n: i32) -> i32 {
    if seq > i32::MAX - n {
        n - (i32::MAX - seq) - 1
    } else {
        seq + n
    }
}

/// Next base sequence per partition of one producer (one epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sequences(Vec<i32>);

impl Sequences {
    pub fn new(partitions: usize) -> Sequences {
        Sequences(vec![0; partitions])
    }

    /// The base sequence for a batch of `records` to partition slot `i`.
    pub fn take(&mut self, i: usize, records: i32) -> i32 {
        let base = self.0[i];
        self.0[i] = next_sequence(base, records);
        base
    }
}

/// Partition slots of the batches of a transaction whose first batch is the
/// producer's `first`-th overall: batch j goes to slot (first + j) mod n.
pub fn batch_slots(first: u64, count: usize, n: usize) -> Vec<usize> {
    let n = n.max(1) as u64;
    (0..count as u64)
        .map(|j| ((first + j) % n) as usize)
        .collect()
}

/// The distinct slots of a transaction, sorted (for AddPartitionsToTxn).
pub fn distinct_slots(slots: &[usize]) -> Vec<usize> {
    let mut v = slots.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

/// Whether the k-th transaction (1-based) is aborted.
pub fn aborts(k: u64, every: u64) -> bool {
    every > 0 && k % every == 0
}

/// Errors a client retries after a short backoff.
pub fn retriable(code: i16) -> bool {
    matches!(
        code,
        CONCURRENT_TRANSACTIONS | COORDINATOR_LOAD_IN_PROGRESS | COORDINATOR_NOT_AVAILABLE
    )
}

pub fn error_name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        Some(e) => format!("{code} {e}"),
        None => "0".into(),
    }
}

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

pub fn find_coordinator_request(txn_id: &str) -> FindCoordinatorRequest {
    let mut r = FindCoordinatorRequest::default();
    r.key = sb(txn_id);
    r.key_type = 1;
    r
}

pub fn init_producer_id_request(txn_id: &str, timeout_ms: i32) -> InitProducerIdRequest {
    let mut r = InitProducerIdRequest::default();
    r.transactional_id = Some(TransactionalId(sb(txn_id)));
    r.transaction_timeout_ms = timeout_ms;
    r.producer_id = ProducerId(-1);
    r.producer_epoch = -1;
    r
}

pub fn add_partitions_request(
    txn_id: &str,
    producer_id: i64,
    epoch: i16,
    topic: &str,
    partitions: &[i32],
) -> AddPartitionsToTxnRequest {
    let mut t = AddPartitionsToTxnTopic::default();
    t.name = topic_name(topic);
    t.partitions = partitions.to_vec();
    let mut r = AddPartitionsToTxnRequest::default();
    r.v3_and_below_transactional_id = TransactionalId(sb(txn_id));
    r.v3_and_below_producer_id = ProducerId(producer_id);
    r.v3_and_below_producer_epoch = epoch;
    r.v3_and_below_topics.push(t);
    r
}

pub fn end_txn_request(txn_id: &str, producer_id: i64, epoch: i16, commit: bool) -> EndTxnRequest {
    let mut r = EndTxnRequest::default();
    r.transactional_id = TransactionalId(sb(txn_id));
    r.producer_id = ProducerId(producer_id);
    r.producer_epoch = epoch;
    r.committed = commit;
    r
}

/// The error of an AddPartitionsToTxn v0–v3 answer: the first partition
/// error that is not OPERATION_NOT_ATTEMPTED (Kafka's answer for the
/// partitions it skipped because another one failed), else that, else 0.
pub fn add_partitions_error(r: &AddPartitionsToTxnResponse) -> i16 {
    let codes = r
        .results_by_topic_v3_and_below
        .iter()
        .flat_map(|t| t.results_by_partition.iter())
        .map(|p| p.partition_error_code)
        .filter(|c| *c != 0);
    let mut fallback = 0;
    for c in codes {
        if c != OPERATION_NOT_ATTEMPTED {
            return c;
        }
        fallback = c;
    }
    fallback
}

/// Negotiated versions of the APIs this workload uses.
#[derive(Debug, Clone, Copy)]
pub struct TxnVersions {
    pub find_coordinator: i16,
    pub init_producer_id: i16,
    pub add_partitions: i16,
    pub end_txn: i16,
    pub produce: i16,
    /// Transactions v2: no AddPartitionsToTxn, a new epoch per EndTxn.
    pub v2: bool,
}

impl TxnVersions {
    /// The versions for transactions v`tv` (1 or 2); v2 needs Produce v12
    /// and EndTxn v5 on the broker.
    pub fn pick(v: &Versions, tv: u8) -> Res<TxnVersions> {
        if tv == 2 {
            return Ok(TxnVersions {
                find_coordinator: v.pick(ApiKey::FindCoordinator, 3, 1)?,
                init_producer_id: v.pick(ApiKey::InitProducerId, 4, 0)?,
                add_partitions: v.pick(ApiKey::AddPartitionsToTxn, 3, 0)?,
                end_txn: v.pick(ApiKey::EndTxn, 5, 5)?,
                produce: v.pick(ApiKey::Produce, 12, 12)?,
                v2: true,
            });
        }
        Ok(TxnVersions {
            // v1..=3: single key with key type; v4 batches keys.
            find_coordinator: v.pick(ApiKey::FindCoordinator, 3, 1)?,
            init_producer_id: v.pick(ApiKey::InitProducerId, 4, 0)?,
            // v4+ is transactions v2 (KIP-890), a different flow.
            add_partitions: v.pick(ApiKey::AddPartitionsToTxn, 3, 0)?,
            end_txn: v.pick(ApiKey::EndTxn, 3, 0)?,
            produce: produce_version(v)?,
            v2: false,
        })
    }
}

#[derive(Clone)]
pub struct TxnCfg {
    pub bootstrap: String,
    pub topic: String,
    pub partitions: i32,
    pub connections: usize,
    pub record_size: usize,
    pub batch_bytes: usize,
    pub compression: kafka_protocol::records::Compression,
    pub compressible: bool,
    pub inflight: usize,
    pub txn_batches: usize,
    pub abort_every: u64,
    pub txn_timeout_ms: i32,
    pub id_prefix: String,
    pub backoff: Duration,
    /// Bytes per second over all connections; None = unlimited.
    pub rate: Option<f64>,
    pub duration: Duration,
    pub cores: Vec<usize>,
    pub versions: TxnVersions,
}

/// What one producer measured.
pub struct TxnOut {
    pub produce: Histogram<u64>,
    pub txn: Histogram<u64>,
    pub end_txn: Histogram<u64>,
    pub add_partitions: Histogram<u64>,
    pub committed: u64,
    pub aborted: u64,
    pub retries: u64,
    pub error: Option<String>,
}

/// One transactional producer after FindCoordinator and InitProducerId.
struct Producer {
    c: usize,
    txn_id: String,
    producer_id: i64,
    epoch: i16,
    coord: Conn,
    data: Conn,
    partitions: Vec<i32>,
    frames: Vec<ProduceFrame>,
    seqs: Sequences,
    next_corr: i32,
}

/// Calls `req` until its error (by `err`) is 0, retrying retriable errors
/// after `backoff` until `deadline`.
fn call_retrying<R: Request>(
    conn: &mut Conn,
    req: &R,
    version: i16,
    backoff: Duration,
    deadline: Instant,
    retries: &mut u64,
    err: impl Fn(&R::Response) -> i16,
) -> Res<R::Response> {
    loop {
        let r = conn.call(req, version)?;
        let e = err(&r);
        if e == 0 {
            return Ok(r);
        }
        if retriable(e) && Instant::now() < deadline {
            *retries += 1;
            std::thread::sleep(backoff);
            continue;
        }
        let api = ApiKey::try_from(R::KEY)
            .map(|k| format!("{k:?}"))
            .unwrap_or_else(|_| format!("API {}", R::KEY));
        return Err(format!("{api}: error {}", error_name(e)).into());
    }
}

impl Producer {
    fn setup(cfg: &TxnCfg, c: usize, batch: &bytes::Bytes, records: usize) -> Res<Producer> {
        let txn_id = format!("{}-{c}", cfg.id_prefix);
        let v = cfg.versions;
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut retries = 0;
        let mut data = Conn::connect(&cfg.bootstrap)?;
        // A broker that has just started may name itself coordinator and
        // then answer NOT_COORDINATOR while its transaction log partition
        // settles (Kafka): find it again, as clients do, until the deadline.
        let (coord, init) = loop {
            let fc = call_retrying(
                &mut data,
                &find_coordinator_request(&txn_id),
                v.find_coordinator,
                cfg.backoff,
                deadline,
                &mut retries,
                |r| r.error_code,
            )?;
            let mut coord = Conn::connect(&format!("{}:{}", fc.host.as_str(), fc.port))?;
            let r = call_retrying(
                &mut coord,
                &init_producer_id_request(&txn_id, cfg.txn_timeout_ms),
                v.init_producer_id,
                cfg.backoff,
                deadline,
                &mut retries,
                |r| {
                    if r.error_code == NOT_COORDINATOR {
                        0
                    } else {
                        r.error_code
                    }
                },
            )?;
            if r.error_code != NOT_COORDINATOR || Instant::now() >= deadline {
                break (coord, r);
            }
            retries += 1;
            std::thread::sleep(cfg.backoff);
        };
        if init.error_code != 0 {
            return Err(format!("InitProducerId: error {}", error_name(init.error_code)).into());
        }
        let (producer_id, epoch) = (init.producer_id.0, init.producer_epoch);
        // Connection c writes partitions c, c+C, c+2C, … (as `produce`).
        let partitions: Vec<i32> = (c as i32..cfg.partitions.max(1))
            .step_by(cfg.connections.max(1))
            .collect();
        if partitions.is_empty() {
            return Err(
                format!("producer {c}: no partition (more connections than partitions)").into(),
            );
        }
        let mut frames = Vec::new();
        for &p in &partitions {
            let mut f = ProduceFrame::with_txn(
                &cfg.topic,
                p,
                -1,
                batch,
                records,
                v.produce,
                Some(&txn_id),
            )?;
            make_transactional(f.batch_mut(), producer_id, epoch);
            frames.push(f);
        }
        Ok(Producer {
            c,
            txn_id,
            producer_id,
            epoch,
            coord,
            data,
            seqs: Sequences::new(partitions.len()),
            partitions,
            frames,
            next_corr: 1,
        })
    }

    /// Sends the batches of one transaction with up to `inflight` requests
    /// outstanding; records each round trip (weighted by records).
    fn produce(&mut self, slots: &[usize], cfg: &TxnCfg, h: &mut Histogram<u64>) -> Res<()> {
        let version = cfg.versions.produce;
        let mut pending: VecDeque<(i32, Instant, u64)> = VecDeque::new();
        let mut next = 0;
        while next < slots.len() || !pending.is_empty() {
            if next < slots.len() && pending.len() < cfg.inflight {
                let i = slots[next];
                let f = &mut self.frames[i];
                let base = self.seqs.take(i, f.records as i32);
                set_base_sequence(f.batch_mut(), base);
                let corr = self.next_corr;
                self.next_corr = self.next_corr.wrapping_add(1) & 0x7fff_ffff;
                f.set_correlation(corr);
                let t = Instant::now();
                self.data.stream.write_all(&f.frame)?;
                pending.push_back((corr, t, f.records as u64));
                next += 1;
                continue;
            }
            let Some((corr, t, recs)) = pending.pop_front() else {
                break;
            };
            let mut body = self.data.read_frame()?;
            let lat = t.elapsed().as_nanos() as u64;
            let hd = ResponseHeader::decode(&mut body, ProduceResponse::header_version(version))?;
            if hd.correlation_id != corr {
                return Err(format!(
                    "produce: correlation mismatch: sent {corr}, got {}",
                    hd.correlation_id
                )
                .into());
            }
            let r = ProduceResponse::decode(&mut body, version)?;
            let err = r
                .responses
                .iter()
                .flat_map(|t| t.partition_responses.iter())
                .find(|p| p.error_code != 0)
                .map(|p| (p.index, p.error_code));
            if let Some((p, e)) = err {
                return Err(format!("produce to partition {p}: error {}", error_name(e)).into());
            }
            record(h, lat, recs);
        }
        Ok(())
    }

    fn end_txn(&mut self, cfg: &TxnCfg, commit: bool, retries: &mut u64) -> Res<()> {
        let req = end_txn_request(&self.txn_id, self.producer_id, self.epoch, commit);
        let deadline = Instant::now() + Duration::from_millis(cfg.txn_timeout_ms.max(1) as u64);
        let r = call_retrying(
            &mut self.coord,
            &req,
            cfg.versions.end_txn,
            cfg.backoff,
            deadline,
            retries,
            |r| r.error_code,
        )?;
        if cfg.versions.v2 {
            // Transactions v2: the next transaction runs at the bumped epoch
            // (or a new producer id at epoch 0), its sequences from 0.
            self.producer_id = r.producer_id.0;
            self.epoch = r.producer_epoch;
            for f in &mut self.frames {
                make_transactional(f.batch_mut(), self.producer_id, self.epoch);
            }
            self.seqs = Sequences::new(self.partitions.len());
        }
        Ok(())
    }

    /// The transaction loop until `cfg.duration` after `start`.
    fn run(mut self, cfg: &TxnCfg, counters: &Counters, start: Instant, sched: Schedule) -> TxnOut {
        let mut out = TxnOut {
            produce: new_hist(),
            txn: new_hist(),
            end_txn: new_hist(),
            add_partitions: new_hist(),
            committed: 0,
            aborted: 0,
            retries: 0,
            error: None,
        };
        let end = start + cfg.duration;
        let mut first_batch = 0u64;
        let mut k = 0u64;
        let mut open = false;
        let res: Res<()> = (|| loop {
            let intended = if sched.unlimited() {
                Instant::now()
            } else {
                let t = sched.intended(start, k);
                wait_until(t);
                t
            };
            if intended >= end {
                return Ok(());
            }
            let slots = batch_slots(first_batch, cfg.txn_batches, self.partitions.len());
            let parts: Vec<i32> = distinct_slots(&slots)
                .iter()
                .map(|&i| self.partitions[i])
                .collect();
            let t0 = Instant::now();
            if !cfg.versions.v2 {
                let req = add_partitions_request(
                    &self.txn_id,
                    self.producer_id,
                    self.epoch,
                    &cfg.topic,
                    &parts,
                );
                let deadline = t0 + Duration::from_millis(cfg.txn_timeout_ms.max(1) as u64);
                call_retrying(
                    &mut self.coord,
                    &req,
                    cfg.versions.add_partitions,
                    cfg.backoff,
                    deadline,
                    &mut out.retries,
                    add_partitions_error,
                )?;
                record(&mut out.add_partitions, t0.elapsed().as_nanos() as u64, 1);
            }
            open = true;
            self.produce(&slots, cfg, &mut out.produce)?;
            first_batch += slots.len() as u64;
            k += 1;
            let commit = !aborts(k, cfg.abort_every);
            let t1 = Instant::now();
            self.end_txn(cfg, commit, &mut out.retries)?;
            open = false;
            let now = Instant::now();
            record(&mut out.end_txn, (now - t1).as_nanos() as u64, 1);
            let from = if sched.unlimited() { t0 } else { intended };
            record(&mut out.txn, (now - from).as_nanos() as u64, 1);
            if commit {
                let f = &self.frames[0];
                let n = slots.len() as u64;
                counters.add(n * f.batch_len as u64, n * f.records as u64);
                out.committed += 1;
            } else {
                out.aborted += 1;
            }
        })();
        if let Err(e) = res {
            out.error = Some(format!("producer {} ({}): {e}", self.c, self.txn_id));
            counters.errors.fetch_add(1, Ordering::Relaxed);
            if open {
                // Best effort, so the open transaction does not hold the LSO
                // until its timeout.
                let mut r = 0;
                let _ = self.end_txn(cfg, false, &mut r);
            }
        }
        out
    }
}

pub fn run(a: &TxnArgs) -> Res<Report> {
    let c = &a.common;
    if a.inflight == 0 || a.inflight > MAX_INFLIGHT {
        return Err(
            format!("--inflight must be 1..={MAX_INFLIGHT} for a transactional producer").into(),
        );
    }
    if a.txn_batches == 0 {
        return Err("--txn-batches must be at least 1".into());
    }
    let v = prepare(c)?;
    let cfg = TxnCfg {
        bootstrap: c.bootstrap.clone(),
        topic: c.topic.clone(),
        partitions: c.partitions,
        connections: a.connections.max(1),
        record_size: a.record_size,
        batch_bytes: a.batch_size,
        compression: parse_compression(&a.compression)?,
        compressible: a.compressible,
        inflight: a.inflight,
        txn_batches: a.txn_batches,
        abort_every: a.abort_every,
        txn_timeout_ms: a.txn_timeout_ms,
        id_prefix: a.transactional_id.clone(),
        backoff: Duration::from_millis(a.retry_backoff_ms),
        rate: a.rate.map(|mb| mb * 1e6),
        duration: Duration::from_secs_f64(c.duration),
        cores: parse_cores(&c.client_cores)?,
        versions: TxnVersions::pick(&v, a.transaction_version)?,
    };
    let n = (cfg.batch_bytes / cfg.record_size.max(1)).max(1);
    let batch = build_batch(
        n,
        cfg.record_size,
        cfg.compression,
        cfg.compressible,
        (unix_ns() / 1_000_000) as i64,
        0x5eed,
    )?;
    let producers: Vec<Producer> = (0..cfg.connections)
        .map(|i| Producer::setup(&cfg, i, &batch, n))
        .collect::<Res<_>>()?;
    let sched = Schedule::for_rate(cfg.rate, batch.len() * cfg.txn_batches, cfg.connections);
    let counters = Arc::new(Counters::default());
    let cpu = CpuProbe::start(c.broker_pid);
    let stalls = StallProbe::start(c.metrics.as_deref());
    let tl = Timeline::start("txn (committed)", counters.clone());
    let start = Instant::now();
    let handles: Vec<_> = producers
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let (cfg, counters) = (cfg.clone(), counters.clone());
            std::thread::spawn(move || {
                pin(&cfg.cores, i);
                fine_timer_slack();
                p.run(&cfg, &counters, start, sched)
            })
        })
        .collect();
    let mut outs = Vec::new();
    for h in handles {
        match h.join() {
            Ok(o) => outs.push(o),
            Err(_) => {
                counters.errors.fetch_add(1, Ordering::Relaxed);
                eprintln!("a producer thread panicked");
            }
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let broker_cpu_s = cpu.stop();
    let stall_figures = stalls.finish();
    let timeline = tl.finish();
    for e in outs.iter().filter_map(|o| o.error.as_ref()) {
        eprintln!("error: {e}");
    }
    let committed: u64 = outs.iter().map(|o| o.committed).sum();
    let aborted: u64 = outs.iter().map(|o| o.aborted).sum();
    let retries: u64 = outs.iter().map(|o| o.retries).sum();
    Ok(Report {
        workload: format!(
            "txn {} x {}B batches of {}B records per transaction, acks=all",
            a.txn_batches, a.batch_size, a.record_size
        ),
        params: json!({"bootstrap": c.bootstrap, "topic": c.topic, "partitions": c.partitions,
            "record_size": a.record_size, "batch_size": a.batch_size, "acks": "all",
            "compression": a.compression, "connections": cfg.connections, "inflight": a.inflight,
            "txn_batches": a.txn_batches, "abort_every": a.abort_every,
            "txn_timeout_ms": a.txn_timeout_ms, "transactional_id": a.transactional_id,
            "retry_backoff_ms": a.retry_backoff_ms, "rate_mb_s": a.rate,
            "duration_s": c.duration, "produce_version": cfg.versions.produce,
            "find_coordinator_version": cfg.versions.find_coordinator,
            "init_producer_id_version": cfg.versions.init_producer_id,
            "add_partitions_to_txn_version": cfg.versions.add_partitions,
            "transaction_version": if cfg.versions.v2 { 2 } else { 1 },
            "end_txn_version": cfg.versions.end_txn}),
        elapsed_s: elapsed,
        bytes: counters.bytes.load(Ordering::Relaxed),
        records: counters.records.load(Ordering::Relaxed),
        errors: counters.errors.load(Ordering::Relaxed),
        timeline,
        hists: vec![
            ("produce ack".into(), merge(outs.iter().map(|o| &o.produce))),
            ("transaction".into(), merge(outs.iter().map(|o| &o.txn))),
            ("EndTxn".into(), merge(outs.iter().map(|o| &o.end_txn))),
            (
                "AddPartitions".into(),
                merge(outs.iter().map(|o| &o.add_partitions)),
            ),
        ],
        broker_cpu_s,
        ceiling: ceiling(c, "pipeline_mb_s", "receive+CRC+append ceiling")?,
        extra: vec![
            (
                "transactions/s".into(),
                (committed + aborted) as f64 / elapsed.max(1e-9),
            ),
            ("committed txns".into(), committed as f64),
            ("aborted txns".into(), aborted as f64),
            ("retries (51/14/15)".into(), retries as f64),
        ]
        .into_iter()
        .chain(stall_figures)
        .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::{Bytes, BytesMut};
    use kafka_protocol::messages::add_partitions_to_txn_response::{
        AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
    };

    fn round_trip<R: Request + Decodable>(r: &R, v: i16) -> R {
        let mut buf = BytesMut::new();
        r.encode(&mut buf, v).unwrap();
        let mut b: Bytes = buf.freeze();
        R::decode(&mut b, v).unwrap()
    }

    #[test]
    fn sequences_advance_per_partition_and_wrap() {
        let mut s = Sequences::new(2);
        assert_eq!(s.take(0, 16), 0);
        assert_eq!(s.take(0, 16), 16);
        assert_eq!(s.take(1, 16), 0);
        assert_eq!(s.take(0, 16), 32);
        assert_eq!(next_sequence(i32::MAX - 2, 3), 0);
        assert_eq!(next_sequence(i32::MAX, 1), 0);
        assert_eq!(next_sequence(i32::MAX - 1, 5), 3);
        assert_eq!(next_sequence(5, 5), 10);
    }

    #[test]
    fn transactions_cycle_over_the_partitions() {
        assert_eq!(batch_slots(0, 5, 2), vec![0, 1, 0, 1, 0]);
        // The next transaction continues where the last one stopped.
        assert_eq!(batch_slots(5, 3, 2), vec![1, 0, 1]);
        assert_eq!(batch_slots(7, 1, 3), vec![1]);
        assert_eq!(batch_slots(0, 2, 0), vec![0, 0]);
        assert_eq!(distinct_slots(&[1, 0, 1]), vec![0, 1]);
    }

    #[test]
    fn every_nth_transaction_aborts() {
        let a: Vec<bool> = (1..=6).map(|k| aborts(k, 3)).collect();
        assert_eq!(a, vec![false, false, true, false, false, true]);
        assert!(!(1..100).any(|k| aborts(k, 0)));
    }

    #[test]
    fn retriable_codes() {
        assert!(retriable(51) && retriable(14) && retriable(15));
        assert!(!retriable(0) && !retriable(47) && !retriable(48) && !retriable(90));
        assert_eq!(error_name(51), "51 ConcurrentTransactions");
    }

    #[test]
    fn requests_encode_and_decode() {
        let f = round_trip(&find_coordinator_request("tx-0"), 3);
        assert_eq!((f.key.as_str(), f.key_type), ("tx-0", 1));
        for v in [0, 4] {
            let i = round_trip(&init_producer_id_request("tx-0", 60_000), v);
            assert_eq!(i.transactional_id.unwrap().0.as_str(), "tx-0");
            assert_eq!(i.transaction_timeout_ms, 60_000);
        }
        for v in [0, 3] {
            let a = round_trip(&add_partitions_request("tx-0", 7, 2, "t", &[0, 2]), v);
            assert_eq!(a.v3_and_below_transactional_id.0.as_str(), "tx-0");
            assert_eq!(
                (a.v3_and_below_producer_id.0, a.v3_and_below_producer_epoch),
                (7, 2)
            );
            assert_eq!(a.v3_and_below_topics.len(), 1);
            assert_eq!(a.v3_and_below_topics[0].name.0.as_str(), "t");
            assert_eq!(a.v3_and_below_topics[0].partitions, vec![0, 2]);
            let e = round_trip(&end_txn_request("tx-0", 7, 2, v == 0), v);
            assert_eq!(
                (e.producer_id.0, e.producer_epoch, e.committed),
                (7, 2, v == 0)
            );
        }
    }

    #[test]
    fn add_partitions_error_prefers_the_cause() {
        let mut r = AddPartitionsToTxnResponse::default();
        assert_eq!(add_partitions_error(&r), 0);
        let mut t = AddPartitionsToTxnTopicResult::default();
        for (i, code) in [(0, 55), (1, 51), (2, 55)] {
            let mut p = AddPartitionsToTxnPartitionResult::default();
            p.partition_index = i;
            p.partition_error_code = code;
            t.results_by_partition.push(p);
        }
        r.results_by_topic_v3_and_below.push(t);
        assert_eq!(add_partitions_error(&r), 51);
        r.results_by_topic_v3_and_below[0].results_by_partition[1].partition_error_code = 0;
        assert_eq!(add_partitions_error(&r), 55);
    }
}
