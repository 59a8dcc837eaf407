//! Reactor-stall detector: every task Fjord spawns on a shard is wrapped in
//! [`Watched`], which reads the clock before and after each `poll`. A poll
//! that keeps the reactor busy longer than `reactor.stall.threshold.us` is
//! a stall: it is counted in the shard's [`ShardStallStats`] (atomics, so
//! the metrics thread reads them without locks) and logged at warn level,
//! at most once per second per shard plus a line for each stall more than
//! twice as long as every one since the last line, with the task's label
//! and what it was doing (the request being served, for connections).
//!
//! The cost per poll is two `Instant::now()` reads and a few thread-local
//! cell accesses; with the threshold at 0 the wrapper only reads one cell.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Lower bounds of the stall-duration buckets, in µs: a stall longer than
/// `BUCKETS_US[i]` is counted in `ShardStallStats::over[i]`.
pub const BUCKETS_US: [u64; 4] = [500, 1_000, 5_000, 20_000];

/// The bucket bounds of [`BUCKETS_US`] in ms, as the metrics show them.
pub const BUCKET_LABELS_MS: [&str; 4] = ["0.5", "1", "5", "20"];

/// How often, at most, a shard logs a stall line.
const LOG_EVERY: Duration = Duration::from_secs(1);

/// One shard's stall counters. Written by its shard thread, read by any
/// thread (metrics endpoint, shutdown summary); all accesses are `Relaxed`.
#[derive(Debug, Default)]
pub struct ShardStallStats {
    /// Polls longer than the threshold since start.
    pub stalls: AtomicU64,
    /// Longest poll seen above the threshold since start (µs).
    pub max_us: AtomicU64,
    /// Stalls longer than each bound of [`BUCKETS_US`].
    pub over: [AtomicU64; 4],
    /// Bytes this shard sent with sendfile(2), copied from
    /// `net::sendfile::WRITE_STATS` about once a second while the metrics
    /// endpoint is on.
    pub sendfile_zero_copy_bytes: AtomicU64,
    /// Bytes this shard copied through user space because the socket was
    /// full (same source and refresh as `sendfile_zero_copy_bytes`).
    pub sendfile_fallback_bytes: AtomicU64,
    /// File-region bytes read and encrypted for TLS connections, same
    /// refresh.
    pub tls_copied_bytes: AtomicU64,
    /// Partitions this shard leads (Kafka's `ReplicaManager` LeaderCount),
    /// refreshed with the sendfile counters.
    pub leader_partitions: AtomicU64,
    /// Partitions this shard leads whose ISR is smaller than their replica
    /// set (Kafka's UnderReplicatedPartitions), same refresh.
    pub under_replicated_partitions: AtomicU64,
    /// Follower fetch connections this shard handed to the shard owning
    /// their partitions (`net::handoff`), same refresh.
    pub replica_connections_moved: AtomicU64,
    /// Partitions of follower fetches served on this shard's connections,
    /// same refresh.
    pub replica_reads: AtomicU64,
    /// Of those, the partitions read on another shard than the
    /// connection's, same refresh.
    pub replica_reads_cross_shard: AtomicU64,
    /// Responses throttled by a client quota on this shard's connections,
    /// same refresh.
    pub quota_throttled_responses: AtomicU64,
    /// Their throttle times summed (ms), same refresh.
    pub quota_throttle_ms: AtomicU64,
    /// File regions of fetch responses checked for page-cache residency
    /// before sendfile, same refresh.
    pub fetch_regions_checked: AtomicU64,
    /// Of those, the ones not (fully) in the page cache, warmed on the
    /// blocking pool first (page-cache misses), same refresh.
    pub fetch_regions_missed: AtomicU64,
    /// Bytes read to warm them, same refresh.
    pub fetch_bytes_missed: AtomicU64,
    /// Fetch reads of batch headers that missed the page cache, same
    /// refresh.
    pub fetch_header_misses: AtomicU64,
    /// Fetch sessions (KIP-227) this shard holds (Kafka's
    /// NumIncrementalFetchSessions), same refresh.
    pub incremental_fetch_sessions: AtomicU64,
    /// Tasks this shard sent to other shards, by the request they serve.
    pub cross_shard_calls: CrossShardCalls,
    /// The shard's Kafka-named metrics (`metrics::shard`).
    pub broker: Arc<crate::metrics::shard::ShardMetrics>,
}

/// API keys counted one by one in [`CrossShardCalls`]; larger keys share
/// the last slot.
pub const COUNTED_API_KEYS: usize = 128;

/// Tasks a shard sent to other shards over the mesh (`Shard::invoke_on`
/// to another shard), counted as they are sent: by the API key of the
/// request the sending task serves, or as background work (timers,
/// replication, coordinators' own tasks).
#[derive(Debug)]
pub struct CrossShardCalls {
    /// Calls made while serving a request, indexed by its API key.
    pub by_api_key: [AtomicU64; COUNTED_API_KEYS],
    /// Calls made by background tasks.
    pub background: AtomicU64,
}

impl Default for CrossShardCalls {
    fn default() -> CrossShardCalls {
        CrossShardCalls {
            by_api_key: std::array::from_fn(|_| AtomicU64::new(0)),
            background: AtomicU64::new(0),
        }
    }
}

/// Counts one task sent to another shard by the task being polled on this
/// thread (see [`CrossShardCalls`]); nothing before [`install`].
pub fn count_cross_shard_call() {
    let activity = current_activity();
    MONITOR.with(|m| {
        let Ok(m) = m.try_borrow() else { return };
        let Some(stats) = m.as_ref().and_then(|m| m.stats.get(m.shard)) else {
            return;
        };
        let calls = &stats.cross_shard_calls;
        let slot = match activity {
            Activity::Idle => &calls.background,
            Activity::Request { api_key, .. } => {
                let i = usize::try_from(api_key)
                    .unwrap_or(0)
                    .min(COUNTED_API_KEYS - 1);
                &calls.by_api_key[i]
            }
        };
        slot.fetch_add(1, Relaxed);
    });
}

impl ShardStallStats {
    /// Counts one stall of `us` µs.
    pub fn record(&self, us: u64) {
        self.stalls.fetch_add(1, Relaxed);
        self.max_us.fetch_max(us, Relaxed);
        for (bound, n) in BUCKETS_US.iter().zip(&self.over) {
            if us > *bound {
                n.fetch_add(1, Relaxed);
            }
        }
    }

    /// One line for the shutdown summary: count, max and buckets.
    pub fn summary(&self) -> String {
        let buckets: Vec<String> = BUCKET_LABELS_MS
            .iter()
            .zip(&self.over)
            .map(|(l, n)| format!(">{l} ms: {}", n.load(Relaxed)))
            .collect();
        format!(
            "{} stalls, max {} µs ({})",
            self.stalls.load(Relaxed),
            self.max_us.load(Relaxed),
            buckets.join(", ")
        )
    }
}

/// The stall counters of every shard, indexed by shard id; created at boot.
pub fn registry(shards: usize) -> Arc<[ShardStallStats]> {
    (0..shards).map(|_| ShardStallStats::default()).collect()
}

/// What a task was doing when it stalled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// Nothing recorded (a timer or background task: its label says it).
    Idle,
    /// Serving a request (connections; cross-shard tasks carry the
    /// request of the connection that sent them).
    Request {
        /// The request's API key (Kafka's number, e.g. 0 for Produce).
        api_key: i16,
        /// The API's name as the handler layer gives it (e.g. `"Produce"`).
        api: &'static str,
        /// The request's version.
        version: i16,
    },
}

impl fmt::Display for Activity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Activity::Idle => f.write_str("idle"),
            Activity::Request { api, version, .. } => write!(f, "{api} v{version}"),
        }
    }
}

/// This thread's detector: where to count, and the log rate limit.
struct Monitor {
    shard: usize,
    stats: Arc<[ShardStallStats]>,
    last_log: Option<Instant>,
    suppressed: u64,
    /// The longest stall (µs) since the last line logged, that line's
    /// included.
    window_max_us: u64,
}

thread_local! {
    /// The threshold in ns; 0 = off (also before [`install`]).
    static THRESHOLD_NS: Cell<u64> = const { Cell::new(0) };
    /// What the task being polled is doing.
    static ACTIVITY: Cell<Activity> = const { Cell::new(Activity::Idle) };
    static MONITOR: RefCell<Option<Monitor>> = const { RefCell::new(None) };
    /// When the outermost watched poll running on this thread began.
    static POLL_START: Cell<Option<Instant>> = const { Cell::new(None) };
    /// `reactor.stall.rusage`: read the thread's resource use before each
    /// poll, and again for each stall line.
    static RUSAGE: Cell<bool> = const { Cell::new(false) };
    /// This thread's /proc/thread-self/schedstat, opened by [`install`]
    /// with `reactor.stall.rusage` (read with pread(2): one system call).
    static SCHEDSTAT: RefCell<Option<std::fs::File>> = const { RefCell::new(None) };
}

/// The run-queue wait (ns, the second field) from an open
/// /proc/thread-self/schedstat ("<on-CPU ns> <run-queue wait ns> <slices>").
fn read_run_delay(file: &std::fs::File) -> Option<u64> {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; 96];
    let n = file.read_at(&mut buf, 0).ok()?;
    parse_run_delay(buf.get(..n)?)
}

fn parse_run_delay(text: &[u8]) -> Option<u64> {
    std::str::from_utf8(text)
        .ok()?
        .split_ascii_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// How long the reactor has been inside the current task poll, when the
/// detector is on and a watched task is being polled; `None` otherwise.
/// Work that may run synchronously many times in one poll (inline appends)
/// checks it so that one poll stays well below the stall threshold.
pub fn poll_elapsed() -> Option<Duration> {
    POLL_START.with(Cell::get).map(|t| t.elapsed())
}

/// The calling thread's resource use so far, or, from
/// [`ThreadUsage::since`], during an interval. CPU time comes from
/// `CLOCK_THREAD_CPUTIME_ID` (exact); getrusage(2)'s own CPU times
/// (`RUSAGE_THREAD`) are tick-sampled, 4 ms apart on a 250 Hz kernel, too
/// coarse for a stall. Switches and faults come from getrusage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadUsage {
    /// CPU time, user and kernel together (ns).
    pub cpu_ns: u64,
    /// Times the thread gave up the CPU itself (blocked: a sleep, a lock,
    /// a disk wait).
    pub voluntary_switches: u64,
    /// Times the scheduler took the CPU from it (preempted by another
    /// thread on the same core).
    pub involuntary_switches: u64,
    /// Page faults served without I/O.
    pub minor_faults: u64,
    /// Page faults that read from a disk.
    pub major_faults: u64,
    /// Time spent runnable but waiting for the core (ns): the second field
    /// of /proc/thread-self/schedstat (`run_delay`): another thread had
    /// the core, the thread was being woken, or its cgroup's CPU quota was
    /// used up. `None` where the kernel does not give it (no
    /// `CONFIG_SCHED_INFO`). Time off the CPU that is neither this nor
    /// blocked is what the kernel took out of the thread's CPU clock while
    /// it ran: the hypervisor's (steal, with
    /// `CONFIG_PARAVIRT_TIME_ACCOUNTING`) and interrupts' (with
    /// `CONFIG_IRQ_TIME_ACCOUNTING`).
    pub runqueue_wait_ns: Option<u64>,
}

impl ThreadUsage {
    /// The calling thread's use so far (two system calls, a third for the
    /// run-queue wait once [`install`] has opened schedstat); `None` if
    /// the kernel refuses getrusage or the CPU clock.
    pub fn now() -> Option<ThreadUsage> {
        // SAFETY: an all-zero `rusage` is a valid value of this plain C
        // struct, and getrusage only writes into the one it is given.
        let mut r: libc::rusage = unsafe { std::mem::zeroed() };
        // The run-queue wait first and the CPU clock last, next to the
        // caller's `Instant::now()`: the other calls' cost is not the poll's.
        let runqueue_wait_ns = SCHEDSTAT.with(|f| f.borrow().as_ref().and_then(read_run_delay));
        // SAFETY: `r` is a valid, writable `rusage` for the call's duration.
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut r) } != 0 {
            return None;
        }
        let cpu = read_clock(libc::CLOCK_THREAD_CPUTIME_ID)?;
        let n = |v: libc::c_long| v.max(0) as u64;
        Some(ThreadUsage {
            cpu_ns: cpu.as_nanos().min(u128::from(u64::MAX)) as u64,
            voluntary_switches: n(r.ru_nvcsw),
            involuntary_switches: n(r.ru_nivcsw),
            minor_faults: n(r.ru_minflt),
            major_faults: n(r.ru_majflt),
            runqueue_wait_ns,
        })
    }

    /// What was used between `earlier` and `self` (each field saturating
    /// at 0).
    pub fn since(self, earlier: ThreadUsage) -> ThreadUsage {
        ThreadUsage {
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
            voluntary_switches: self
                .voluntary_switches
                .saturating_sub(earlier.voluntary_switches),
            involuntary_switches: self
                .involuntary_switches
                .saturating_sub(earlier.involuntary_switches),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
            runqueue_wait_ns: self
                .runqueue_wait_ns
                .zip(earlier.runqueue_wait_ns)
                .map(|(a, b)| a.saturating_sub(b)),
        }
    }

    /// The tail of a stall line for a poll that took `took` (wall time):
    /// how much of it the thread was on the CPU (capped at `took`: the
    /// readings bracket the poll, a little wider), how much off it (`took`
    /// minus that), and why it left (preempted: another thread had the
    /// core; blocked: it slept in the kernel). With the run-queue wait, the
    /// time off the CPU is split into waiting for the core and the rest:
    /// blocked, or, with no block, the host's or interrupts' (see
    /// [`Self::runqueue_wait_ns`]). The counts run to the second reading,
    /// taken for the line, so a switch just after the poll may be counted
    /// with 0.00 ms off the CPU.
    pub fn stall_note(&self, took: Duration) -> String {
        let wall_ns = took.as_nanos().min(u64::MAX as u128) as u64;
        let ms = |ns: u64| ns as f64 / 1e6;
        let off_ns = wall_ns.saturating_sub(self.cpu_ns);
        let why = match self.runqueue_wait_ns {
            Some(wait) => {
                let wait = wait.min(off_ns);
                format!(
                    ": waiting for the core {:.2} ms (preempted {}×), taken by the host, \
                     interrupts or blocked {:.2} ms (blocked {}×)",
                    ms(wait),
                    self.involuntary_switches,
                    ms(off_ns - wait),
                    self.voluntary_switches,
                )
            }
            None => format!(
                " (preempted {}×, blocked {}×)",
                self.involuntary_switches, self.voluntary_switches
            ),
        };
        format!(
            "on CPU {:.2} ms, off it {:.2} ms{why}, {} page fault(s) ({} major)",
            ms(self.cpu_ns.min(wall_ns)),
            ms(off_ns),
            self.minor_faults.saturating_add(self.major_faults),
            self.major_faults
        )
    }
}

/// Clock `id`'s reading (clock_gettime(2)); `None` if the kernel refuses
/// the call.
fn read_clock(id: libc::clockid_t) -> Option<Duration> {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec for the call's duration.
    if unsafe { libc::clock_gettime(id, &mut t) } != 0 {
        return None;
    }
    Some(Duration::new(
        t.tv_sec.max(0) as u64,
        t.tv_nsec.clamp(0, 999_999_999) as u32,
    ))
}

/// The system's CLOCK_MONOTONIC (the clock of `perf record -k
/// CLOCK_MONOTONIC` and of `perf script`'s sample times), so that a stall
/// line can be matched with a trace; `None` if the kernel refuses the call.
fn monotonic_now() -> Option<Duration> {
    read_clock(libc::CLOCK_MONOTONIC)
}

/// Turns the detector on for this thread (a shard): stalls longer than
/// `threshold` are counted in `stats[shard]`. A zero threshold turns it off.
/// With `rusage` (`reactor.stall.rusage`) each stall line also gives the
/// thread's [`ThreadUsage`] during the stalled poll (nothing with the
/// detector off; warned and left off if the kernel refuses the calls).
pub fn install(shard: usize, stats: Arc<[ShardStallStats]>, threshold: Duration, rusage: bool) {
    let ns = if shard < stats.len() {
        threshold.as_nanos().min(u64::MAX as u128) as u64
    } else {
        0
    };
    THRESHOLD_NS.with(|t| t.set(ns));
    let rusage = rusage && ns != 0;
    let readable = !rusage || ThreadUsage::now().is_some();
    if !readable {
        log::warn!(
            "shard {shard}: reactor.stall.rusage is set but this thread's CPU time or rusage \
             cannot be read: {}; stall lines go without it",
            std::io::Error::last_os_error()
        );
    }
    RUSAGE.with(|r| r.set(rusage && readable));
    // The run-queue wait where the kernel gives it (opened once: the path
    // names the calling thread, so it stays this thread's).
    let schedstat = if rusage && readable {
        const PATH: &str = "/proc/thread-self/schedstat";
        match std::fs::File::open(PATH) {
            Ok(f) if read_run_delay(&f).is_some() => Some(f),
            Ok(_) => {
                log::warn!(
                    "shard {shard}: {PATH} gives no run-queue wait; stall lines do not split \
                     the time off the CPU"
                );
                None
            }
            Err(e) => {
                log::warn!(
                    "shard {shard}: {PATH} cannot be opened: {e}; stall lines do not split the \
                     time off the CPU"
                );
                None
            }
        }
    } else {
        None
    };
    SCHEDSTAT.with(|s| *s.borrow_mut() = schedstat);
    if let Some(s) = stats.get(shard) {
        crate::metrics::shard::install(s.broker.clone());
    }
    MONITOR.with(|m| {
        *m.borrow_mut() = Some(Monitor {
            shard,
            stats,
            last_log: None,
            suppressed: 0,
            window_max_us: 0,
        })
    });
}

/// Turns the detector off for this thread from here on, the poll running
/// now included: the shard is stopping, nothing is served any more, and
/// its close (flushing every partition) blocks the reactor on purpose.
pub fn stop() {
    THRESHOLD_NS.with(|t| t.set(0));
}

/// Records that the current task now serves the request of API key
/// `api_key` (named `api`, e.g. `"Produce"`) at `version` (called by the
/// connection at dispatch). Costs one cell write.
pub fn set_request(api_key: i16, api: &'static str, version: i16) {
    ACTIVITY.with(|a| {
        a.set(Activity::Request {
            api_key,
            api,
            version,
        })
    });
}

/// What the task being polled on this thread is doing.
pub fn current_activity() -> Activity {
    ACTIVITY.with(Cell::get)
}

/// A future whose polls are timed; see the module docs.
pub struct Watched<F> {
    label: &'static str,
    activity: Activity,
    fut: F,
}

/// Wraps `fut` as a task labelled `label` (a static name such as
/// `"connection"` or `"retention"`). The task starts with the activity of
/// the task that creates it (a fan-out task inherits its request).
pub fn watch<F: Future>(label: &'static str, fut: F) -> Watched<F> {
    watch_as(label, current_activity(), fut)
}

/// Wraps `fut` as a task labelled `label` doing `activity` (for work sent
/// from another shard, which carries the sender's activity).
pub fn watch_as<F: Future>(label: &'static str, activity: Activity, fut: F) -> Watched<F> {
    Watched {
        label,
        activity,
        fut,
    }
}

/// Futures larger than this (bytes) are boxed before they are wrapped and
/// spawned: glommio moves a task's future several times on its way into
/// the task (a request handler's state is many KiB), and moving a box
/// moves one pointer.
const BOX_ABOVE: usize = 512;

/// `glommio::spawn_local` of `fut` wrapped in [`watch`]: the way Fjord
/// spawns every task on a shard. Gives glommio's task handle.
pub fn spawn_local<T: 'static, F: Future<Output = T> + 'static>(
    label: &'static str,
    fut: F,
) -> glommio::Task<T> {
    if std::mem::size_of::<F>() > BOX_ABOVE {
        glommio::spawn_local(watch(label, Box::pin(fut)))
    } else {
        glommio::spawn_local(watch(label, fut))
    }
}

impl<F: Future> Future for Watched<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `fut` is structurally pinned: it is never moved out of
        // `self` and `Watched` has no `Drop` or `Unpin` impl that would move
        // it; `label` and `activity` are plain `Copy` data, not pinned.
        let this = unsafe { self.get_unchecked_mut() };
        let fut = unsafe { Pin::new_unchecked(&mut this.fut) };
        let threshold = THRESHOLD_NS.with(Cell::get);
        if threshold == 0 {
            return fut.poll(cx);
        }
        let outer = ACTIVITY.with(|a| a.replace(this.activity));
        // Read before the clock starts, so that its cost is not the poll's.
        let usage_before = if RUSAGE.with(Cell::get) {
            ThreadUsage::now()
        } else {
            None
        };
        let start = Instant::now();
        // A nested watched future (a cross-shard task's body) keeps the
        // outer poll's start: the reactor has been busy since then.
        let outer_start = POLL_START.with(|p| p.replace(Some(start)));
        if let Some(o) = outer_start {
            POLL_START.with(|p| p.set(Some(o)));
        }
        let out = fut.poll(cx);
        let took = start.elapsed();
        POLL_START.with(|p| p.set(outer_start));
        this.activity = ACTIVITY.with(|a| a.replace(outer));
        let ns = took.as_nanos().min(u64::MAX as u128) as u64;
        // Stopped during this poll ([`stop`]): not a stall.
        if ns > threshold && THRESHOLD_NS.with(Cell::get) != 0 {
            stalled(this.label, this.activity, start, took, usage_before);
        }
        out
    }
}

/// Whether a stall of `us` µs gets its own log line, `since_line` after
/// the last line (None: no line yet), the longest stall since that line
/// being `window_max_us` ([`stalled`]). Every line, a doubling one too,
/// starts the next second of the rate limit.
fn worth_a_line(since_line: Option<Duration>, window_max_us: u64, us: u64) -> bool {
    since_line.is_none_or(|d| d >= LOG_EVERY) || us > window_max_us.saturating_mul(2)
}

/// Counts a stall and logs it, rate-limited to one line per
/// [`LOG_EVERY`], except a stall more than twice as long as every one
/// since the last line: the worst stalls of a second name their task too
/// (at most a few lines more, each one doubling the last). With
/// `usage_before` (`reactor.stall.rusage`), a logged line also gives the
/// thread's use since that reading (read again only for a line, before
/// the line is built) and when the poll began (`start`) on
/// CLOCK_MONOTONIC.
#[cold]
fn stalled(
    label: &'static str,
    activity: Activity,
    start: Instant,
    took: Duration,
    usage_before: Option<ThreadUsage>,
) {
    let us = took.as_micros().min(u64::MAX as u128) as u64;
    MONITOR.with(|m| {
        let Ok(mut m) = m.try_borrow_mut() else {
            return;
        };
        let Some(m) = m.as_mut() else { return };
        if let Some(s) = m.stats.get(m.shard) {
            s.record(us);
        }
        let now = Instant::now();
        if !worth_a_line(
            m.last_log.map(|t| now.duration_since(t)),
            m.window_max_us,
            us,
        ) {
            m.suppressed += 1;
            m.window_max_us = m.window_max_us.max(us);
            return;
        }
        let usage = usage_before.and_then(|b| {
            let used = ThreadUsage::now()?.since(b);
            // The two clocks read together: the poll began this long ago.
            let began = monotonic_now().map(|t| t.saturating_sub(start.elapsed()));
            Some((used, began))
        });
        let doing = match activity {
            Activity::Idle => String::new(),
            a => format!(" ({a})"),
        };
        let more = match m.suppressed {
            0 => String::new(),
            n => format!("; {n} more stall(s) since the last report"),
        };
        let usage = usage.map_or(String::new(), |(used, began)| {
            let began = began.map_or(String::new(), |t| {
                format!("; began at CLOCK_MONOTONIC {:.6} s", t.as_secs_f64())
            });
            format!("; {}{began}", used.stall_note(took))
        });
        log::warn!(
            "shard {}: reactor stalled {:.2} ms in one poll of task `{label}`{doing}{more}{usage}",
            m.shard,
            took.as_secs_f64() * 1e3
        );
        m.last_log = Some(now);
        m.suppressed = 0;
        m.window_max_us = us;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A future that busy-spins `spin` in its first poll, then finishes on
    /// its second.
    struct Spin {
        spin: Duration,
        polled: bool,
    }

    impl Future for Spin {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.polled {
                return Poll::Ready(());
            }
            let end = Instant::now() + self.spin;
            while Instant::now() < end {
                std::hint::spin_loop();
            }
            self.polled = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    fn spin(ms: u64) -> Spin {
        Spin {
            spin: Duration::from_millis(ms),
            polled: false,
        }
    }

    #[test]
    fn slow_poll_is_counted() {
        let stats = registry(2);
        install(1, stats.clone(), Duration::from_micros(500), false);
        futures_lite::future::block_on(watch("spin", spin(2)));
        let s = &stats[1];
        assert_eq!(s.stalls.load(Relaxed), 1);
        assert!(s.max_us.load(Relaxed) >= 2_000);
        assert_eq!(s.over[0].load(Relaxed), 1, "> 0.5 ms");
        assert_eq!(s.over[1].load(Relaxed), 1, "> 1 ms");
        assert_eq!(stats[0].stalls.load(Relaxed), 0, "other shard untouched");
        assert!(s.summary().starts_with("1 stalls"), "{}", s.summary());
    }

    #[test]
    fn a_stall_with_rusage_on_is_counted_alike() {
        let stats = registry(1);
        install(0, stats.clone(), Duration::from_micros(500), true);
        futures_lite::future::block_on(watch("spin", spin(2)));
        assert_eq!(stats[0].stalls.load(Relaxed), 1);
        assert!(RUSAGE.with(Cell::get));
        install(0, stats, Duration::ZERO, true);
        assert!(!RUSAGE.with(Cell::get), "off with the detector");
    }

    #[test]
    fn thread_usage_reads_this_threads_cpu_time_exactly() {
        let wall = Instant::now();
        let before = ThreadUsage::now().expect("CPU clock and getrusage(RUSAGE_THREAD)");
        // Burn CPU until 2 ms of it are charged to this thread (however
        // long that takes in wall time), reading it after every few µs.
        let mut x = 0u64;
        let mut below = std::collections::BTreeSet::new();
        let used = loop {
            for i in 0..1_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            let d = ThreadUsage::now().expect("usage").since(before);
            if d.cpu_ns >= 2_000_000 {
                break d;
            }
            below.insert(d.cpu_ns);
        };
        let elapsed = wall.elapsed();
        // Exact, not tick-sampled (a 250 Hz tick would give at most one
        // value below 2 ms): many distinct readings on the way, and never
        // more CPU than wall time around both (50 µs of slack between the
        // two clocks).
        assert!(
            below.len() >= 20,
            "{} distinct readings below 2 ms",
            below.len()
        );
        assert!(
            u128::from(used.cpu_ns) <= elapsed.as_nanos() + 50_000,
            "{used:?} in {elapsed:?}"
        );
    }

    #[test]
    fn thread_usage_difference_and_note() {
        let a = ThreadUsage {
            cpu_ns: 1_000_000,
            voluntary_switches: 3,
            involuntary_switches: 7,
            minor_faults: 10,
            major_faults: 1,
            runqueue_wait_ns: None,
        };
        let b = ThreadUsage {
            cpu_ns: 1_320_000,
            voluntary_switches: 3,
            involuntary_switches: 8,
            minor_faults: 12,
            major_faults: 1,
            runqueue_wait_ns: None,
        };
        let d = b.since(a);
        assert_eq!(
            d,
            ThreadUsage {
                cpu_ns: 320_000,
                voluntary_switches: 0,
                involuntary_switches: 1,
                minor_faults: 2,
                major_faults: 0,
                runqueue_wait_ns: None,
            }
        );
        assert_eq!(a.since(b), ThreadUsage::default(), "saturates at 0");
        assert_eq!(
            d.stall_note(Duration::from_micros(25_170)),
            "on CPU 0.32 ms, off it 24.85 ms (preempted 1×, blocked 0×), 2 page fault(s) (0 major)"
        );
        // Readings taken around the poll may cover a little more CPU time
        // than the poll's wall time: never more on CPU than the stall.
        assert_eq!(
            d.stall_note(Duration::from_micros(300)),
            "on CPU 0.30 ms, off it 0.00 ms (preempted 1×, blocked 0×), 2 page fault(s) (0 major)"
        );
        // With the run-queue wait: the time off the CPU split into waiting
        // for the core and the rest (the host's, with no block).
        let a = ThreadUsage {
            runqueue_wait_ns: Some(5_000_000),
            ..a
        };
        let b = ThreadUsage {
            runqueue_wait_ns: Some(5_500_000),
            ..b
        };
        let d = b.since(a);
        assert_eq!(d.runqueue_wait_ns, Some(500_000));
        assert_eq!(
            d.stall_note(Duration::from_micros(25_170)),
            "on CPU 0.32 ms, off it 24.85 ms: waiting for the core 0.50 ms (preempted 1×), \
             taken by the host, interrupts or blocked 24.35 ms (blocked 0×), 2 page fault(s) (0 major)"
        );
        // Never more waiting than time off the CPU.
        assert_eq!(
            d.stall_note(Duration::from_micros(600)),
            "on CPU 0.32 ms, off it 0.28 ms: waiting for the core 0.28 ms (preempted 1×), \
             taken by the host, interrupts or blocked 0.00 ms (blocked 0×), 2 page fault(s) (0 major)"
        );
        assert_eq!(
            ThreadUsage {
                runqueue_wait_ns: None,
                ..b
            }
            .since(a)
            .runqueue_wait_ns,
            None,
            "both readings need it"
        );
    }

    #[test]
    fn run_queue_wait_is_read_from_schedstat() {
        assert_eq!(parse_run_delay(b"1076432 2500 17\n"), Some(2500));
        assert_eq!(parse_run_delay(b"1076432\n"), None);
        assert_eq!(parse_run_delay(b""), None);
        // This kernel gives it for the calling thread, and it only grows.
        let f = std::fs::File::open("/proc/thread-self/schedstat").expect("schedstat");
        let first = read_run_delay(&f).expect("run-queue wait");
        std::thread::yield_now();
        let second = read_run_delay(&f).expect("read again");
        assert!(second >= first, "{first} then {second}");
    }

    #[test]
    fn fast_poll_is_not_counted() {
        let stats = registry(1);
        install(0, stats.clone(), Duration::from_millis(50), false);
        futures_lite::future::block_on(watch("fast", async { 7 }));
        futures_lite::future::block_on(watch("spin", spin(0)));
        assert_eq!(stats[0].stalls.load(Relaxed), 0);
        assert_eq!(stats[0].max_us.load(Relaxed), 0);
    }

    #[test]
    fn zero_threshold_disables() {
        let stats = registry(1);
        install(0, stats.clone(), Duration::ZERO, false);
        futures_lite::future::block_on(watch("spin", spin(2)));
        assert_eq!(stats[0].stalls.load(Relaxed), 0);
    }

    #[test]
    fn the_worst_stalls_of_a_second_get_a_line() {
        let ms = Duration::from_millis;
        assert!(worth_a_line(None, 0, 600), "the first stall");
        assert!(!worth_a_line(Some(ms(10)), 600, 700), "within the second");
        assert!(!worth_a_line(Some(ms(10)), 600, 1_200), "not twice as long");
        assert!(worth_a_line(Some(ms(10)), 600, 1_201), "twice as long");
        assert!(worth_a_line(Some(ms(1_000)), 30_000, 600), "a second later");
    }

    #[test]
    fn a_poll_that_stops_the_detector_is_not_counted() {
        let stats = registry(1);
        install(0, stats.clone(), Duration::from_micros(500), false);
        futures_lite::future::block_on(watch("closing", async {
            stop();
            let end = Instant::now() + Duration::from_millis(2);
            while Instant::now() < end {
                std::hint::spin_loop();
            }
        }));
        futures_lite::future::block_on(watch("spin", spin(2)));
        assert_eq!(stats[0].stalls.load(Relaxed), 0);
    }

    #[test]
    fn activity_follows_the_task() {
        let stats = registry(1);
        install(0, stats, Duration::from_secs(10), false);
        ACTIVITY.with(|a| a.set(Activity::Idle));
        let seen = futures_lite::future::block_on(watch("conn", async {
            set_request(0, "Produce", 9);
            current_activity()
        }));
        assert_eq!(
            seen,
            Activity::Request {
                api_key: 0,
                api: "Produce",
                version: 9
            }
        );
        // The activity set inside the task does not leak out of its poll.
        assert_eq!(current_activity(), Activity::Idle);
        assert_eq!(seen.to_string(), "Produce v9");
    }
}
