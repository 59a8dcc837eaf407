//! fjord-perf: a load generator and latency meter for any broker that
//! speaks the Kafka protocol, plus a `limits` mode that measures what this
//! machine allows without a broker. See docs/PERFORMANCE.md.

// A measuring tool run by hand: a failed set-up or a broken broker answer
// stops the run with its message, which is what its user wants.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod append_paths;
mod batch;
mod charts;
mod limits;
mod pauses;
mod probes;
mod rate;
mod scale;
mod scrape;
mod share;
mod stats;
mod txn;
mod wire;
mod workloads;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};
use serde_json::json;

use probes::{CpuProbe, StallProbe};
use stats::{load_ceilings, merge, Counters, Report, Timeline};
use wire::{create_topic, Conn, Res, Versions};
use workloads::{
    fetch_version, offsets, produce_version, start_consumers, start_producers, ConsumerCfg,
    ProducerCfg,
};

#[derive(Parser)]
#[command(
    name = "fjord-perf",
    about = "Kafka-protocol benchmark harness",
    version
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Produce pre-built batches as fast as possible or at a target rate.
    Produce(ProduceArgs),
    /// Transactional produce: each connection a transactional producer
    /// (AddPartitionsToTxn, transactional batches, EndTxn in a loop).
    Txn(txn::TxnArgs),
    /// Fetch from the log start (cold / catch-up) or tail the end (hot).
    Consume(ConsumeArgs),
    /// Produce at a fixed rate and consume; latency from intended send time.
    EndToEnd(EndToEndArgs),
    /// Measure this machine's ceilings (TCP, pipeline, page cache, fsync, CRC, sendfile).
    Limits(LimitsArgs),
    /// How often this machine stops a compute-only thread on each core, and
    /// whether its CPU clock was charged for the pause (host pauses a guest
    /// does not account as steal) or not (other threads, accounted steal).
    Pauses(pauses::PausesArgs),
    /// The candidate ways for a shard to write appends, side by side
    /// (reactor pwritev, I/O thread, blocking pool, glommio io_uring file).
    AppendPaths(AppendPathsArgs),
    /// Fixed modest produce load while the broker holds more and more
    /// partitions, then more and more idle connections; p99 per step.
    Scale(ScaleArgs),
    /// Share group (KIP-932): members on one partition fetch and accept
    /// every record once; throughput and ShareAcknowledge latency.
    Share(share::ShareArgs),
    /// Draw several runs' `--json` outputs on one SVG chart (throughput
    /// per second, latency spectra), e.g. two brokers side by side.
    Chart(charts::ChartArgs),
}

#[derive(Args, Clone)]
struct AppendPathsArgs {
    /// Directory for the scratch files (on the file system of the data directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Core to pin the executor (and the threads it starts) to.
    #[arg(long, default_value_t = 0)]
    core: usize,
    /// Bytes per append.
    #[arg(long, default_value_t = 65536)]
    size: usize,
    /// MiB written per candidate and round.
    #[arg(long, default_value_t = 2048)]
    mib: u64,
    /// Rounds (the median is reported).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Write the results as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Args, Clone)]
struct ScaleArgs {
    /// Broker address host:port.
    #[arg(long, short = 'b', default_value = "127.0.0.1:9092")]
    bootstrap: String,
    /// Topic name prefix (one topic per partition step, deleted after it).
    #[arg(long, default_value = "fjord-scale")]
    topic: String,
    /// Partition counts, comma-separated ("" = skip).
    #[arg(long, default_value = "1,100,1000,10000")]
    partition_steps: String,
    /// Idle connection counts, comma-separated ("" = skip).
    #[arg(long, default_value = "1,100,1000,10000")]
    connection_steps: String,
    /// Active producer connections in every step.
    #[arg(long, default_value_t = 4)]
    producers: usize,
    /// Target MB/s over all producers.
    #[arg(long, default_value_t = 8.0)]
    rate: f64,
    #[arg(long, default_value_t = 512)]
    record_size: usize,
    #[arg(long, default_value_t = 4096)]
    batch_size: usize,
    /// 0, 1 or all.
    #[arg(long, default_value = "1")]
    acks: String,
    #[arg(long, default_value_t = 8)]
    inflight: usize,
    /// Seconds of load per step.
    #[arg(long, default_value_t = 3.0)]
    step_duration: f64,
    /// Threads opening the idle connections.
    #[arg(long, default_value_t = 4)]
    connect_threads: usize,
    /// Cores for client threads.
    #[arg(long, default_value = "1")]
    client_cores: String,
    #[arg(long)]
    json: Option<String>,
}

fn parse_steps<T: std::str::FromStr>(s: &str) -> Res<Vec<T>>
where
    T::Err: std::fmt::Display,
{
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| p.parse::<T>().map_err(|e| format!("step {p}: {e}").into()))
        .collect()
}

/// The most a latency-floor rate may ask for, MB/s: far above any
/// loopback rate, low enough that a run's frame count stays bounded.
const FLOOR_RATE_MAX: f64 = 100_000.0;

/// A comma-separated list of latency-floor rates in MB/s, each finite,
/// above 0 and at most [`FLOOR_RATE_MAX`]; empty gives an empty list.
fn floor_rate_list(s: &str) -> Res<Vec<f64>> {
    let rates = parse_steps::<f64>(s)?;
    match rates
        .iter()
        .find(|r| !(r.is_finite() && **r > 0.0 && **r <= FLOOR_RATE_MAX))
    {
        Some(r) => Err(format!("rate {r}: not in (0, {FLOOR_RATE_MAX}] MB/s").into()),
        None => Ok(rates),
    }
}

fn run_scale(a: &ScaleArgs) -> Res<()> {
    let cfg = scale::ScaleCfg {
        producer: ProducerCfg {
            bootstrap: a.bootstrap.clone(),
            topic: a.topic.clone(),
            partitions: 1,
            connections: a.producers.max(1),
            record_size: a.record_size,
            batch_bytes: a.batch_size,
            acks: parse_acks(&a.acks)?,
            compression: kafka_protocol::records::Compression::None,
            compressible: false,
            inflight: a.inflight,
            rate: Some(a.rate * 1e6),
            duration: Duration::from_secs_f64(a.step_duration),
            cores: parse_cores(&a.client_cores)?,
            stamp: false,
            version: 9,
        },
        partition_steps: parse_steps(&a.partition_steps)?,
        connection_steps: parse_steps(&a.connection_steps)?,
        connect_threads: a.connect_threads,
    };
    let steps = scale::run(&cfg)?;
    scale::print(&steps);
    if let Some(p) = &a.json {
        std::fs::write(
            p,
            serde_json::to_string_pretty(&scale::to_json(&cfg, &steps))?,
        )?;
    }
    Ok(())
}

#[derive(Args, Clone)]
struct Common {
    /// Broker address host:port.
    #[arg(long, short = 'b', default_value = "127.0.0.1:9092")]
    bootstrap: String,
    #[arg(long, default_value = "fjord-perf")]
    topic: String,
    #[arg(long, default_value_t = 1)]
    partitions: i32,
    /// Replicas per partition of the topic created (a cluster's brokers).
    #[arg(long, default_value_t = 1)]
    replication_factor: i16,
    /// Do not create the topic (CreateTopics) first.
    #[arg(long)]
    no_create: bool,
    /// Topic configs for CreateTopics, key=value (repeatable).
    #[arg(long = "topic-config")]
    topic_config: Vec<String>,
    /// Cores for client threads: "1", "1,2" or "1-3".
    #[arg(long, default_value = "1")]
    client_cores: String,
    /// Broker process id: report its CPU seconds per GB moved.
    #[arg(long)]
    broker_pid: Option<u32>,
    /// Seconds of load.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Write the result (timeline, percentiles) as JSON.
    #[arg(long)]
    json: Option<String>,
    /// Write an SVG chart: throughput per second over the run and the
    /// latency percentile spectrum of every histogram.
    #[arg(long)]
    plot: Option<String>,
    /// `limits --json` output: print figures as a percentage of the ceiling.
    #[arg(long)]
    ceiling_json: Option<String>,
    /// A Fjord broker's `metrics.listener` address (host:port): report the
    /// reactor stalls it counted during the run.
    #[arg(long)]
    metrics: Option<String>,
    /// Seconds between scrapes of the `--metrics` endpoint during the run
    /// (as a monitoring system scrapes it); the scrapes are counted in the
    /// report. Unset: no scraping beyond the stall counters' two reads.
    #[arg(long, requires = "metrics")]
    scrape_every: Option<f64>,
}

#[derive(Args, Clone)]
struct ProduceOpts {
    /// Record value size in bytes.
    #[arg(long, default_value_t = 1024)]
    record_size: usize,
    /// Batch size in bytes (records per batch = batch / record size).
    #[arg(long, default_value_t = 65536)]
    batch_size: usize,
    /// 0, 1 or all.
    #[arg(long, default_value = "1")]
    acks: String,
    /// none, gzip, snappy, lz4, zstd.
    #[arg(long, default_value = "none")]
    compression: String,
    /// Compressible (text-like) values instead of random bytes.
    #[arg(long)]
    compressible: bool,
    /// Producer connections.
    #[arg(long, default_value_t = 1)]
    connections: usize,
    /// Requests written ahead of their responses, per connection.
    #[arg(long, default_value_t = 8)]
    inflight: usize,
}

#[derive(Args, Clone)]
struct ProduceArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    p: ProduceOpts,
    /// Target MB/s over all connections (default: unlimited).
    #[arg(long)]
    rate: Option<f64>,
    /// The `--ceiling-json` figure the run is a share of: `pipeline`
    /// (receive+CRC+append) or `flush` (group-committed 64 KiB appends, for a
    /// broker with `log.flush.interval.messages=1`).
    #[arg(long, default_value = "pipeline", value_parser = ["pipeline", "flush"])]
    ceiling: String,
}

#[derive(Args, Clone)]
struct FetchOpts {
    /// Consumer connections (partitions are spread over them).
    #[arg(long, default_value_t = 1)]
    consumers: usize,
    /// Fetch max_bytes.
    #[arg(long, default_value_t = 52_428_800)]
    fetch_max_bytes: i32,
    /// Fetch partition_max_bytes.
    #[arg(long, default_value_t = 8_388_608)]
    partition_max_bytes: i32,
    /// Fetch max_wait_ms.
    #[arg(long, default_value_t = 500)]
    max_wait_ms: i32,
    /// Fetch min_bytes.
    #[arg(long, default_value_t = 1)]
    min_bytes: i32,
}

#[derive(Args, Clone)]
struct ConsumeArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    f: FetchOpts,
    /// start: read the existing log once from the beginning (cold /
    /// catch-up); end: tail new data (hot; something else must produce).
    #[arg(long, default_value = "start")]
    from: String,
    /// With --from start: when caught up, rewind to the log start and read
    /// again until --duration (measures fetch of page-cached data).
    #[arg(long)]
    rewind: bool,
    /// Produce this many MB first when the topic has less (cold read input).
    #[arg(long, default_value_t = 0.0)]
    fill_mb: f64,
}

#[derive(Args, Clone)]
struct EndToEndArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    p: ProduceOpts,
    #[command(flatten)]
    f: FetchOpts,
    /// Target MB/s over all producer connections (required).
    #[arg(long)]
    rate: f64,
}

#[derive(Args, Clone)]
struct LimitsArgs {
    /// Seconds for the receive+CRC+append pipeline (with timeline), the
    /// recorded part of the sustained write and the flush-per-batch ceiling.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Seconds for each of the other measurements.
    #[arg(long, default_value_t = 3.0)]
    short: f64,
    /// Core standing in for the broker.
    #[arg(long, default_value_t = 0)]
    server_core: usize,
    /// Core standing in for the client.
    #[arg(long, default_value_t = 1)]
    client_core: usize,
    /// Scratch directory (default under $TMPDIR).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Size of the page-cache / sendfile file in MiB.
    #[arg(long, default_value_t = 512)]
    file_mib: usize,
    /// fdatasync samples.
    #[arg(long, default_value_t = 200)]
    fsync_samples: usize,
    /// Append size before each fdatasync, bytes.
    #[arg(long, default_value_t = 4096)]
    small_append: usize,
    /// Latency floor rates in MB/s, comma-separated (default: 50 % and
    /// 80 % of the sustained-write ceiling measured in the same run, or of
    /// the receive+CRC+append ceiling with `--sustained-warmup 0`).
    #[arg(long, default_value = "")]
    floor_rates: String,
    /// Latency floor rates in MB/s run after those (or the default ones),
    /// comma-separated: e.g. the end-to-end run's fixed rate.
    #[arg(long, default_value = "")]
    floor_also: String,
    /// Latency floor frame payload, bytes (one produce batch).
    #[arg(long, default_value_t = 65536)]
    floor_frame: usize,
    /// Seconds of load per latency-floor rate.
    #[arg(long, default_value_t = 3.0)]
    floor_duration: f64,
    /// Sustained-write ceiling: seconds of unrecorded receive+CRC+append
    /// into new files before its `--duration` recorded seconds (as the
    /// brokers' produce runs after bench-compare's warm-up); 0 skips it.
    #[arg(long, default_value_t = 10.0)]
    sustained_warmup: f64,
    /// Measure only the fsync figures (fdatasync after a small append and
    /// the flush-per-batch ceiling), for a ceiling taken right before the
    /// run it bounds.
    #[arg(long, conflicts_with_all = ["floor_only", "fetch_only"])]
    flush_only: bool,
    /// Measure only the latency floor, at the --floor-rates and
    /// --floor-also rates (one of them required), for a floor taken beside
    /// the runs it bounds.
    #[arg(long, conflicts_with = "fetch_only")]
    floor_only: bool,
    /// Measure only the hot-fetch ceiling (loopback TCP and the sendfile
    /// ways, --short seconds each), for a ceiling taken right before the
    /// fetch run it bounds.
    #[arg(long)]
    fetch_only: bool,
    #[arg(long)]
    json: Option<String>,
}

fn parse_cores(s: &str) -> Res<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.trim().parse::<usize>()?..=b.trim().parse::<usize>()?),
            None => out.push(part.trim().parse()?),
        }
    }
    Ok(out)
}

fn parse_acks(s: &str) -> Res<i16> {
    Ok(match s {
        "0" => 0,
        "1" => 1,
        "all" | "-1" => -1,
        _ => return Err(format!("acks must be 0, 1 or all, not {s}").into()),
    })
}

/// Connects, negotiates versions, creates the topic.
fn prepare(c: &Common) -> Res<Versions> {
    let mut conn = Conn::connect(&c.bootstrap)?;
    let v = Versions::fetch(&mut conn)?;
    if !c.no_create {
        let cfgs: Vec<(String, String)> = c
            .topic_config
            .iter()
            .filter_map(|kv| {
                kv.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
            })
            .collect();
        create_topic(
            &mut conn,
            &v,
            &c.topic,
            c.partitions,
            c.replication_factor,
            &cfgs,
        )?;
    }
    Ok(v)
}

fn ceiling(c: &Common, key: &str, label: &str) -> Res<Option<(String, f64)>> {
    match &c.ceiling_json {
        None => Ok(None),
        Some(p) => {
            let j = load_ceilings(p)?;
            Ok(j[key].as_f64().map(|v| (label.to_string(), v)))
        }
    }
}

/// One quantile compared with the latency floor's: its name, its fraction,
/// the floor's JSON key and the label of the floor's rate.
struct FloorQuantile {
    name: &'static str,
    q: f64,
    key: &'static str,
    rate_label: &'static str,
}

/// The p99 against the floor's p99 ("within 2× of the floor" is the target).
const FLOOR_P99: FloorQuantile = FloorQuantile {
    name: "p99",
    q: 0.99,
    key: "p99_us",
    rate_label: "floor rate MB/s",
};

/// The p99.9 against the floor's p99.9 (for the steady-state end-to-end
/// histogram: both leave out their first 200 ms; the floor is one hop, a
/// frame in and an ack out, end-to-end two, produce then fetch).
const FLOOR_P999: FloorQuantile = FloorQuantile {
    name: "p99.9",
    q: 0.999,
    key: "p999_us",
    rate_label: "floor p99.9 rate MB/s",
};

/// With `--ceiling-json`: the latency floor's quantile `fq` (µs) at the
/// rate nearest to `rate_mb_s` next to the same quantile of `hist` (ns
/// recorded, µs given), and their ratio. Empty without such a floor in the
/// file or without samples.
fn floor_figures(
    c: &Common,
    rate_mb_s: f64,
    name: &str,
    hist: &hdrhistogram::Histogram<u64>,
    fq: &FloorQuantile,
) -> Res<Vec<(String, f64)>> {
    let Some(p) = &c.ceiling_json else {
        return Ok(Vec::new());
    };
    let Some((rate, floor)) = limits::nearest_floor(&load_ceilings(p)?, rate_mb_s, fq.key) else {
        return Ok(Vec::new());
    };
    if hist.is_empty() {
        return Ok(Vec::new());
    }
    let v = hist.value_at_quantile(fq.q) as f64 / 1e3;
    let q = fq.name;
    Ok(vec![
        (format!("{name} {q} µs"), v),
        (fq.rate_label.into(), rate),
        (format!("floor {q} µs"), floor),
        (format!("{q} ÷ floor {q}"), v / floor.max(1e-9)),
    ])
}

/// The end-to-end histogram of records meant to be sent after
/// [`E2E_WARMUP`] (its name in the report and under the JSON's `latency`).
const E2E_STEADY: &str = "end-to-end (after 200 ms)";

/// What `end-to-end`'s steady-state histogram leaves out: the records
/// meant to be sent in the first 200 ms, as `limits`' latency floor does.
const E2E_WARMUP: Duration = Duration::from_millis(200);

fn producer_cfg(
    c: &Common,
    p: &ProduceOpts,
    v: &Versions,
    rate: Option<f64>,
    stamp: bool,
) -> Res<ProducerCfg> {
    Ok(ProducerCfg {
        bootstrap: c.bootstrap.clone(),
        topic: c.topic.clone(),
        partitions: c.partitions,
        connections: p.connections.max(1),
        record_size: p.record_size,
        batch_bytes: p.batch_size,
        acks: parse_acks(&p.acks)?,
        compression: batch::parse_compression(&p.compression)?,
        compressible: p.compressible,
        inflight: p.inflight,
        rate: rate.map(|mb| mb * 1e6),
        duration: Duration::from_secs_f64(c.duration),
        cores: parse_cores(&c.client_cores)?,
        stamp,
        version: produce_version(v)?,
    })
}

fn run_produce(a: &ProduceArgs) -> Res<Report> {
    let c = &a.common;
    let v = prepare(c)?;
    let cfg = producer_cfg(c, &a.p, &v, a.rate, false)?;
    let counters = Arc::new(Counters::default());
    let cpu = CpuProbe::start(c.broker_pid);
    let stalls = StallProbe::start(c.metrics.as_deref());
    let tl = Timeline::start("produce", counters.clone());
    let start = Instant::now();
    let mut ti = 0;
    let run = start_producers(&cfg, counters.clone(), start, &mut ti)?;
    let hists: Vec<_> = run
        .handles
        .into_iter()
        .filter_map(|h| h.join().ok())
        .collect();
    let elapsed = start.elapsed().as_secs_f64();
    let broker_cpu_s = cpu.stop();
    let mut stall_figures = stalls.finish();
    let timeline = tl.finish();
    let ack = merge(hists.iter());
    let achieved = counters.bytes.load(Ordering::Relaxed) as f64 / elapsed.max(1e-9) / 1e6;
    stall_figures.extend(floor_figures(
        c,
        a.rate.unwrap_or(achieved),
        "produce ack",
        &ack,
        &FLOOR_P99,
    )?);
    Ok(Report {
        workload: format!(
            "produce acks={} {}B x {}B batches",
            a.p.acks, a.p.record_size, a.p.batch_size
        ),
        params: json!({"bootstrap": c.bootstrap, "topic": c.topic, "partitions": c.partitions,
            "record_size": a.p.record_size, "batch_size": a.p.batch_size, "acks": a.p.acks,
            "compression": a.p.compression, "connections": cfg.connections, "inflight": a.p.inflight,
            "rate_mb_s": a.rate, "duration_s": c.duration, "produce_version": cfg.version}),
        elapsed_s: elapsed,
        bytes: counters.bytes.load(Ordering::Relaxed),
        records: counters.records.load(Ordering::Relaxed),
        errors: counters.errors.load(Ordering::Relaxed),
        timeline,
        hists: vec![("produce ack".into(), ack)],
        broker_cpu_s,
        ceiling: if a.ceiling == "flush" {
            ceiling(
                c,
                "flush_group_ceiling_mb_s",
                "flush-per-batch ceiling (group-committed 64 KiB appends)",
            )?
        } else {
            ceiling(c, "pipeline_mb_s", "receive+CRC+append ceiling")?
        },
        extra: stall_figures,
    })
}

fn consumer_cfg(c: &Common, f: &FetchOpts, v: &Versions, stamps: bool) -> Res<ConsumerCfg> {
    Ok(ConsumerCfg {
        bootstrap: c.bootstrap.clone(),
        topic: c.topic.clone(),
        partitions: c.partitions,
        consumers: f.consumers.max(1),
        max_bytes: f.fetch_max_bytes,
        partition_max_bytes: f.partition_max_bytes,
        max_wait_ms: f.max_wait_ms,
        min_bytes: f.min_bytes,
        cores: parse_cores(&c.client_cores)?,
        version: fetch_version(v)?,
        rewind: false,
        stop_at: None,
        stamps,
        steady_from_unix_ns: None,
    })
}

fn run_consume(a: &ConsumeArgs) -> Res<Report> {
    let c = &a.common;
    let v = prepare(c)?;
    let mut cfg = consumer_cfg(c, &a.f, &v, false)?;
    let mut start_offs = offsets(&c.bootstrap, &v, &c.topic, c.partitions, -2)?;
    let mut end_offs = offsets(&c.bootstrap, &v, &c.topic, c.partitions, -1)?;
    let have: i64 = (0..c.partitions)
        .map(|p| end_offs[&p] - start_offs[&p])
        .sum();
    if a.fill_mb > 0.0 && a.from == "start" {
        let want_records = (a.fill_mb * 1e6 / 1024.0) as i64;
        if have < want_records {
            eprintln!("filling topic with {:.0} MB first", a.fill_mb);
            let mut pc = producer_cfg(
                c,
                &ProduceOpts {
                    record_size: 1024,
                    batch_size: 65536,
                    acks: "1".into(),
                    compression: "none".into(),
                    compressible: false,
                    connections: 1,
                    inflight: 8,
                },
                &v,
                None,
                false,
            )?;
            pc.duration = Duration::from_secs(3600);
            // Produce until enough records are acknowledged.
            let counters = Arc::new(Counters::default());
            let stop_dur = fill(&pc, counters, want_records - have)?;
            eprintln!("filled in {stop_dur:.1} s");
            start_offs = offsets(&c.bootstrap, &v, &c.topic, c.partitions, -2)?;
            end_offs = offsets(&c.bootstrap, &v, &c.topic, c.partitions, -1)?;
        }
    }
    let from = match a.from.as_str() {
        "start" => {
            if a.rewind {
                cfg.rewind = true;
            } else {
                cfg.stop_at = Some(end_offs.clone());
            }
            start_offs.clone()
        }
        "end" => end_offs.clone(),
        other => return Err(format!("--from start|end, not {other}").into()),
    };
    let counters = Arc::new(Counters::default());
    let stop = Arc::new(AtomicBool::new(false));
    let cpu = CpuProbe::start(c.broker_pid);
    let stalls = StallProbe::start(c.metrics.as_deref());
    let tl = Timeline::start("consume", counters.clone());
    let start = Instant::now();
    let mut ti = 0;
    let handles = start_consumers(
        &cfg,
        &from,
        &start_offs,
        counters.clone(),
        stop.clone(),
        &mut ti,
    )?;
    let deadline = start + Duration::from_secs_f64(c.duration);
    while Instant::now() < deadline && handles.iter().any(|h| !h.is_finished()) {
        std::thread::sleep(Duration::from_millis(5));
    }
    stop.store(true, Ordering::Relaxed);
    let outs: Vec<_> = handles.into_iter().filter_map(|h| h.join().ok()).collect();
    let elapsed = start.elapsed().as_secs_f64();
    let broker_cpu_s = cpu.stop();
    let stall_figures = stalls.finish();
    let timeline = tl.finish();
    let mode = match (a.from.as_str(), a.rewind) {
        ("start", false) => "cold (from start, once)",
        ("start", true) => "hot (page-cached, rewinding)",
        _ => "tailing",
    };
    Ok(Report {
        workload: format!("consume {mode}"),
        params: json!({"bootstrap": c.bootstrap, "topic": c.topic, "partitions": c.partitions,
            "consumers": cfg.consumers, "fetch_max_bytes": cfg.max_bytes,
            "partition_max_bytes": cfg.partition_max_bytes, "max_wait_ms": cfg.max_wait_ms,
            "from": a.from, "rewind": a.rewind, "duration_s": c.duration, "fetch_version": cfg.version}),
        elapsed_s: elapsed,
        bytes: counters.bytes.load(Ordering::Relaxed),
        records: counters.records.load(Ordering::Relaxed),
        errors: counters.errors.load(Ordering::Relaxed),
        timeline,
        hists: vec![(
            "fetch round trip".into(),
            merge(outs.iter().map(|o| &o.fetch_rtt)),
        )],
        broker_cpu_s,
        ceiling: ceiling(
            c,
            "sendfile_mb_s",
            "hot-fetch ceiling (best sendfile way or loopback TCP)",
        )?,
        extra: stall_figures,
    })
}

/// Produces unlimited until `records` are acknowledged; returns seconds.
fn fill(cfg: &ProducerCfg, counters: Arc<Counters>, records: i64) -> Res<f64> {
    let mut cfg = cfg.clone();
    let start = Instant::now();
    // Run in 1 s slices until enough is acknowledged.
    cfg.duration = Duration::from_secs(1);
    loop {
        let mut ti = 0;
        let run = start_producers(&cfg, counters.clone(), Instant::now(), &mut ti)?;
        for h in run.handles {
            let _ = h.join();
        }
        if counters.records.load(Ordering::Relaxed) as i64 >= records {
            return Ok(start.elapsed().as_secs_f64());
        }
        if counters.errors.load(Ordering::Relaxed) > 0 {
            return Err("produce errors while filling".into());
        }
    }
}

fn run_end_to_end(a: &EndToEndArgs) -> Res<Report> {
    let c = &a.common;
    if !(a.rate.is_finite() && a.rate > 0.0) {
        return Err(format!("--rate {}: must be above 0 MB/s", a.rate).into());
    }
    let v = prepare(c)?;
    let pcfg = producer_cfg(c, &a.p, &v, Some(a.rate), true)?;
    let mut ccfg = consumer_cfg(c, &a.f, &v, true)?;
    // Consumers keep their own cores list; producers and consumers share it.
    ccfg.rewind = false;
    let steady_from = Arc::new(AtomicU64::new(0));
    ccfg.steady_from_unix_ns = Some(steady_from.clone());
    let start_offs = offsets(&c.bootstrap, &v, &c.topic, c.partitions, -2)?;
    let end_offs = offsets(&c.bootstrap, &v, &c.topic, c.partitions, -1)?;
    let pcounters = Arc::new(Counters::default());
    let ccounters = Arc::new(Counters::default());
    let stop = Arc::new(AtomicBool::new(false));
    let cpu = CpuProbe::start(c.broker_pid);
    let stalls = StallProbe::start(c.metrics.as_deref());
    let mut ti = 0;
    let consumers = start_consumers(
        &ccfg,
        &end_offs,
        &start_offs,
        ccounters.clone(),
        stop.clone(),
        &mut ti,
    )?;
    let tl = Timeline::start("end-to-end (consumed)", ccounters.clone());
    let start = Instant::now() + Duration::from_millis(50);
    // The steady-state histogram leaves out what was meant to be sent in
    // the first E2E_WARMUP, as the latency floor leaves out its first
    // 200 ms: a new topic's first batches, first segment and first fetches.
    steady_from.store(
        workloads::unix_ns() + (start - Instant::now() + E2E_WARMUP).as_nanos() as u64,
        Ordering::Relaxed,
    );
    let run = start_producers(&pcfg, pcounters.clone(), start, &mut ti)?;
    let acked = run.acked_records.clone();
    let phists: Vec<_> = run
        .handles
        .into_iter()
        .filter_map(|h| h.join().ok())
        .collect();
    // Drain: wait until everything acknowledged was consumed (max 5 s).
    let drain_end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < drain_end
        && ccounters.records.load(Ordering::Relaxed) < acked.load(Ordering::Relaxed)
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    stop.store(true, Ordering::Relaxed);
    let outs: Vec<_> = consumers
        .into_iter()
        .filter_map(|h| h.join().ok())
        .collect();
    let elapsed = c.duration;
    let broker_cpu_s = cpu.stop();
    let mut stall_figures = stalls.finish();
    let timeline = tl.finish();
    let e2e = merge(outs.iter().map(|o| &o.e2e));
    let e2e_steady = merge(outs.iter().map(|o| &o.e2e_steady));
    stall_figures.extend(floor_figures(c, a.rate, "end-to-end", &e2e, &FLOOR_P99)?);
    stall_figures.extend(floor_figures(
        c,
        a.rate,
        E2E_STEADY,
        &e2e_steady,
        &FLOOR_P999,
    )?);
    let produced = acked.load(Ordering::Relaxed);
    let consumed = ccounters.records.load(Ordering::Relaxed);
    if consumed < produced {
        eprintln!("warning: consumed {consumed} of {produced} acknowledged records");
    }
    Ok(Report {
        workload: format!("end-to-end at {:.1} MB/s target, acks={}", a.rate, a.p.acks),
        params: json!({"bootstrap": c.bootstrap, "topic": c.topic, "partitions": c.partitions,
            "record_size": a.p.record_size, "batch_size": a.p.batch_size, "acks": a.p.acks,
            "connections": pcfg.connections, "consumers": ccfg.consumers, "rate_mb_s": a.rate,
            "duration_s": c.duration, "produced_records": produced, "consumed_records": consumed,
            "produce_version": pcfg.version, "fetch_version": ccfg.version,
            "max_wait_ms": ccfg.max_wait_ms}),
        elapsed_s: elapsed,
        bytes: ccounters.bytes.load(Ordering::Relaxed),
        records: consumed,
        errors: pcounters.errors.load(Ordering::Relaxed) + ccounters.errors.load(Ordering::Relaxed),
        timeline,
        hists: vec![
            ("end-to-end".into(), e2e),
            // Absent (not zeros) when the run was no longer than the
            // warm-up it leaves out.
            (E2E_STEADY.into(), e2e_steady),
            ("produce ack".into(), merge(phists.iter())),
        ]
        .into_iter()
        .filter(|(name, h)| name != E2E_STEADY || !h.is_empty())
        .collect(),
        broker_cpu_s,
        ceiling: ceiling(c, "pipeline_mb_s", "receive+CRC+append ceiling")?,
        extra: stall_figures,
    })
}

fn main() {
    let cli = Cli::parse();
    let r = match &cli.cmd {
        Cmd::Produce(a) => scrape::scraped(&a.common, || run_produce(a)),
        Cmd::Consume(a) => scrape::scraped(&a.common, || run_consume(a)),
        Cmd::Txn(a) => scrape::scraped(&a.common, || txn::run(a)),
        Cmd::EndToEnd(a) => scrape::scraped(&a.common, || run_end_to_end(a)),
        Cmd::Chart(a) => {
            if let Err(e) = charts::run(a) {
                eprintln!("fjord-perf chart: {e}");
                std::process::exit(1);
            }
            eprintln!("wrote {}", a.out.display());
            return;
        }
        Cmd::Pauses(a) => {
            if let Err(e) = pauses::run(a) {
                eprintln!("fjord-perf pauses: {e}");
                std::process::exit(1);
            }
            return;
        }
        Cmd::Share(a) => {
            if let Err(e) = share::run(a) {
                eprintln!("fjord-perf share: {e}");
                std::process::exit(1);
            }
            return;
        }
        Cmd::Scale(a) => {
            if let Err(e) = run_scale(a) {
                eprintln!("fjord-perf scale: {e}");
                std::process::exit(1);
            }
            return;
        }
        Cmd::AppendPaths(a) => {
            let dir = limits::default_dir(a.dir.as_deref());
            if let Err(e) = append_paths::run(
                &dir,
                a.core,
                a.size.max(64),
                a.mib.max(1),
                a.rounds.max(1),
                a.json.as_deref(),
            ) {
                eprintln!("fjord-perf append-paths: {e}");
                std::process::exit(1);
            }
            return;
        }
        Cmd::Limits(a) => {
            let cfg = limits::LimitsCfg {
                duration: Duration::from_secs_f64(a.duration),
                short: Duration::from_secs_f64(a.short),
                server_core: a.server_core,
                client_core: a.client_core,
                dir: limits::default_dir(a.dir.as_deref()),
                file_mib: a.file_mib.max(1),
                fsync_samples: a.fsync_samples.max(1),
                small_append: a.small_append.max(1),
                floor_rates: match floor_rate_list(&a.floor_rates) {
                    Ok(r) => r,
                    Err(e) => {
                        eprintln!("fjord-perf limits: --floor-rates: {e}");
                        std::process::exit(64);
                    }
                },
                floor_also: match floor_rate_list(&a.floor_also) {
                    Ok(r) => r,
                    Err(e) => {
                        eprintln!("fjord-perf limits: --floor-also: {e}");
                        std::process::exit(64);
                    }
                },
                floor_frame: a.floor_frame.max(1),
                floor_duration: Duration::from_secs_f64(a.floor_duration.max(0.1)),
                sustained_warmup: (a.sustained_warmup > 0.0)
                    .then(|| Duration::from_secs_f64(a.sustained_warmup)),
            };
            if a.floor_only && cfg.floor_rates.is_empty() && cfg.floor_also.is_empty() {
                eprintln!("fjord-perf limits: --floor-only needs --floor-rates or --floor-also");
                std::process::exit(64);
            }
            let res = if a.flush_only {
                limits::run_flush(&cfg, a.json.as_deref())
            } else if a.floor_only {
                limits::run_floor(&cfg, a.json.as_deref())
            } else if a.fetch_only {
                limits::run_fetch(&cfg, a.json.as_deref())
            } else {
                limits::run(&cfg, a.json.as_deref())
            };
            match res {
                Ok(_) => return,
                Err(e) => {
                    eprintln!("fjord-perf limits: {e}");
                    std::process::exit(1);
                }
            }
        }
    };
    match r {
        Ok((report, common)) => {
            report.print();
            if let Err(e) = report.write_outputs(common.json.as_deref(), common.plot.as_deref()) {
                eprintln!("fjord-perf: writing outputs: {e}");
                std::process::exit(1);
            }
            if report.errors > 0 {
                std::process::exit(2);
            }
        }
        Err(e) => {
            eprintln!("fjord-perf: {e}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_lists() {
        assert_eq!(parse_cores("1").unwrap(), vec![1]);
        assert_eq!(parse_cores("1,3").unwrap(), vec![1, 3]);
        assert_eq!(parse_cores("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert!(parse_cores("x").is_err());
    }

    #[test]
    fn floor_rates_are_finite_and_positive() {
        assert_eq!(floor_rate_list("50, 100.5").unwrap(), vec![50.0, 100.5]);
        assert!(floor_rate_list("").unwrap().is_empty());
        for bad in ["0", "-5", "nan", "inf", "1e6", "50,abc"] {
            assert!(floor_rate_list(bad).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn step_lists() {
        assert_eq!(
            parse_steps::<i32>("1, 100,1000").unwrap(),
            vec![1, 100, 1000]
        );
        assert!(parse_steps::<usize>("").unwrap().is_empty());
        assert!(parse_steps::<usize>("1,x").is_err());
    }

    #[test]
    fn acks_values() {
        assert_eq!(parse_acks("all").unwrap(), -1);
        assert_eq!(parse_acks("0").unwrap(), 0);
        assert!(parse_acks("2").is_err());
    }

    #[test]
    fn cli_parses() {
        Cli::try_parse_from([
            "fjord-perf",
            "produce",
            "-b",
            "h:1",
            "--acks",
            "all",
            "--rate",
            "50",
        ])
        .unwrap();
        Cli::try_parse_from(["fjord-perf", "end-to-end", "--rate", "10"]).unwrap();
        Cli::try_parse_from(["fjord-perf", "produce", "--metrics", "127.0.0.1:9644"]).unwrap();
        Cli::try_parse_from([
            "fjord-perf",
            "produce",
            "--metrics",
            "127.0.0.1:9644",
            "--scrape-every",
            "1",
        ])
        .unwrap();
        // Scraping needs the endpoint.
        assert!(Cli::try_parse_from(["fjord-perf", "produce", "--scrape-every", "1"]).is_err());
        Cli::try_parse_from([
            "fjord-perf",
            "chart",
            "--out",
            "c.svg",
            "fjord=a.json",
            "kafka=b.json",
        ])
        .unwrap();
        assert!(Cli::try_parse_from(["fjord-perf", "chart", "--out", "c.svg"]).is_err());
        Cli::try_parse_from([
            "fjord-perf",
            "txn",
            "--txn-batches",
            "100",
            "--abort-every",
            "3",
            "--connections",
            "2",
        ])
        .unwrap();
        Cli::try_parse_from(["fjord-perf", "limits", "--duration", "2"]).unwrap();
        Cli::try_parse_from(["fjord-perf", "limits", "--floor-rates", "100,200.5"]).unwrap();
        Cli::try_parse_from(["fjord-perf", "scale", "--partition-steps", ""]).unwrap();
    }
}
