//! Open-loop send schedule. The k-th send is *intended* at
//! `start + k * interval`, whether or not the previous one was late;
//! latency is measured from that intended time, so a stalled broker is
//! charged for every send it delayed (no coordinated omission).

use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    /// Nanoseconds between sends; 0 = unlimited (send as fast as possible).
    pub interval_ns: f64,
}

impl Schedule {
    /// `bytes_per_sec` spread over `actors` senders each sending units of
    /// `unit_bytes` bytes. `None` or 0 means unlimited.
    pub fn for_rate(bytes_per_sec: Option<f64>, unit_bytes: usize, actors: usize) -> Schedule {
        match bytes_per_sec {
            Some(r) if r > 0.0 => {
                let sends_per_sec = r / unit_bytes as f64 / actors.max(1) as f64;
                Schedule {
                    interval_ns: 1e9 / sends_per_sec,
                }
            }
            _ => Schedule { interval_ns: 0.0 },
        }
    }

    pub fn unlimited(&self) -> bool {
        self.interval_ns <= 0.0
    }

    /// Offset of the k-th intended send from the start.
    pub fn offset(&self, k: u64) -> Duration {
        Duration::from_nanos((k as f64 * self.interval_ns).round() as u64)
    }

    pub fn intended(&self, start: Instant, k: u64) -> Instant {
        start + self.offset(k)
    }
}

/// Sleeps until `t` (coarse sleep, then a short yield loop).
pub fn wait_until(t: Instant) {
    loop {
        let now = Instant::now();
        if now >= t {
            return;
        }
        let left = t - now;
        if left > Duration::from_micros(60) {
            std::thread::sleep(left - Duration::from_micros(50));
        } else {
            std::thread::yield_now();
        }
    }
}

/// Ask the kernel for fine-grained timer wakeups on this thread.
pub fn fine_timer_slack() {
    // PR_SET_TIMERSLACK = 29; 1 ns slack.
    unsafe {
        libc::prctl(29, 1u64, 0u64, 0u64, 0u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_from_rate() {
        // 100 MB/s of 64 KiB units over 2 actors: 762.9 sends/s each.
        let s = Schedule::for_rate(Some(100e6), 65536, 2);
        let per_actor = 100e6 / 65536.0 / 2.0;
        assert!((s.interval_ns - 1e9 / per_actor).abs() < 1e-3);
        assert!(Schedule::for_rate(None, 65536, 1).unlimited());
        assert!(Schedule::for_rate(Some(0.0), 65536, 1).unlimited());
    }

    #[test]
    fn intended_times_are_evenly_spaced_from_start() {
        let s = Schedule {
            interval_ns: 2_500_000.0,
        }; // 400/s
        let start = Instant::now();
        assert_eq!(s.intended(start, 0), start);
        assert_eq!(s.offset(1), Duration::from_micros(2500));
        assert_eq!(s.offset(400), Duration::from_secs(1));
        assert_eq!(s.intended(start, 4000) - start, Duration::from_secs(10));
        // Independent of when earlier sends actually went out.
        assert_eq!(s.offset(7) - s.offset(6), Duration::from_micros(2500));
    }

    #[test]
    fn fractional_intervals_do_not_drift() {
        let s = Schedule {
            interval_ns: 1e9 / 3.0,
        };
        assert_eq!(s.offset(3), Duration::from_secs(1));
        assert_eq!(s.offset(3_000_000), Duration::from_secs(1_000_000));
        assert_eq!(s.offset(1), Duration::from_nanos(333_333_333));
    }
}
