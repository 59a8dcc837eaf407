//! `fjord-perf pauses`: how often, and for how long, this machine stops a
//! thread that only computes. One thread per given core, pinned, all at
//! once, runs a fixed step of arithmetic (a few µs, on registers and its
//! stack) and then reads CLOCK_MONOTONIC, its own CPU clock
//! (CLOCK_THREAD_CPUTIME_ID, a system call) and CLOCK_MONOTONIC again, so
//! that each CPU-clock reading lies between two wall-clock readings. A step
//! should take microseconds; one that took long holds pauses of two kinds,
//! counted separately (a step can hold both):
//!
//! - **charged**: the thread's CPU clock ran at least `--threshold-us`
//!   through the step: the kernel thinks the thread was running. On a
//!   virtual machine that is most likely the host stopping the virtual CPU
//!   without the guest accounting it as steal, or host work on the guest's
//!   behalf; it is also interrupts on a kernel without
//!   `CONFIG_IRQ_TIME_ACCOUNTING`, and SMIs on bare metal.
//! - **uncharged**: the wall clock ran more than 1 ms past the CPU clock:
//!   another thread had the core, or the host's accounted steal.
//!
//! Also counted: steps whose CPU time exceeds the widest wall-clock time
//! around them by more than 0.1 ms (the CPU clock jumping ahead: accounting
//! catching up).
//!
//! The broker's reactor meets the same pauses: a stall line's "on CPU"
//! (`reactor.stall.rusage`) includes charged ones. Run it with nothing else
//! on the machine; docs/PERFORMANCE.md has the figures.

use std::time::Duration;

/// `fjord-perf pauses` arguments.
#[derive(clap::Args, Clone)]
pub struct PausesArgs {
    /// Cores to run on, one thread each, all at once (comma-separated,
    /// each an existing core, no repeats).
    #[arg(long, default_value = "0,1", value_delimiter = ',')]
    pub cores: Vec<usize>,
    /// Seconds to run (0.1 to 3600).
    #[arg(long, default_value_t = 20.0)]
    pub duration: f64,
    /// A step whose CPU clock ran at least this long (µs) holds a charged
    /// pause (1 to 1,000,000).
    #[arg(long, default_value_t = 200)]
    pub threshold_us: u64,
}

/// What one step held ([`classify`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// The CPU clock ran at least the threshold.
    pub charged: bool,
    /// The wall clock ran more than 1 ms past the CPU clock.
    pub uncharged: bool,
    /// The CPU clock ran more than 0.1 ms past the wall clock.
    pub clock_ahead: bool,
}

/// Classifies one step: `wall_ns` the widest wall-clock time around it
/// (from the reading before the previous CPU-clock reading to the one
/// after this step's), `cpu_ns` its CPU-clock time, `threshold_ns` the
/// charged-pause threshold.
pub fn classify(wall_ns: u64, cpu_ns: u64, threshold_ns: u64) -> Step {
    Step {
        charged: cpu_ns >= threshold_ns,
        uncharged: wall_ns.saturating_sub(cpu_ns) > 1_000_000,
        clock_ahead: cpu_ns > wall_ns.saturating_add(100_000),
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

pub(crate) fn clock_ns(id: libc::clockid_t) -> u64 {
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

/// Wall clock, CPU clock, wall clock.
fn reading() -> (u64, u64, u64) {
    let before = clock_ns(libc::CLOCK_MONOTONIC);
    let cpu = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
    (before, cpu, clock_ns(libc::CLOCK_MONOTONIC))
}

fn run_core(core: Option<usize>, duration: Duration, threshold_ns: u64) -> Counts {
    if let Some(core) = core {
        crate::workloads::pin(&[core], 0);
    }
    let mut c = Counts::default();
    let mut x = 1u64;
    let (mut before0, mut cpu0, after0) = reading();
    let end = after0.saturating_add(duration.as_nanos().min(u64::MAX as u128) as u64);
    loop {
        for i in 0..2000u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
        let (before1, cpu1, after1) = reading();
        let (wall, cpu) = (after1.saturating_sub(before0), cpu1.saturating_sub(cpu0));
        c.steps += 1;
        let step = classify(wall, cpu, threshold_ns);
        if step.charged {
            c.charged += 1;
            c.charged_ns = c.charged_ns.saturating_add(cpu);
            c.charged_max_ns = c.charged_max_ns.max(cpu);
        }
        if step.uncharged {
            let off = wall.saturating_sub(cpu);
            c.uncharged += 1;
            c.uncharged_ns = c.uncharged_ns.saturating_add(off);
            c.uncharged_max_ns = c.uncharged_max_ns.max(off);
        }
        if step.clock_ahead {
            c.clock_ahead += 1;
        }
        (before0, cpu0) = (before1, cpu1);
        if after1 >= end {
            return c;
        }
    }
}

/// Checks the arguments: the cores (existing ones, no repeats), the
/// duration and the threshold (ns).
fn checked(a: &PausesArgs) -> Result<(Duration, u64), String> {
    if a.cores.is_empty() {
        return Err("--cores: at least one core".into());
    }
    let existing: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .iter()
        .map(|c| c.id)
        .collect();
    for (i, core) in a.cores.iter().enumerate() {
        if !existing.contains(core) {
            return Err(format!(
                "--cores: core {core} is not one this process may run on ({existing:?})"
            ));
        }
        if a.cores[..i].contains(core) {
            return Err(format!("--cores: core {core} given twice"));
        }
    }
    if !(a.duration.is_finite() && (0.1..=3600.0).contains(&a.duration)) {
        return Err(format!(
            "--duration: {} is not a number of seconds from 0.1 to 3600",
            a.duration
        ));
    }
    if !(1..=1_000_000).contains(&a.threshold_us) {
        return Err(format!(
            "--threshold-us: {} is not in 1..=1000000",
            a.threshold_us
        ));
    }
    Ok((Duration::from_secs_f64(a.duration), a.threshold_us * 1000))
}

/// Runs the loop on every core of `a.cores` at once and prints one line
/// per core.
pub fn run(a: &PausesArgs) -> Result<(), String> {
    let (duration, threshold_ns) = checked(a)?;
    let threads: Vec<_> = a
        .cores
        .iter()
        .map(|&core| {
            std::thread::spawn(move || (core, run_core(Some(core), duration, threshold_ns)))
        })
        .collect();
    println!(
        "== pauses of a compute-only thread per core, {} s, all cores at once",
        duration.as_secs_f64()
    );
    println!(
        "step_us: mean wall time of a step, pauses included; charged: steps whose CPU clock \
         ran >= {} us (n, their CPU time in all and the longest, ms); uncharged: steps whose \
         wall clock ran > 1 ms past the CPU clock (n, that excess in all and the longest, ms); \
         ahead: steps whose CPU clock ran > 0.1 ms past the wall clock",
        a.threshold_us
    );
    println!(
        "{:>4} {:>9} {:>8} {:>9} {:>8} {:>9} {:>9} {:>8} {:>6}",
        "core", "step_us", "charged", "ms", "max_ms", "uncharged", "ms", "max_ms", "ahead"
    );
    for t in threads {
        let (core, c) = t.join().map_err(|_| "a measuring thread panicked")?;
        let ms = |ns: u64| ns as f64 / 1e6;
        println!(
            "{core:>4} {:>9.1} {:>8} {:>9.2} {:>8.2} {:>9} {:>9.2} {:>8.2} {:>6}",
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

    fn step(charged: bool, uncharged: bool, clock_ahead: bool) -> Step {
        Step {
            charged,
            uncharged,
            clock_ahead,
        }
    }

    #[test]
    fn steps_are_classified_by_which_clock_ran() {
        let t = 200_000;
        assert_eq!(classify(3_000, 3_000, t), Step::default());
        assert_eq!(classify(900_000, 10_000, t), Step::default());
        // The thresholds themselves.
        assert_eq!(classify(200_000, 199_999, t), Step::default());
        assert_eq!(classify(200_000, 200_000, t), step(true, false, false));
        assert_eq!(classify(1_010_000, 10_000, t), Step::default());
        assert_eq!(classify(1_010_001, 10_000, t), step(false, true, false));
        assert_eq!(classify(10_000, 110_000, t), Step::default());
        assert_eq!(classify(10_000, 110_001, t), step(false, false, true));
        // Both kinds in one step: 0.8 ms charged, 14.2 ms not.
        assert_eq!(classify(15_000_000, 800_000, t), step(true, true, false));
        assert_eq!(classify(25_000_000, 30_000, t), step(false, true, false));
        assert_eq!(classify(5_000, 290_000, t), step(true, false, true));
    }

    #[test]
    fn a_short_run_counts_consistently() {
        let t = 200_000;
        let c = run_core(None, Duration::from_millis(50), t);
        assert!(c.steps > 100, "{c:?}");
        assert!(c.charged <= c.steps && c.uncharged <= c.steps, "{c:?}");
        assert!(c.clock_ahead <= c.steps, "{c:?}");
        assert!(c.charged_ns >= c.charged * t, "{c:?}");
        assert!(c.charged_max_ns <= c.charged_ns, "{c:?}");
        assert!(c.uncharged_ns >= c.uncharged * 1_000_000, "{c:?}");
    }

    #[test]
    fn bad_arguments_are_refused() {
        let ok = PausesArgs {
            cores: vec![0],
            duration: 1.0,
            threshold_us: 200,
        };
        assert!(checked(&ok).is_ok());
        let bad = |f: fn(&mut PausesArgs)| {
            let mut a = ok.clone();
            f(&mut a);
            checked(&a).expect_err("refused")
        };
        assert!(bad(|a| a.cores = vec![]).contains("at least one"));
        assert!(bad(|a| a.cores = vec![0, 0]).contains("twice"));
        assert!(bad(|a| a.cores = vec![100_000]).contains("not one"));
        assert!(bad(|a| a.duration = f64::INFINITY).contains("--duration"));
        assert!(bad(|a| a.duration = -1.0).contains("--duration"));
        assert!(bad(|a| a.duration = 1e-9).contains("--duration"));
        assert!(bad(|a| a.threshold_us = 0).contains("--threshold-us"));
        assert!(bad(|a| a.threshold_us = u64::MAX).contains("--threshold-us"));
    }
}
