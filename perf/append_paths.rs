//! `fjord-perf append-paths`: the candidate ways for a shard to write its
//! appends, side by side on one pinned core, each appending the same bytes
//! to a fresh file in the data directory's file system:
//!
//! - `sync`: pwritev(2) on the reactor thread (Fjord before the two-stage
//!   append);
//! - `io-thread`: Fjord's per-shard I/O thread (`fjord::shard::io`), with 1
//!   and with 4 appends outstanding (the second shows merged writes);
//! - `spawn-blocking`: glommio's blocking thread pool running the pwritev;
//! - `glommio-buffered`: glommio's io_uring `BufferedFile::write_at`, which
//!   takes an owned `Vec<u8>`, so the record bytes are copied first;
//! - `nowait`, `nowait-depth4`: what the shard does now
//!   (`IoThread::write_inline_first`): pwritev2(2) `RWF_NOWAIT` on the
//!   reactor when nothing is queued, the I/O thread for what would block —
//!   on a file system without buffered `RWF_NOWAIT` (ext4) the same as
//!   `io-thread`.
//!
//! For each: MB/s, the latency of one append (submit to completion), how
//! late a 200 µs reactor timer fires meanwhile (what every other partition
//! and connection on the core would wait), and the process CPU seconds per
//! GB (all threads). See docs/decisions/append-writes-on-an-io-thread.md.

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use glommio::{LocalExecutorBuilder, Placement};
use hdrhistogram::Histogram;
use serde_json::json;

/// What one candidate measured.
pub struct PathResult {
    pub name: String,
    pub mb_per_s: f64,
    pub append_us: (u64, u64, u64),
    pub lateness_us: (u64, u64, u64),
    pub cpu_s_per_gb: f64,
    pub write_calls: Option<u64>,
    /// Appends written inline with `RWF_NOWAIT` (the `nowait` candidates).
    pub inline_writes: Option<u64>,
}

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn open(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(path)
}

fn pct(h: &Histogram<u64>) -> (u64, u64, u64) {
    (h.value_at_quantile(0.5), h.value_at_quantile(0.99), h.max())
}

/// Runs every candidate on `core` with `count` appends of `size` bytes into
/// `dir`; prints a table and gives the results (also written to `json`).
pub fn run(
    dir: &Path,
    core: usize,
    size: usize,
    total_mib: u64,
    rounds: usize,
    json_out: Option<&Path>,
) -> Result<Vec<PathResult>, String> {
    let count = ((total_mib << 20) / size as u64).max(1) as usize;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let names = [
        "sync",
        "io-thread",
        "io-thread-depth4",
        "spawn-blocking",
        "glommio-buffered",
        "nowait",
        "nowait-depth4",
    ];
    let mut all: Vec<Vec<PathResult>> = Vec::new();
    for round in 0..rounds {
        let mut these = Vec::new();
        for name in names {
            let path = dir.join(format!("fjord-append-paths-{name}.tmp"));
            let r = run_one(name, &path, core, size, count)?;
            let _ = std::fs::remove_file(&path);
            eprintln!(
                "round {} {:<18} {:>8.0} MB/s  append p50/p99/max {:>5}/{:>6}/{:>7} µs  reactor lateness p50/p99/max {:>5}/{:>6}/{:>7} µs  CPU {:.2} s/GB",
                round + 1,
                r.name,
                r.mb_per_s,
                r.append_us.0,
                r.append_us.1,
                r.append_us.2,
                r.lateness_us.0,
                r.lateness_us.1,
                r.lateness_us.2,
                r.cpu_s_per_gb
            );
            these.push(r);
        }
        all.push(these);
    }
    // Median per candidate over the rounds (by MB/s).
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let mut runs: Vec<&PathResult> = all.iter().map(|r| &r[i]).collect();
        runs.sort_by(|a, b| a.mb_per_s.total_cmp(&b.mb_per_s));
        let med = runs[runs.len() / 2];
        out.push(PathResult {
            name: name.to_string(),
            mb_per_s: med.mb_per_s,
            append_us: med.append_us,
            lateness_us: med.lateness_us,
            cpu_s_per_gb: med.cpu_s_per_gb,
            write_calls: med.write_calls,
            inline_writes: med.inline_writes,
        });
    }
    println!("append paths, {size}-byte appends, {total_mib} MiB per run, {rounds} round(s), core {core}, {}:", dir.display());
    println!(
        "{:<18} {:>9} {:>22} {:>26} {:>9} {:>9} {:>9}",
        "candidate",
        "MB/s",
        "append p50/p99/max µs",
        "reactor late p50/p99/max",
        "CPU s/GB",
        "pwritevs",
        "inline"
    );
    for r in &out {
        println!(
            "{:<18} {:>9.0} {:>22} {:>26} {:>9.2} {:>9} {:>9}",
            r.name,
            r.mb_per_s,
            format!("{}/{}/{}", r.append_us.0, r.append_us.1, r.append_us.2),
            format!(
                "{}/{}/{}",
                r.lateness_us.0, r.lateness_us.1, r.lateness_us.2
            ),
            r.cpu_s_per_gb,
            r.write_calls.map_or("-".to_string(), |c| c.to_string()),
            r.inline_writes.map_or("-".to_string(), |c| c.to_string())
        );
    }
    if let Some(p) = json_out {
        let v: Vec<_> = out
            .iter()
            .map(|r| {
                json!({
                    "candidate": r.name,
                    "mb_per_s": r.mb_per_s,
                    "append_us_p50": r.append_us.0,
                    "append_us_p99": r.append_us.1,
                    "append_us_max": r.append_us.2,
                    "reactor_lateness_us_p50": r.lateness_us.0,
                    "reactor_lateness_us_p99": r.lateness_us.1,
                    "reactor_lateness_us_max": r.lateness_us.2,
                    "cpu_s_per_gb": r.cpu_s_per_gb,
                    "write_calls": r.write_calls,
                    "inline_writes": r.inline_writes,
                })
            })
            .collect();
        let doc = json!({"size": size, "total_mib": total_mib, "rounds": rounds, "results": v});
        std::fs::write(p, serde_json::to_string_pretty(&doc).unwrap_or_default())
            .map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(out)
}

fn run_one(
    name: &'static str,
    path: &Path,
    core: usize,
    size: usize,
    count: usize,
) -> Result<PathResult, String> {
    let path: PathBuf = path.to_path_buf();
    let ex = LocalExecutorBuilder::new(Placement::Fixed(core))
        .name("append-paths")
        .spawn(move || async move { candidate(name, &path, size, count).await })
        .map_err(|e| e.to_string())?;
    ex.join().map_err(|e| e.to_string())?
}

async fn candidate(
    name: &'static str,
    path: &Path,
    size: usize,
    count: usize,
) -> Result<PathResult, String> {
    let file = Arc::new(open(path).map_err(|e| e.to_string())?);
    // A request-like buffer: a 16-byte prefix plus the batch body, as the
    // reserve stage hands them over.
    let body = Bytes::from(vec![0x5au8; size - 16]);
    let head = Bytes::from(vec![0u8; 16]);
    let mut appends =
        Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).map_err(|e| e.to_string())?;
    let lateness = Rc::new(RefCell::new(
        Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).map_err(|e| e.to_string())?,
    ));
    let stop = Rc::new(std::cell::Cell::new(false));
    let ticker = {
        let (lateness, stop) = (lateness.clone(), stop.clone());
        glommio::spawn_local(async move {
            let tick = Duration::from_micros(200);
            while !stop.get() {
                let t = Instant::now();
                glommio::timer::sleep(tick).await;
                let late = t.elapsed().saturating_sub(tick).as_micros() as u64;
                let _ = lateness.borrow_mut().record(late.max(1));
            }
        })
    };
    let io =
        fjord::shard::io::IoThread::start("append-paths-io".into()).map_err(|e| e.to_string())?;
    let bfile = if name == "glommio-buffered" {
        Some(
            glommio::io::BufferedFile::create(path)
                .await
                .map_err(|e| e.to_string())?,
        )
    } else {
        None
    };
    let cpu0 = cpu_seconds();
    let t0 = Instant::now();
    let mut pos = 0u64;
    match name {
        "io-thread-depth4" | "nowait-depth4" => {
            let mut q: std::collections::VecDeque<(Instant, _)> = Default::default();
            for _ in 0..count {
                if q.len() == 4 {
                    if let Some((t, f)) = q.pop_front() {
                        let f: std::pin::Pin<
                            Box<dyn std::future::Future<Output = std::io::Result<()>>>,
                        > = f;
                        f.await.map_err(|e| e.to_string())?;
                        let _ = appends.record(t.elapsed().as_micros() as u64);
                    }
                }
                let parts = vec![head.clone(), body.clone()];
                let f: std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<()>>>> =
                    if name == "nowait-depth4" {
                        Box::pin(io.write_inline_first(file.clone(), pos, parts))
                    } else {
                        Box::pin(io.write(file.clone(), pos, parts))
                    };
                q.push_back((Instant::now(), f));
                pos += size as u64;
                futures_lite::future::yield_now().await;
            }
            while let Some((t, f)) = q.pop_front() {
                f.await.map_err(|e| e.to_string())?;
                let _ = appends.record(t.elapsed().as_micros() as u64);
            }
        }
        _ => {
            for _ in 0..count {
                let t = Instant::now();
                match name {
                    "sync" => {
                        fjord::storage::segment::pwritev_all(&file, &[&head, &body], pos)
                            .map_err(|e| e.to_string())?;
                    }
                    "io-thread" => io
                        .write(file.clone(), pos, vec![head.clone(), body.clone()])
                        .await
                        .map_err(|e| e.to_string())?,
                    "nowait" => io
                        .write_inline_first(file.clone(), pos, vec![head.clone(), body.clone()])
                        .await
                        .map_err(|e| e.to_string())?,
                    "spawn-blocking" => {
                        let (f, h, b) = (file.clone(), head.clone(), body.clone());
                        glommio::executor()
                            .spawn_blocking(move || {
                                fjord::storage::segment::pwritev_all(&f, &[&h, &b], pos)
                            })
                            .await
                            .map_err(|e| e.to_string())?
                    }
                    _ => {
                        let mut v = Vec::with_capacity(size);
                        v.extend_from_slice(&head);
                        v.extend_from_slice(&body);
                        if let Some(bf) = &bfile {
                            bf.write_at(v, pos).await.map_err(|e| e.to_string())?;
                        }
                    }
                }
                let _ = appends.record(t.elapsed().as_micros().max(1) as u64);
                pos += size as u64;
                // Let the ticker run between appends, as other tasks would.
                futures_lite::future::yield_now().await;
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    stop.set(true);
    ticker.await;
    if let Some(bf) = bfile {
        let _ = bf.close().await;
    }
    let _ = file.sync_data();
    let calls = io
        .stats()
        .write_calls
        .load(std::sync::atomic::Ordering::Relaxed);
    let bytes = pos as f64;
    let late = pct(&lateness.borrow());
    Ok(PathResult {
        name: name.to_string(),
        mb_per_s: bytes / secs / 1e6,
        append_us: pct(&appends),
        lateness_us: late,
        cpu_s_per_gb: cpu / (bytes / 1e9),
        write_calls: (name.starts_with("io-thread") || name.starts_with("nowait")).then_some(calls),
        inline_writes: name.starts_with("nowait").then(|| {
            io.stats()
                .inline_writes
                .load(std::sync::atomic::Ordering::Relaxed)
        }),
    })
}
