//! `fjord-perf pauses`: how often, and for how long, this machine stops a
//! thread that only computes. One thread per given core, pinned, all at
//! once, runs a fixed step of arithmetic (a few µs, no memory beyond its
//! stack, no system call but two clock reads) and reads CLOCK_MONOTONIC and
//! its own CPU clock (CLOCK_THREAD_CPUTIME_ID) after each step. A step that
//! should take microseconds but took long is a pause of one of two kinds:
//!
//! - **charged**: the thread's CPU clock ran through it (by at least
//!   `--threshold-us`): the kernel thinks the thread was running. On a
//!   virtual machine that is the host stopping the virtual CPU without the
//!   guest accounting it as steal, or host work on the guest's behalf
//!   (faults on guest memory); on bare metal, interrupts (without
//!   `CONFIG_IRQ_TIME_ACCOUNTING`) or SMIs.
//! - **uncharged**: the wall clock ran (by more than 1 ms) and the CPU
//!   clock did not: another thread had the core, or the host's accounted
//!   steal.
//!
//! Also counted: steps whose CPU time exceeds their wall time by more than
//! 0.1 ms (the CPU clock jumping ahead: accounting catching up).
//!
//! The broker's reactor meets the same pauses: a stall line's "on CPU"
//! (`reactor.stall.rusage`) includes charged pauses. Run it with nothing
//! else on the machine; docs/PERFORMANCE.md has the figures.

use std::time::{Duration, Instant};

/// `fjord-perf pauses` arguments.
#[derive(clap::Args, Clone)]
pub struct PausesArgs {
    /// Cores to run on, one thread each, all at once (comma-separated).
    #[arg(long, default_value = "0,1", value_delimiter = ',')]
    pub cores: Vec<usize>,
    /// Seconds to run.
    #[arg(long, default_value_t = 20.0)]
    pub duration: f64,
    /// A step whose CPU clock ran at least this long (µs) is a charged pause.
    #[arg(long, default_value_t = 200)]
    pub threshold_us: u64,
}

/// One step's kind ([`classify`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Took as long as a step takes.
    Normal,
    /// The CPU clock ran at least the threshold.
    Charged,
    /// The wall clock ran over 1 ms, the CPU clock under the threshold.
    Uncharged,
    /// The CPU clock ran more than 0.1 ms past the wall clock.
    ClockAhead,
}

/// Classifies one step: `wall_ns` and `cpu_ns` it took on each clock,
/// `threshold_ns` the charged-pause threshold.
pub fn classify(wall_ns: u64, cpu_ns: u64, threshold_ns: u64) -> Step {
    if cpu_ns > wall_ns.saturating_add(100_000) {
        Step::ClockAhead
    } else if cpu_ns >= threshold_ns {
        Step::Charged
    } else if wall_ns > 1_000_000 {
        Step::Uncharged
    } else {
        Step::Normal
    }
}

/// One core's counts.
#[derive(Default, Debug)]
struct Counts {
    steps: u64,
    charged: u64,
    charged_ns: u64,
    charged_max_ns: u64,
    uncharged: u64,
    uncharged_ns: u64,
    uncharged_max_ns: u64,
    clock_ahead: u64,
}

fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec for the call's duration.
    unsafe { libc::clock_gettime(id, &mut t) };
    (t.tv_sec.max(0) as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec.max(0) as u64)
}

fn run_core(core: usize, duration: Duration, threshold_ns: u64) -> Counts {
    crate::workloads::pin(&[core], 0);
    let mut c = Counts::default();
    let end = Instant::now() + duration;
    let mut x = 1u64;
    let (mut w0, mut c0) = (
        clock_ns(libc::CLOCK_MONOTONIC),
        clock_ns(libc::CLOCK_THREAD_CPUTIME_ID),
    );
    while Instant::now() < end {
        for i in 0..2000u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
        let (w1, c1) = (
            clock_ns(libc::CLOCK_MONOTONIC),
            clock_ns(libc::CLOCK_THREAD_CPUTIME_ID),
        );
        let (dw, dc) = (w1.saturating_sub(w0), c1.saturating_sub(c0));
        c.steps += 1;
        match classify(dw, dc, threshold_ns) {
            Step::Normal => {}
            Step::Charged => {
                c.charged += 1;
                c.charged_ns += dc;
                c.charged_max_ns = c.charged_max_ns.max(dc);
            }
            Step::Uncharged => {
                c.uncharged += 1;
                c.uncharged_ns += dw;
                c.uncharged_max_ns = c.uncharged_max_ns.max(dw);
            }
            Step::ClockAhead => c.clock_ahead += 1,
        }
        (w0, c0) = (w1, c1);
    }
    c
}

/// Runs the loop on every core of `a.cores` at once and prints one line
/// per core.
pub fn run(a: &PausesArgs) -> Result<(), String> {
    if a.cores.is_empty() {
        return Err("--cores: at least one core".into());
    }
    let duration = Duration::from_secs_f64(a.duration.max(0.1));
    let threshold_ns = a.threshold_us.max(1) * 1000;
    let threads: Vec<_> = a
        .cores
        .iter()
        .map(|&core| std::thread::spawn(move || (core, run_core(core, duration, threshold_ns))))
        .collect();
    println!(
        "== pauses of a compute-only thread per core, {:.0} s, all cores at once",
        duration.as_secs_f64()
    );
    println!(
        "core  step µs  charged ≥{} µs: n / total ms / longest ms  uncharged >1 ms: n / total ms / longest ms  CPU clock ahead",
        a.threshold_us
    );
    for t in threads {
        let (core, c) = t.join().map_err(|_| "a measuring thread panicked")?;
        let ms = |ns: u64| ns as f64 / 1e6;
        println!(
            "{core:>4}  {:>7.1}  {:>5} / {:>8.2} / {:>6.2}  {:>5} / {:>8.2} / {:>6.2}  {:>5}",
            duration.as_secs_f64() * 1e6 / c.steps.max(1) as f64,
            c.charged,
            ms(c.charged_ns),
            ms(c.charged_max_ns),
            c.uncharged,
            ms(c.uncharged_ns),
            ms(c.uncharged_max_ns),
            c.clock_ahead
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_classified_by_which_clock_ran() {
        let t = 200_000;
        assert_eq!(classify(3_000, 3_000, t), Step::Normal);
        assert_eq!(classify(900_000, 10_000, t), Step::Normal);
        assert_eq!(classify(1_200_000, 1_190_000, t), Step::Charged);
        assert_eq!(classify(250_000, 240_000, t), Step::Charged);
        assert_eq!(classify(25_000_000, 30_000, t), Step::Uncharged);
        assert_eq!(classify(5_000, 290_000, t), Step::ClockAhead);
        // A long step partly charged: charged when the CPU clock passed the
        // threshold.
        assert_eq!(classify(15_000_000, 800_000, t), Step::Charged);
    }

    #[test]
    fn a_short_run_counts_steps() {
        let c = run_core(0, Duration::from_millis(50), 200_000);
        assert!(c.steps > 100, "{c:?}");
    }
}
