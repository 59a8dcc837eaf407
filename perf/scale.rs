//! The `scale` workload: the same modest open-loop produce load, measured
//! while the broker carries more and more partitions (one topic of N
//! partitions, the producers spread over all of them) and more and more
//! connections (N idle but connected clients, each having done one
//! ApiVersions round trip, next to the same few active producers). The
//! figure of merit is p99(N) / p99(first step): how much the tail grows
//! with the broker's size rather than with its load.

use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::stats::{fmt_ns, merge, Counters};
use crate::wire::{create_topic, delete_topic, Conn, Res, Versions};
use crate::workloads::{produce_version, start_producers, ProducerCfg};

#[derive(Clone)]
pub struct ScaleCfg {
    /// Producer settings; `partitions`, `topic` and `duration` are per step.
    pub producer: ProducerCfg,
    pub partition_steps: Vec<i32>,
    pub connection_steps: Vec<usize>,
    /// Threads opening the idle connections.
    pub connect_threads: usize,
}

#[derive(Debug, Clone)]
pub struct Step {
    pub kind: &'static str,
    pub n: usize,
    /// Why the step did not run (or ran only partly), if so.
    pub note: Option<String>,
    pub setup_s: f64,
    pub mb_per_s: f64,
    pub errors: u64,
    /// p50, p99, p99.9, max of the produce acknowledgement, ns.
    pub p50: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

impl Step {
    fn failed(kind: &'static str, n: usize, setup_s: f64, note: String) -> Step {
        Step {
            kind,
            n,
            note: Some(note),
            setup_s,
            mb_per_s: 0.0,
            errors: 0,
            p50: 0,
            p99: 0,
            p999: 0,
            max: 0,
        }
    }

    fn ran(&self) -> bool {
        self.p99 > 0
    }
}

/// Raises this process's open-files soft limit to its hard limit; gives
/// the resulting soft limit.
pub fn raise_nofile() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on a stack value.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return 0;
        }
        if r.rlim_cur < r.rlim_max {
            let want = libc::rlimit {
                rlim_cur: r.rlim_max,
                rlim_max: r.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                r = want;
            }
        }
    }
    r.rlim_cur
}

/// One measured step: the producers of `cfg` for `cfg.duration`.
fn measure(kind: &'static str, n: usize, cfg: &ProducerCfg, setup_s: f64) -> Res<Step> {
    let counters = Arc::new(Counters::default());
    let start = Instant::now() + Duration::from_millis(20);
    let mut ti = 0;
    let run = start_producers(cfg, counters.clone(), start, &mut ti)?;
    let hists: Vec<_> = run
        .handles
        .into_iter()
        .filter_map(|h| h.join().ok())
        .collect();
    let elapsed = start.elapsed().as_secs_f64().max(1e-9);
    let h = merge(hists.iter());
    let errors = counters.errors.load(Ordering::Relaxed);
    Ok(Step {
        kind,
        n,
        note: h.is_empty().then(|| "no acknowledged request".to_string()),
        setup_s,
        mb_per_s: counters.bytes.load(Ordering::Relaxed) as f64 / 1e6 / elapsed,
        errors,
        p50: h.value_at_quantile(0.5),
        p99: h.value_at_quantile(0.99),
        p999: h.value_at_quantile(0.999),
        max: h.max(),
    })
}

fn partition_step(cfg: &ScaleCfg, v: &Versions, n: i32) -> Step {
    let topic = format!("{}-p{n}", cfg.producer.topic);
    let t0 = Instant::now();
    let created = Conn::connect(&cfg.producer.bootstrap)
        .and_then(|mut c| create_topic(&mut c, v, &topic, n, 1, &[]));
    let setup_s = t0.elapsed().as_secs_f64();
    if let Err(e) = created {
        return Step::failed("partitions", n as usize, setup_s, format!("create: {e}"));
    }
    let mut p = cfg.producer.clone();
    p.topic = topic.clone();
    p.partitions = n;
    let step = measure("partitions", n as usize, &p, setup_s)
        .unwrap_or_else(|e| Step::failed("partitions", n as usize, setup_s, e.to_string()));
    if let Err(e) =
        Conn::connect(&cfg.producer.bootstrap).and_then(|mut c| delete_topic(&mut c, v, &topic))
    {
        eprintln!("scale: deleting {topic}: {e}");
    }
    step
}

/// Opens `n` connections, each doing one ApiVersions round trip (so the
/// broker has accepted and served it), over `threads` threads.
fn open_idle(bootstrap: &str, n: usize, threads: usize) -> (Vec<TcpStream>, Option<String>) {
    let out = Arc::new(Mutex::new(Vec::with_capacity(n)));
    let err = Arc::new(Mutex::new(None::<String>));
    let threads = threads.clamp(1, n.max(1));
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let (out, err, b) = (out.clone(), err.clone(), bootstrap.to_string());
            let mine = n / threads + usize::from(t < n % threads);
            std::thread::spawn(move || {
                let mut local = Vec::with_capacity(mine);
                for _ in 0..mine {
                    if err.lock().map(|e| e.is_some()).unwrap_or(true) {
                        break;
                    }
                    match Conn::connect_small(&b).and_then(|mut c| {
                        Versions::fetch(&mut c)?;
                        Ok(c.into_stream())
                    }) {
                        Ok(s) => local.push(s),
                        Err(e) => {
                            if let Ok(mut g) = err.lock() {
                                g.get_or_insert_with(|| e.to_string());
                            }
                            break;
                        }
                    }
                }
                if let Ok(mut g) = out.lock() {
                    g.extend(local);
                }
            })
        })
        .collect();
    for h in hs {
        let _ = h.join();
    }
    let conns = std::mem::take(&mut *out.lock().unwrap_or_else(|p| p.into_inner()));
    let e = err.lock().ok().and_then(|g| g.clone());
    (conns, e)
}

fn connection_step(cfg: &ScaleCfg, n: usize) -> Step {
    let t0 = Instant::now();
    let (idle, err) = open_idle(&cfg.producer.bootstrap, n, cfg.connect_threads);
    let setup_s = t0.elapsed().as_secs_f64();
    if idle.len() < n {
        let opened = idle.len();
        drop(idle);
        std::thread::sleep(Duration::from_millis(300));
        return Step::failed(
            "connections",
            n,
            setup_s,
            format!("opened {opened} of {n}: {}", err.unwrap_or_default()),
        );
    }
    let mut p = cfg.producer.clone();
    p.topic = format!("{}-conns", cfg.producer.topic);
    p.partitions = cfg.producer.connections as i32;
    let step = measure("connections", n, &p, setup_s)
        .unwrap_or_else(|e| Step::failed("connections", n, setup_s, e.to_string()));
    // Are the idle connections still open (not closed by the broker)?
    let closed = idle.iter().filter(|s| peer_closed(s)).count();
    drop(idle);
    std::thread::sleep(Duration::from_millis(300));
    if closed > 0 {
        let mut s = step;
        s.note = Some(format!(
            "{closed} idle connections were closed by the broker"
        ));
        return s;
    }
    step
}

/// True when the peer closed the connection (a non-blocking peek reads EOF).
fn peer_closed(s: &TcpStream) -> bool {
    let mut b = [0u8; 1];
    if s.set_nonblocking(true).is_err() {
        return false;
    }
    let r = s.peek(&mut b);
    let _ = s.set_nonblocking(false);
    matches!(r, Ok(0))
}

pub fn run(cfg: &ScaleCfg) -> Res<Vec<Step>> {
    let nofile = raise_nofile();
    eprintln!("scale: client open-files limit {nofile}");
    let mut conn = Conn::connect(&cfg.producer.bootstrap)?;
    let v = Versions::fetch(&mut conn)?;
    let mut pc = cfg.producer.clone();
    pc.version = produce_version(&v)?;
    let cfg = ScaleCfg {
        producer: pc,
        ..cfg.clone()
    };
    let mut steps = Vec::new();
    for &n in &cfg.partition_steps {
        eprintln!("scale: {n} partitions");
        let s = partition_step(&cfg, &v, n);
        print_progress(&s);
        steps.push(s);
    }
    if !cfg.connection_steps.is_empty() {
        let topic = format!("{}-conns", cfg.producer.topic);
        create_topic(
            &mut conn,
            &v,
            &topic,
            cfg.producer.connections as i32,
            1,
            &[],
        )?;
        for &n in &cfg.connection_steps {
            eprintln!(
                "scale: {n} idle connections + {} producers",
                cfg.producer.connections
            );
            let s = connection_step(&cfg, n);
            print_progress(&s);
            steps.push(s);
        }
        if let Err(e) = delete_topic(&mut conn, &v, &topic) {
            eprintln!("scale: deleting {topic}: {e}");
        }
    }
    Ok(steps)
}

fn print_progress(s: &Step) {
    match &s.note {
        Some(n) if !s.ran() => eprintln!("  {} {}: {n}", s.kind, s.n),
        _ => eprintln!(
            "  {} {}: {:.1} MB/s p50 {} p99 {} (setup {:.1} s)",
            s.kind,
            s.n,
            s.mb_per_s,
            fmt_ns(s.p50),
            fmt_ns(s.p99),
            s.setup_s
        ),
    }
}

/// p99 of each step relative to the first step of its kind that ran.
pub fn ratios(steps: &[Step]) -> Vec<Option<f64>> {
    steps
        .iter()
        .map(|s| {
            let base = steps.iter().find(|b| b.kind == s.kind && b.ran())?;
            s.ran().then(|| s.p99 as f64 / base.p99 as f64)
        })
        .collect()
}

pub fn print(steps: &[Step]) {
    println!(
        "{:<12}{:>7}{:>9}{:>11}{:>11}{:>11}{:>11}{:>12}{:>8}  note",
        "step", "N", "MB/s", "p50", "p99", "p99.9", "max", "p99/p99(1)", "errors"
    );
    for (s, r) in steps.iter().zip(ratios(steps)) {
        let note = s.note.clone().unwrap_or_default();
        if !s.ran() {
            println!("{:<12}{:>7}{:>9}  {note}", s.kind, s.n, "-");
            continue;
        }
        println!(
            "{:<12}{:>7}{:>9.1}{:>11}{:>11}{:>11}{:>11}{:>12}{:>8}  {note}",
            s.kind,
            s.n,
            s.mb_per_s,
            fmt_ns(s.p50),
            fmt_ns(s.p99),
            fmt_ns(s.p999),
            fmt_ns(s.max),
            r.map(|r| format!("{r:.2}x")).unwrap_or_default(),
            s.errors
        );
    }
}

pub fn to_json(cfg: &ScaleCfg, steps: &[Step]) -> Value {
    let p = &cfg.producer;
    json!({
        "workload": "scale",
        "params": {"bootstrap": p.bootstrap, "topic": p.topic, "producers": p.connections,
            "rate_mb_s": p.rate.map(|r| r / 1e6), "record_size": p.record_size,
            "batch_size": p.batch_bytes, "acks": p.acks, "step_s": p.duration.as_secs_f64(),
            "produce_version": p.version},
        "steps": steps.iter().zip(ratios(steps)).map(|(s, r)| json!({
            "kind": s.kind, "n": s.n, "note": s.note, "setup_s": s.setup_s,
            "mb_per_s": s.mb_per_s, "errors": s.errors, "p50_us": s.p50 as f64 / 1e3,
            "p99_us": s.p99 as f64 / 1e3, "p99.9_us": s.p999 as f64 / 1e3,
            "max_us": s.max as f64 / 1e3, "p99_ratio": r,
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(kind: &'static str, n: usize, p99: u64) -> Step {
        Step {
            kind,
            n,
            note: None,
            setup_s: 0.0,
            mb_per_s: 1.0,
            errors: 0,
            p50: p99 / 2,
            p99,
            p999: p99,
            max: p99,
        }
    }

    #[test]
    fn ratios_per_kind_against_first_step_that_ran() {
        let mut refused = step("partitions", 10000, 0);
        refused.note = Some("create: refused".into());
        let steps = vec![
            step("partitions", 1, 1000),
            step("partitions", 100, 1500),
            refused,
            step("connections", 1, 2000),
            step("connections", 1000, 5000),
        ];
        let r = ratios(&steps);
        assert_eq!(r[0], Some(1.0));
        assert_eq!(r[1], Some(1.5));
        assert_eq!(r[2], None);
        assert_eq!(r[3], Some(1.0));
        assert_eq!(r[4], Some(2.5));
        let j = to_json(
            &ScaleCfg {
                producer: ProducerCfg {
                    bootstrap: "h:1".into(),
                    topic: "t".into(),
                    partitions: 1,
                    connections: 4,
                    record_size: 512,
                    batch_bytes: 4096,
                    acks: 1,
                    compression: kafka_protocol::records::Compression::None,
                    compressible: false,
                    inflight: 8,
                    rate: Some(8e6),
                    duration: Duration::from_secs(3),
                    cores: vec![1],
                    stamp: false,
                    version: 9,
                },
                partition_steps: vec![1],
                connection_steps: vec![1],
                connect_threads: 1,
            },
            &steps,
        );
        assert_eq!(j["steps"][4]["p99_ratio"], 2.5);
        assert!(j["steps"][2]["p99_ratio"].is_null());
    }

    #[test]
    fn nofile_is_not_lowered() {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: plain syscall on a stack value.
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) };
        assert!(raise_nofile() >= r.rlim_cur);
    }
}
