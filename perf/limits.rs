//! Machine ceilings: what the hardware and kernel allow on this box, with
//! no broker in the way. Each figure bounds one broker workload.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::rate::{fine_timer_slack, wait_until, Schedule};
use crate::stats::new_hist;
use crate::wire::Res;
use crate::workloads::pin;

const MIB: usize = 1 << 20;

pub struct LimitsCfg {
    pub duration: Duration,
    pub short: Duration,
    pub server_core: usize,
    pub client_core: usize,
    pub dir: PathBuf,
    pub file_mib: usize,
    pub fsync_samples: usize,
    pub small_append: usize,
    /// Latency floor: explicit rates in MB/s; empty = [`FLOOR_FRACTIONS`] of
    /// the sustained-write ceiling measured in the same run (of the
    /// pipeline ceiling when that is not measured).
    pub floor_rates: Vec<f64>,
    /// Latency floor: rates in MB/s run after those of `floor_rates` (or
    /// its default), e.g. the end-to-end run's fixed rate.
    pub floor_also: Vec<f64>,
    /// Latency floor: frame payload size in bytes.
    pub floor_frame: usize,
    /// Latency floor: seconds of load per rate.
    pub floor_duration: Duration,
    /// Sustained-write ceiling: unrecorded seconds before the recorded
    /// `duration` (None: not measured).
    pub sustained_warmup: Option<Duration>,
}

/// The bare pipeline's latency at one fixed rate.
#[derive(Debug, Clone)]
pub struct Floor {
    /// Target rate (MB/s, 10^6 bytes of frame payload per second).
    pub rate_mb_s: f64,
    /// Payload acknowledged per second over the recorded part (MB/s).
    pub achieved_mb_s: f64,
    /// Latency percentiles from intended send time to ack (µs).
    pub p50_us: f64,
    /// See `p50_us` (µs).
    pub p99_us: f64,
    /// See `p50_us` (µs).
    pub p999_us: f64,
    /// Longest recorded latency (µs).
    pub max_us: f64,
    /// Frames recorded (after the warm-up).
    pub samples: u64,
}

/// Warm-up at the start of each floor run, not recorded.
const FLOOR_WARMUP: Duration = Duration::from_millis(200);

/// Fraction of the rate ceiling (the sustained-write ceiling when measured,
/// else the pipeline's) each default floor rate runs at.
pub const FLOOR_FRACTIONS: [f64; 2] = [0.5, 0.8];

/// The latency floor at `rate_mb_s`: a server thread on the server core
/// receives length-prefixed frames, CRC32C's each payload, appends it to a
/// file with pwrite and answers an 8-byte ack; the client core sends
/// `floor_frame`-byte frames open-loop at the rate (paced by intended send
/// time, as `end-to-end` is) and a second client thread reads the acks.
/// Latency runs from a frame's intended send time to its ack.
pub fn latency_floor(cfg: &LimitsCfg, rate_mb_s: f64) -> Res<Floor> {
    let path = cfg.dir.join("floor.log");
    let f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)?;
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let sc = cfg.server_core;
    let server = std::thread::spawn(move || -> std::io::Result<()> {
        pin(&[sc], 0);
        let (mut s, _) = l.accept()?;
        s.set_nodelay(true)?;
        let mut buf = Vec::new();
        let mut off = 0u64;
        loop {
            let mut len = [0u8; 4];
            if s.read_exact(&mut len).is_err() {
                return Ok(());
            }
            let n = u32::from_be_bytes(len) as usize;
            buf.resize(n, 0);
            s.read_exact(&mut buf)?;
            let crc = crc32c::crc32c(&buf);
            f.write_all_at(&buf, off)?;
            off += n as u64;
            if off >= (1 << 30) {
                off = 0;
            }
            let mut ack = [0u8; 8];
            ack[..4].copy_from_slice(&crc.to_be_bytes());
            ack[4..].copy_from_slice(&len);
            s.write_all(&ack)?;
        }
    });
    let frame = cfg.floor_frame.max(1);
    let sched = Schedule::for_rate(Some(rate_mb_s * 1e6), frame, 1);
    let total = cfg.floor_duration + FLOOR_WARMUP;
    let sends = (total.as_secs_f64() * 1e9 / sched.interval_ns)
        .ceil()
        .max(1.0) as u64;
    let mut tx = TcpStream::connect(addr)?;
    tx.set_nodelay(true)?;
    let mut rx = tx.try_clone()?;
    let start = Instant::now() + Duration::from_millis(20);
    let cc = cfg.client_core;
    let receiver = std::thread::spawn(
        move || -> std::io::Result<(hdrhistogram::Histogram<u64>, u64, Instant)> {
            pin(&[cc], 0);
            let mut h = new_hist();
            let mut ack = [0u8; 8];
            let mut bytes = 0u64;
            let mut last = start;
            for k in 0..sends {
                rx.read_exact(&mut ack)?;
                let now = Instant::now();
                let intended = sched.intended(start, k);
                if intended >= start + FLOOR_WARMUP {
                    let ns = now.saturating_duration_since(intended).as_nanos() as u64;
                    let _ = h.record(ns.max(1));
                    bytes += u32::from_be_bytes([ack[4], ack[5], ack[6], ack[7]]) as u64;
                }
                last = now;
            }
            Ok((h, bytes, last))
        },
    );
    pin(&[cfg.client_core], 0);
    fine_timer_slack();
    let mut msg = vec![0u8; 4 + frame];
    msg[..4].copy_from_slice(&(frame as u32).to_be_bytes());
    for (i, b) in msg[4..].iter_mut().enumerate() {
        *b = (i * 131) as u8;
    }
    for k in 0..sends {
        wait_until(sched.intended(start, k));
        tx.write_all(&msg)?;
    }
    let (h, bytes, last) = receiver
        .join()
        .map_err(|_| "latency floor: receiver thread panicked")??;
    drop(tx);
    let _ = server.join();
    let _ = std::fs::remove_file(&path);
    let measured = last.saturating_duration_since(start + FLOOR_WARMUP);
    let us = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
    Ok(Floor {
        rate_mb_s,
        achieved_mb_s: mbps(bytes, measured.max(Duration::from_millis(1))),
        p50_us: us(0.5),
        p99_us: us(0.99),
        p999_us: us(0.999),
        max_us: h.max() as f64 / 1e3,
        samples: h.len(),
    })
}

/// The rates the floor runs at: the explicit ones, or [`FLOOR_FRACTIONS`]
/// of `ceiling_mb_s` (the sustained-write ceiling when measured: a rate the
/// machine holds for seconds, as the end-to-end runs must; the pipeline
/// ceiling, which never meets writeback, can be several times more than
/// the floor's one-frame-at-a-time server reaches).
/// Then the `floor_also` ones.
pub fn floor_rates(cfg: &LimitsCfg, ceiling_mb_s: f64) -> Vec<f64> {
    let mut rates = if cfg.floor_rates.is_empty() {
        FLOOR_FRACTIONS.iter().map(|f| f * ceiling_mb_s).collect()
    } else {
        cfg.floor_rates.clone()
    };
    rates.extend(cfg.floor_also.iter().copied());
    rates
}

/// Share of its rate a floor run must reach to be a floor: below it the
/// run measured a queue building up, not the pipeline's latency.
pub const FLOOR_REACHED: f64 = 0.95;

/// Whether a floor run reached its rate (see [`FLOOR_REACHED`]).
pub fn floor_reached(rate_mb_s: f64, achieved_mb_s: f64) -> bool {
    achieved_mb_s >= rate_mb_s * FLOOR_REACHED
}

/// The floor entry of a `limits --json` file whose rate is nearest to
/// `rate_mb_s`, among the runs that reached their rate and have `key`
/// (`p99_us`, `p999_us`, …): (rate MB/s, that figure in µs).
pub fn nearest_floor(limits: &Value, rate_mb_s: f64, key: &str) -> Option<(f64, f64)> {
    limits["latency_floor"]
        .as_array()?
        .iter()
        .filter(|e| {
            match (e["rate_mb_s"].as_f64(), e["achieved_mb_s"].as_f64()) {
                (Some(r), Some(a)) => floor_reached(r, a),
                // Files written before the achieved rate was recorded.
                _ => true,
            }
        })
        .filter_map(|e| Some((e["rate_mb_s"].as_f64()?, e[key].as_f64()?)))
        .min_by(|a, b| (a.0 - rate_mb_s).abs().total_cmp(&(b.0 - rate_mb_s).abs()))
}

fn mbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e6
}

/// A sender thread (client core) writing 1 MiB writes for `d`; the
/// closure receives on the calling thread (server core).
fn with_loopback_sender<T>(
    cfg: &LimitsCfg,
    d: Duration,
    recv: impl FnOnce(TcpStream) -> T,
) -> Res<T> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let cc = cfg.client_core;
    let sender = std::thread::spawn(move || -> std::io::Result<()> {
        pin(&[cc], 0);
        let mut s = TcpStream::connect(addr)?;
        let buf = vec![0xabu8; MIB];
        let end = Instant::now() + d;
        while Instant::now() < end {
            s.write_all(&buf)?;
        }
        Ok(())
    });
    let (s, _) = l.accept()?;
    pin(&[cfg.server_core], 0);
    let out = recv(s);
    let _ = sender.join();
    Ok(out)
}

fn read_chunk(s: &mut TcpStream, buf: &mut [u8]) -> usize {
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    got
}

pub fn loopback_tcp(cfg: &LimitsCfg) -> Res<f64> {
    with_loopback_sender(cfg, cfg.short, |mut s| {
        let mut buf = vec![0u8; MIB];
        let t0 = Instant::now();
        let mut total = 0u64;
        loop {
            let n = read_chunk(&mut s, &mut buf);
            total += n as u64;
            if n < MIB {
                break;
            }
        }
        mbps(total, t0.elapsed())
    })
}

/// Receive 1 MiB writes, CRC32C them, append to a file (rolled every
/// 1 GiB like a segment). Returns (MB/s, per-second timeline).
pub fn pipeline(cfg: &LimitsCfg) -> Res<(f64, Vec<f64>)> {
    let path = cfg.dir.join("pipeline.log");
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)?;
    let r = with_loopback_sender(cfg, cfg.duration, |mut s| -> Res<(f64, Vec<f64>)> {
        let mut buf = vec![0u8; MIB];
        let t0 = Instant::now();
        let (mut total, mut in_file) = (0u64, 0u64);
        let mut seconds = Seconds::new("pipeline", t0);
        let mut crc = 0u32;
        loop {
            let n = read_chunk(&mut s, &mut buf);
            if n == 0 {
                break;
            }
            crc ^= crc32c::crc32c(&buf[..n]);
            f.write_all(&buf[..n])?;
            total += n as u64;
            in_file += n as u64;
            if in_file >= (1 << 30) {
                f.set_len(0)?;
                f.seek(SeekFrom::Start(0))?;
                in_file = 0;
            }
            seconds.add(n as u64, Instant::now());
            if n < MIB {
                break;
            }
        }
        std::hint::black_box(crc);
        Ok((mbps(total, t0.elapsed()), seconds.timeline))
    })?;
    let _ = std::fs::remove_file(&path);
    r
}

/// The MB/s of each second of a running figure: printed to stderr as
/// `[LABEL Ns] MB/s` when the second ends, and kept in `timeline`.
struct Seconds {
    label: &'static str,
    t0: Instant,
    tick: Instant,
    bytes: u64,
    timeline: Vec<f64>,
}

impl Seconds {
    fn new(label: &'static str, t0: Instant) -> Seconds {
        Seconds {
            label,
            t0,
            tick: t0 + Duration::from_secs(1),
            bytes: 0,
            timeline: Vec::new(),
        }
    }

    /// Counts `n` bytes done by `now`, closing the second when it ended.
    fn add(&mut self, n: u64, now: Instant) {
        self.bytes += n;
        if now >= self.tick {
            let mb = self.bytes as f64 / 1e6;
            eprintln!(
                "[{} {:4.0}s] {:9.1} MB/s",
                self.label,
                (now - self.t0).as_secs_f64(),
                mb
            );
            self.timeline.push(mb);
            self.bytes = 0;
            self.tick += Duration::from_secs(1);
        }
    }
}

/// Free bytes of the file system holding `dir` (statvfs; 0 when unknown).
fn free_bytes(dir: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return 0;
    };
    // SAFETY: `c` is a valid NUL-terminated path and `st` a zeroed struct
    // the call fills.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return 0;
    }
    (st.f_bavail as u64).saturating_mul(st.f_frsize as u64)
}

/// What the sustained-write ceiling measured.
#[derive(Debug, Clone)]
pub struct Sustained {
    /// MB/s over the recorded seconds (after the warm-up).
    pub mb_s: f64,
    /// MB/s of each second, warm-up included.
    pub timeline: Vec<f64>,
    /// Bytes written in all (warm-up included).
    pub written: u64,
    /// Whether the run stopped early to leave the file system half its
    /// free space (the figure then covers fewer seconds).
    pub space_limited: bool,
    /// CPU seconds of the receiving thread per GB (10^9 bytes) over the
    /// recorded seconds: what receiving, CRC32C and writing into new
    /// page-cache pages cost on this machine now (user and kernel time,
    /// CLOCK_THREAD_CPUTIME_ID) — a floor for a broker's CPU per byte of
    /// produce in the same phase (a VM's kernel may charge far more for
    /// the first touch of a page than for a page it reuses).
    pub cpu_s_per_gb: f64,
}

/// Receive 1 MiB writes, CRC32C them and append them to new files (a new
/// one every 1 GiB, all kept until the end, as a broker's segments are),
/// for `warmup` unrecorded seconds and then `cfg.duration` recorded ones:
/// the page cache fills up to the kernel's dirty limit and the appends then
/// go at the speed of writeback, as the brokers' produce does after
/// bench-compare's warm-up. The plain pipeline ceiling truncates its file
/// and never meets writeback. Stops early when half the free space is used.
pub fn sustained_write(cfg: &LimitsCfg, warmup: Duration) -> Res<Sustained> {
    let dir = cfg.dir.join("sustained");
    std::fs::create_dir_all(&dir)?;
    let budget = free_bytes(&cfg.dir) / 2;
    let r = with_loopback_sender(cfg, warmup + cfg.duration, |mut s| -> Res<Sustained> {
        let mut buf = vec![0u8; MIB];
        let t0 = Instant::now();
        let record_from = t0 + warmup;
        let (mut written, mut in_file, mut recorded) = (0u64, 0u64, 0u64);
        let mut recorded_since: Option<Instant> = None;
        let mut cpu_since = 0u64;
        let mut files = 0u32;
        let mut f = File::create(dir.join("0.log"))?;
        let mut seconds = Seconds::new("sustained", t0);
        let mut crc = 0u32;
        let mut space_limited = false;
        loop {
            let n = read_chunk(&mut s, &mut buf);
            if n == 0 {
                break;
            }
            crc ^= crc32c::crc32c(&buf[..n]);
            f.write_all(&buf[..n])?;
            let now = Instant::now();
            written += n as u64;
            in_file += n as u64;
            if now >= record_from {
                if recorded_since.is_none() {
                    recorded_since = Some(now);
                    cpu_since = crate::pauses::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
                }
                recorded += n as u64;
            }
            if in_file >= (1 << 30) {
                files += 1;
                f = File::create(dir.join(format!("{files}.log")))?;
                in_file = 0;
            }
            seconds.add(n as u64, now);
            if budget > 0 && written >= budget {
                space_limited = true;
                break;
            }
            if n < MIB {
                break;
            }
        }
        std::hint::black_box(crc);
        let cpu_ns =
            crate::pauses::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID).saturating_sub(cpu_since);
        let mb_s = recorded_since.map_or(0.0, |t| mbps(recorded, t.elapsed()));
        let cpu_s_per_gb = if recorded > 0 {
            cpu_ns as f64 / 1e9 / (recorded as f64 / 1e9)
        } else {
            0.0
        };
        Ok(Sustained {
            mb_s,
            timeline: seconds.timeline,
            written,
            space_limited,
            cpu_s_per_gb,
        })
    })?;
    // Unlinking drops the dirty pages not yet written back.
    let _ = std::fs::remove_dir_all(&dir);
    r
}

/// Page-cache write then read of a `file_mib` file.
pub fn page_cache(cfg: &LimitsCfg) -> Res<(f64, f64)> {
    pin(&[cfg.server_core], 0);
    let path = cfg.dir.join("pagecache.dat");
    let buf = vec![0x5au8; MIB];
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)?;
    let t0 = Instant::now();
    for _ in 0..cfg.file_mib {
        f.write_all(&buf)?;
    }
    let w = mbps((cfg.file_mib * MIB) as u64, t0.elapsed());
    let mut rb = vec![0u8; MIB];
    // Warm pass, then timed passes for `short`.
    for i in 0..cfg.file_mib {
        f.read_exact_at(&mut rb, (i * MIB) as u64)?;
    }
    let t0 = Instant::now();
    let mut total = 0u64;
    'outer: loop {
        for i in 0..cfg.file_mib {
            f.read_exact_at(&mut rb, (i * MIB) as u64)?;
            total += MIB as u64;
            if t0.elapsed() >= cfg.short {
                break 'outer;
            }
        }
    }
    let r = mbps(total, t0.elapsed());
    drop(f);
    let _ = std::fs::remove_file(&path);
    Ok((w, r))
}

/// fdatasync after each small append: (median µs, p90 µs, samples).
pub fn fdatasync(cfg: &LimitsCfg) -> Res<(f64, f64, usize)> {
    let path = cfg.dir.join("fsync.dat");
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)?;
    let buf = vec![0x11u8; cfg.small_append];
    let mut v = Vec::new();
    let t_end = Instant::now() + cfg.short * 2;
    while v.len() < cfg.fsync_samples && Instant::now() < t_end {
        f.write_all(&buf)?;
        let t0 = Instant::now();
        f.sync_data()?;
        v.push(t0.elapsed().as_nanos() as f64 / 1e3);
    }
    drop(f);
    let _ = std::fs::remove_file(&path);
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    Ok((v[v.len() / 2], v[v.len() * 9 / 10], v.len()))
}

/// Appends a flush-per-batch broker may hold unacknowledged in
/// [`flush_group`]: the producer's requests in flight on one connection
/// (`fjord-perf produce --inflight`, default 8).
pub const FLUSH_WINDOW: u64 = 8;

/// Bytes of one append in [`flush_group`]: one produce batch (64 KiB).
pub const FLUSH_BATCH: usize = 65536;

/// One schedule of the flush-per-batch ceiling with group commit:
/// [`FLUSH_BATCH`] appends into a new file, each counted once an fdatasync
/// that began after it returned, with at most [`FLUSH_WINDOW`] appends not
/// yet synced (the producer waits for acknowledgements). A second thread
/// (on the same core, as a broker pinned to one core has it) runs each
/// fdatasync once `min_group` appends (1 to [`FLUSH_WINDOW`]) are not yet
/// synced, covering every append written before it began: 1 syncs as soon
/// as anything is written (small groups, back to back), [`FLUSH_WINDOW`]
/// waits for the whole window (the largest groups one connection can give).
/// Without the network, CRC or protocol work. Gives the MB/s synced over
/// `cfg.duration`; [`flush_ceiling`] takes the better schedule.
pub fn flush_group(cfg: &LimitsCfg, min_group: u64) -> Res<FlushGroup> {
    let min_group = min_group.clamp(1, FLUSH_WINDOW);
    use std::sync::{Arc, Condvar, Mutex};
    #[derive(Default)]
    struct State {
        written: u64,
        synced: u64,
        stop: bool,
        failed: Option<String>,
    }
    let path = cfg.dir.join("flush-group.log");
    let f = Arc::new(
        OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&path)?,
    );
    let shared = Arc::new((Mutex::new(State::default()), Condvar::new()));
    let sc = cfg.server_core;
    let syncer = {
        let (f, shared) = (f.clone(), shared.clone());
        std::thread::spawn(move || {
            // On the server core too: a broker pinned to one core runs its
            // fdatasyncs there.
            pin(&[sc], 0);
            let (m, cv) = &*shared;
            loop {
                let target = {
                    let mut st = m.lock().unwrap_or_else(|e| e.into_inner());
                    while st.written - st.synced < min_group && !st.stop {
                        st = cv.wait(st).unwrap_or_else(|e| e.into_inner());
                    }
                    if st.stop {
                        return;
                    }
                    st.written
                };
                let r = f.sync_data();
                let mut st = m.lock().unwrap_or_else(|e| e.into_inner());
                match r {
                    Ok(()) => st.synced = target,
                    Err(e) => {
                        st.failed = Some(e.to_string());
                        st.stop = true;
                    }
                }
                cv.notify_all();
            }
        })
    };
    pin(&[cfg.server_core], 0);
    let buf = vec![0x5au8; FLUSH_BATCH];
    let (m, cv) = &*shared;
    let t0 = Instant::now();
    let t_end = t0 + cfg.duration;
    let mut off = 0u64;
    // Half the free space at most, as the sustained write stops.
    let budget = free_bytes(&cfg.dir) / 2;
    let mut res: Res<()> = Ok(());
    let mut space_limited = false;
    while Instant::now() < t_end {
        if budget > 0 && off >= budget {
            space_limited = true;
            break;
        }
        {
            let mut st = m.lock().unwrap_or_else(|e| e.into_inner());
            while st.written - st.synced >= FLUSH_WINDOW && !st.stop {
                st = cv.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            if st.stop {
                break;
            }
        }
        if let Err(e) = f.write_all_at(&buf, off) {
            res = Err(e.into());
            break;
        }
        off += FLUSH_BATCH as u64;
        m.lock().unwrap_or_else(|e| e.into_inner()).written += 1;
        cv.notify_all();
    }
    let elapsed = t0.elapsed();
    let (synced, failed) = {
        let mut st = m.lock().unwrap_or_else(|e| e.into_inner());
        st.stop = true;
        (st.synced, st.failed.take())
    };
    cv.notify_all();
    let _ = syncer.join();
    drop(f);
    let _ = std::fs::remove_file(&path);
    res?;
    if let Some(e) = failed {
        return Err(format!("flush-per-batch ceiling: fdatasync failed: {e}").into());
    }
    Ok(FlushGroup {
        mb_s: mbps(synced * FLUSH_BATCH as u64, elapsed),
        space_limited,
    })
}

/// The flush-per-batch ceiling: the better of [`flush_group`]'s two
/// schedules (syncing as soon as one append waits, and waiting for the whole
/// window), each from a clean page cache. A broker's group commit lies
/// between them: how many appends one fdatasync covers depends on how many
/// arrived while the previous one ran. Gives both figures and the ceiling.
pub fn flush_ceiling(cfg: &LimitsCfg) -> Res<FlushCeiling> {
    settle();
    let eager = flush_group(cfg, 1)?;
    settle();
    let full = flush_group(cfg, FLUSH_WINDOW)?;
    Ok(FlushCeiling { eager, full })
}

/// What [`flush_ceiling`] measured.
pub struct FlushCeiling {
    /// Syncing as soon as one append waits.
    pub eager: FlushGroup,
    /// Syncing once the whole window waits.
    pub full: FlushGroup,
}

impl FlushCeiling {
    /// The ceiling in MB/s: the better schedule.
    pub fn mb_s(&self) -> f64 {
        self.eager.mb_s.max(self.full.mb_s)
    }

    /// Whether either schedule stopped at half the free space.
    pub fn space_limited(&self) -> bool {
        self.eager.space_limited || self.full.space_limited
    }
}

/// What [`flush_group`] measured.
pub struct FlushGroup {
    /// MB/s synced.
    pub mb_s: f64,
    /// Whether it stopped early to leave the file system half its free
    /// space (the figure then covers fewer seconds and is no ceiling).
    pub space_limited: bool,
}

/// Writes back every dirty page (sync(2)) and waits 2 s, so a figure that
/// fsyncs does not pay for the writes of the figures before it.
fn settle() {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    std::thread::sleep(Duration::from_secs(2));
}

/// CRC32C MB/s on each listed core (1 MiB buffer, `d` per core).
pub fn crc32c_per_core(cores: &[usize], d: Duration) -> Vec<(usize, f64)> {
    cores
        .iter()
        .map(|&c| {
            let h = std::thread::spawn(move || {
                pin(&[c], 0);
                let buf: Vec<u8> = (0..MIB).map(|i| (i * 31) as u8).collect();
                let t0 = Instant::now();
                let mut total = 0u64;
                let mut acc = 0u32;
                while t0.elapsed() < d {
                    acc ^= crc32c::crc32c(&buf);
                    total += MIB as u64;
                }
                std::hint::black_box(acc);
                mbps(total, t0.elapsed())
            });
            (c, h.join().unwrap_or(0.0))
        })
        .collect()
}

/// One way of sending a page-cached file over loopback with sendfile(2).
#[derive(Debug, Clone, Copy)]
pub struct SendfileWay {
    /// Size of the file sent round and round (MiB).
    pub file_mib: usize,
    /// Bytes asked of each sendfile call (Fjord sends a region in 256 KiB
    /// steps; Kafka's `transferTo` asks for the whole region).
    pub chunk: usize,
    /// Bytes the receiver asks of each read(2): 1 MiB, or 8 MiB as a
    /// fetching client reading an 8 MiB response into one buffer does.
    pub read: usize,
}

/// The ways measured for the hot-fetch ceiling: the brokers' chunkings and
/// the clients' read sizes, on a small and a large file. The ceiling is the
/// best of them (and of loopback TCP): a broker sending the same bytes the
/// same way cannot do better, so no hot-fetch row can pass 100 %.
pub fn sendfile_ways(cfg: &LimitsCfg) -> Vec<SendfileWay> {
    let mut ways = Vec::new();
    for file_mib in [64.min(cfg.file_mib), cfg.file_mib.min(512)] {
        for chunk in [256 << 10, 8 * MIB] {
            for read in [MIB, 8 * MIB] {
                ways.push(SendfileWay {
                    file_mib,
                    chunk,
                    read,
                });
            }
        }
    }
    ways.dedup_by(|a, b| a.file_mib == b.file_mib && a.chunk == b.chunk && a.read == b.read);
    ways
}

/// sendfile(2) from a page-cached file to one loopback connection (server
/// core) in `way`'s steps; the receiver (client core) reads and discards
/// in `way`'s read sizes. Gives MB/s over `cfg.short`.
pub fn sendfile(cfg: &LimitsCfg, way: SendfileWay) -> Res<f64> {
    let path = cfg.dir.join("sendfile.dat");
    let size = (way.file_mib * MIB) as u64;
    {
        let mut f = File::create(&path)?;
        let buf = vec![0x77u8; MIB];
        for _ in 0..way.file_mib {
            f.write_all(&buf)?;
        }
    }
    let f = File::open(&path)?;
    warm(&f, size)?;
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let cc = cfg.client_core;
    let read = way.read;
    let receiver = std::thread::spawn(move || -> u64 {
        pin(&[cc], 0);
        let mut s = match TcpStream::connect(addr) {
            Ok(s) => s,
            Err(_) => return 0,
        };
        let mut buf = vec![0u8; read];
        let mut total = 0u64;
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        total
    });
    let (s, _) = l.accept()?;
    pin(&[cfg.server_core], 0);
    let t0 = Instant::now();
    let mut sent = 0u64;
    let mut off: libc::off_t = 0;
    while t0.elapsed() < cfg.short {
        if off as u64 >= size {
            off = 0;
        }
        let want = (size - off as u64).min(way.chunk as u64) as usize;
        // SAFETY: both descriptors are open for the call and `off` is a
        // valid pointer to a local.
        let n = unsafe { libc::sendfile(s.as_raw_fd(), f.as_raw_fd(), &mut off, want) };
        if n <= 0 {
            return Err(format!("sendfile: {}", std::io::Error::last_os_error()).into());
        }
        sent += n as u64;
    }
    let el = t0.elapsed();
    drop(s);
    let _ = receiver.join();
    let _ = std::fs::remove_file(&path);
    Ok(mbps(sent, el))
}

fn warm(f: &File, size: u64) -> Res<()> {
    let mut b = vec![0u8; MIB];
    let mut off = 0;
    while off < size {
        f.read_exact_at(&mut b, off)?;
        off += MIB as u64;
    }
    Ok(())
}

pub fn run(cfg: &LimitsCfg, json_path: Option<&str>) -> Res<Value> {
    std::fs::create_dir_all(&cfg.dir)?;
    println!(
        "machine ceilings (server core {}, client core {})",
        cfg.server_core, cfg.client_core
    );
    let tcp = loopback_tcp(cfg)?;
    println!("{:<44}{:>12.1} MB/s", "loopback TCP, 1 MiB writes", tcp);
    let (pipe, timeline) = pipeline(cfg)?;
    println!(
        "{:<44}{:>12.1} MB/s",
        "receive + CRC32C + append (pipeline)", pipe
    );
    let sustained = match cfg.sustained_warmup {
        Some(w) => {
            let r = sustained_write(cfg, w)?;
            println!(
                "{:<44}{:>12.1} MB/s{}",
                format!(
                    "same, into new files after {:.0} s (sustained)",
                    w.as_secs_f64()
                ),
                r.mb_s,
                if r.space_limited {
                    " (stopped at half the free space)"
                } else {
                    ""
                }
            );
            println!(
                "{:<44}{:>12.2} CPU s/GB",
                "  its CPU per byte (the receiving thread)", r.cpu_s_per_gb
            );
            Some(r)
        }
        None => None,
    };
    let (pw, pr) = page_cache(cfg)?;
    println!(
        "{:<44}{:>12.1} MB/s",
        format!("page-cache write ({} MiB file)", cfg.file_mib),
        pw
    );
    println!("{:<44}{:>12.1} MB/s", "page-cache read (cached)", pr);
    let fsync = fsync_figures(cfg)?;
    let crc = crc32c_per_core(&[cfg.server_core, cfg.client_core], Duration::from_secs(1));
    for (c, v) in &crc {
        println!("{:<44}{:>12.1} MB/s", format!("CRC32C on core {c}"), v);
    }
    let (ways, sf) = hot_fetch(cfg, tcp)?;
    let rate_ceiling = sustained.as_ref().map_or(pipe, |r| r.mb_s.min(pipe));
    let floors = floors(cfg, &floor_rates(cfg, rate_ceiling))?;
    let _ = std::fs::remove_dir(&cfg.dir);
    let mut v = json!({
        "loopback_tcp_mb_s": tcp,
        "pipeline_mb_s": pipe,
        "pipeline_timeline_mb_s": timeline,
        "sustained_write_mb_s": sustained.as_ref().map(|r| r.mb_s),
        "sustained_write_timeline_mb_s": sustained.as_ref().map(|r| r.timeline.clone()),
        "sustained_write_bytes": sustained.as_ref().map(|r| r.written),
        "sustained_write_space_limited": sustained.as_ref().map(|r| r.space_limited),
        "sustained_write_cpu_s_per_gb": sustained.as_ref().map(|r| r.cpu_s_per_gb),
        "pagecache_write_mb_s": pw,
        "pagecache_read_mb_s": pr,
        "crc32c_mb_s_per_core": crc.iter().map(|(c, v)| json!({"core": c, "mb_s": v})).collect::<Vec<_>>(),
        "sendfile_mb_s": sf,
        "sendfile_ways": ways_json(&ways),
        "latency_floor": floors_json(cfg, &floors),
        "params": {"duration_s": cfg.duration.as_secs_f64(), "short_s": cfg.short.as_secs_f64(),
                   "server_core": cfg.server_core, "client_core": cfg.client_core,
                   "file_mib": cfg.file_mib, "small_append": cfg.small_append,
                   "floor_frame": cfg.floor_frame, "floor_duration_s": cfg.floor_duration.as_secs_f64(),
                   "floor_rates_mb_s": cfg.floor_rates, "floor_also_mb_s": cfg.floor_also,
                   "sustained_warmup_s": cfg.sustained_warmup.map(|w| w.as_secs_f64())},
    });
    if let (Some(o), Value::Object(f)) = (v.as_object_mut(), fsync) {
        o.extend(f);
    }
    write_json(json_path, &v)?;
    Ok(v)
}

fn write_json(json_path: Option<&str>, v: &Value) -> Res<()> {
    if let Some(p) = json_path {
        std::fs::write(p, serde_json::to_string_pretty(v)?)?;
        eprintln!("wrote {p}");
    }
    Ok(())
}

/// The fsync figures, each from a clean page cache (as the brokers' runs
/// start after bench-targets' `sync` between them; the earlier figures'
/// writeback would otherwise be in every fdatasync): fdatasync after a
/// small append, 64 KiB ÷ that, and the flush-per-batch ceiling
/// ([`flush_group`]). Gives their JSON keys.
fn fsync_figures(cfg: &LimitsCfg) -> Res<Value> {
    // On the server core, as a broker pinned there runs its fsyncs.
    pin(&[cfg.server_core], 0);
    settle();
    let (fmed, fp90, n) = fdatasync(cfg)?;
    println!(
        "{:<44}{:>12.1} µs median, {:.1} µs p90 (n={n})",
        format!("fdatasync after a {} B append", cfg.small_append),
        fmed,
        fp90
    );
    let flush_64k = FLUSH_BATCH as f64 / (fmed / 1e6) / 1e6;
    println!(
        "{:<44}{:>12.1} MB/s",
        "64 KiB / fdatasync (one sync per batch)", flush_64k
    );
    let group = flush_ceiling(cfg)?;
    for (what, g) in [
        ("syncing at once", &group.eager),
        (&*format!("waiting for {FLUSH_WINDOW}"), &group.full),
    ] {
        println!(
            "{:<44}{:>12.1} MB/s{}",
            format!("  group commit, {what}"),
            g.mb_s,
            if g.space_limited {
                " (stopped at half the free space: not a ceiling)"
            } else {
                ""
            }
        );
    }
    println!(
        "{:<44}{:>12.1} MB/s",
        format!("flush-per-batch ceiling (up to {FLUSH_WINDOW} x 64 KiB)"),
        group.mb_s()
    );
    Ok(json!({
        "fdatasync_median_us": fmed,
        "fdatasync_p90_us": fp90,
        "fdatasync_samples": n,
        "flush_ceiling_64k_mb_s": flush_64k,
        "flush_group_ceiling_mb_s": group.mb_s(),
        "flush_group_eager_mb_s": group.eager.mb_s,
        "flush_group_full_window_mb_s": group.full.mb_s,
        "flush_group_space_limited": group.space_limited(),
        "flush_group_window": FLUSH_WINDOW,
    }))
}

/// The hot-fetch ceiling: each of [`sendfile_ways`] measured and printed,
/// then the best of them and of `tcp` (loopback TCP, MB/s), the best way of
/// moving cached file bytes to one loopback reader. Gives the ways with
/// their MB/s, and the ceiling in MB/s.
fn hot_fetch(cfg: &LimitsCfg, tcp: f64) -> Res<(Vec<(SendfileWay, f64)>, f64)> {
    let mut ways = Vec::new();
    for way in sendfile_ways(cfg) {
        let mb = sendfile(cfg, way)?;
        println!(
            "{:<44}{:>12.1} MB/s",
            format!(
                "sendfile {} MiB file, {} KiB steps, {} KiB reads",
                way.file_mib,
                way.chunk >> 10,
                way.read >> 10
            ),
            mb
        );
        ways.push((way, mb));
    }
    let sf = ways.iter().map(|(_, mb)| *mb).fold(tcp, f64::max);
    println!(
        "{:<44}{:>12.1} MB/s",
        "hot-fetch ceiling (best of the above, TCP)", sf
    );
    Ok((ways, sf))
}

/// The `sendfile_ways` JSON array.
fn ways_json(ways: &[(SendfileWay, f64)]) -> Value {
    ways.iter()
        .map(|(w, mb)| {
            json!({"file_mib": w.file_mib, "chunk_bytes": w.chunk, "read_bytes": w.read, "mb_s": mb})
        })
        .collect()
}

/// Only the hot-fetch ceiling of [`run`] (`limits --fetch-only`): loopback
/// TCP and the sendfile ways, `cfg.short` each, for a ceiling taken right
/// before the fetch run it bounds (the machine's loopback rate moves
/// between minutes). Gives `loopback_tcp_mb_s`, `sendfile_mb_s` (the
/// ceiling) and `sendfile_ways`.
pub fn run_fetch(cfg: &LimitsCfg, json_path: Option<&str>) -> Res<Value> {
    std::fs::create_dir_all(&cfg.dir)?;
    println!(
        "hot-fetch ceiling (server core {}, client core {})",
        cfg.server_core, cfg.client_core
    );
    let res = loopback_tcp(cfg).and_then(|tcp| {
        println!("{:<44}{:>12.1} MB/s", "loopback TCP, 1 MiB writes", tcp);
        Ok((tcp, hot_fetch(cfg, tcp)?))
    });
    let _ = std::fs::remove_dir(&cfg.dir);
    let (tcp, (ways, sf)) = res?;
    let v = json!({
        "loopback_tcp_mb_s": tcp,
        "sendfile_mb_s": sf,
        "sendfile_ways": ways_json(&ways),
        "params": {"short_s": cfg.short.as_secs_f64(), "server_core": cfg.server_core,
                   "client_core": cfg.client_core},
    });
    write_json(json_path, &v)?;
    Ok(v)
}

/// Runs [`latency_floor`] at each rate (those not above 0 skipped) and
/// prints one line per rate.
fn floors(cfg: &LimitsCfg, rates: &[f64]) -> Res<Vec<Floor>> {
    let mut floors = Vec::new();
    for &rate in rates {
        if rate.is_nan() || rate <= 0.0 {
            continue;
        }
        let fl = latency_floor(cfg, rate)?;
        println!(
            "{:<44}{:>12.1} µs p99, p50 {:.1} µs, p99.9 {:.1} µs, max {:.1} µs (n={}, {:.1} MB/s){}",
            format!(
                "latency floor at {rate:.1} MB/s, {} B frames",
                cfg.floor_frame
            ),
            fl.p99_us,
            fl.p50_us,
            fl.p999_us,
            fl.max_us,
            fl.samples,
            fl.achieved_mb_s,
            if floor_reached(rate, fl.achieved_mb_s) {
                ""
            } else {
                " (rate not reached: a queue, not a floor)"
            }
        );
        floors.push(fl);
    }
    Ok(floors)
}

/// The `latency_floor` JSON array: one object per rate.
fn floors_json(cfg: &LimitsCfg, floors: &[Floor]) -> Value {
    floors
        .iter()
        .map(|f| {
            json!({
                "rate_mb_s": f.rate_mb_s, "achieved_mb_s": f.achieved_mb_s,
                "frame_bytes": cfg.floor_frame, "p50_us": f.p50_us, "p99_us": f.p99_us,
                "p999_us": f.p999_us, "max_us": f.max_us, "samples": f.samples,
                "reached": floor_reached(f.rate_mb_s, f.achieved_mb_s)})
        })
        .collect()
}

/// Only the latency floor of [`run`] (`limits --floor-only`), at the
/// explicit `floor_rates` and `floor_also` rates (there is no ceiling to
/// take the default fractions of): a floor measured beside the broker runs
/// it bounds. Gives `{"latency_floor": [...], "params": {...}}`.
pub fn run_floor(cfg: &LimitsCfg, json_path: Option<&str>) -> Res<Value> {
    let rates: Vec<f64> = cfg
        .floor_rates
        .iter()
        .chain(&cfg.floor_also)
        .copied()
        .collect();
    if rates.is_empty() {
        return Err("--floor-only needs --floor-rates or --floor-also".into());
    }
    std::fs::create_dir_all(&cfg.dir)?;
    println!(
        "latency floor (server core {}, client core {})",
        cfg.server_core, cfg.client_core
    );
    let floors = floors(cfg, &rates);
    let _ = std::fs::remove_dir(&cfg.dir);
    let floors = floors?;
    let v = json!({
        "latency_floor": floors_json(cfg, &floors),
        "params": {"server_core": cfg.server_core, "client_core": cfg.client_core,
                   "floor_frame": cfg.floor_frame,
                   "floor_duration_s": cfg.floor_duration.as_secs_f64(),
                   "floor_rates_mb_s": cfg.floor_rates, "floor_also_mb_s": cfg.floor_also},
    });
    write_json(json_path, &v)?;
    Ok(v)
}

/// Only the fsync figures of [`run`] (`limits --flush-only`): a
/// flush-per-batch ceiling measured right before the run it bounds.
pub fn run_flush(cfg: &LimitsCfg, json_path: Option<&str>) -> Res<Value> {
    std::fs::create_dir_all(&cfg.dir)?;
    let v = fsync_figures(cfg)?;
    let _ = std::fs::remove_dir(&cfg.dir);
    write_json(json_path, &v)?;
    Ok(v)
}

/// Directory for scratch files: `$TMPDIR/fjord-perf-limits-<pid>` unless given.
pub fn default_dir(given: Option<&Path>) -> PathBuf {
    given.map(Path::to_path_buf).unwrap_or_else(|| {
        std::env::temp_dir().join(format!("fjord-perf-limits-{}", std::process::id()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(rates: Vec<f64>) -> LimitsCfg {
        LimitsCfg {
            duration: Duration::from_secs(1),
            short: Duration::from_secs(1),
            server_core: 0,
            client_core: 1,
            dir: PathBuf::from("/nonexistent"),
            file_mib: 1,
            fsync_samples: 1,
            small_append: 1,
            floor_rates: rates,
            floor_also: Vec::new(),
            floor_frame: 65536,
            floor_duration: Duration::from_secs(1),
            sustained_warmup: None,
        }
    }

    /// Both schedules of the flush-per-batch ceiling sync what they write
    /// and end (waiting for the whole window does not wait forever).
    #[test]
    fn both_flush_schedules_sync_and_end() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = cfg(Vec::new());
        c.dir = dir.path().to_path_buf();
        c.duration = Duration::from_millis(200);
        for min_group in [1, FLUSH_WINDOW] {
            let g = flush_group(&c, min_group).unwrap();
            assert!(g.mb_s > 0.0, "min_group {min_group}: nothing synced");
            assert!(!g.space_limited);
        }
    }

    #[test]
    fn a_floor_that_missed_its_rate_is_not_a_floor() {
        let j = json!({"latency_floor": [
            {"rate_mb_s": 100.0, "achieved_mb_s": 99.0, "p99_us": 40.0},
            {"rate_mb_s": 400.0, "achieved_mb_s": 200.0, "p99_us": 900000.0},
        ]});
        assert_eq!(nearest_floor(&j, 390.0, "p99_us"), Some((100.0, 40.0)));
        assert!(floor_reached(100.0, 95.0));
        assert!(!floor_reached(100.0, 94.0));
    }

    #[test]
    fn floor_rates_default_to_fractions_of_the_ceiling() {
        assert_eq!(floor_rates(&cfg(vec![]), 1000.0), vec![500.0, 800.0]);
        assert_eq!(floor_rates(&cfg(vec![50.0]), 1000.0), vec![50.0]);
    }

    #[test]
    fn nearest_floor_picks_the_closest_rate() {
        let j = json!({"latency_floor": [
            {"rate_mb_s": 100.0, "p99_us": 40.0},
            {"rate_mb_s": 400.0, "p99_us": 90.0},
        ]});
        assert_eq!(nearest_floor(&j, 50.0, "p99_us"), Some((100.0, 40.0)));
        assert_eq!(nearest_floor(&j, 300.0, "p99_us"), Some((400.0, 90.0)));
        assert_eq!(nearest_floor(&json!({}), 50.0, "p99_us"), None);
        let k = json!({"latency_floor": [
            {"rate_mb_s": 50.0, "p99_us": 400.0, "p999_us": 2900.0},
            {"rate_mb_s": 165.0, "p99_us": 500.0},
        ]});
        assert_eq!(nearest_floor(&k, 60.0, "p999_us"), Some((50.0, 2900.0)));
        // The nearest entry without the key is skipped for one with it.
        assert_eq!(nearest_floor(&k, 160.0, "p999_us"), Some((50.0, 2900.0)));
    }
}
