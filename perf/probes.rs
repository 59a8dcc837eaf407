//! What fjord-perf reads beside a run: the broker's reactor-stall counters
//! (`--metrics`), the broker process's CPU time (`--broker-pid`), and the
//! machine's CPU steal time (the hypervisor running something else on this
//! machine's virtual CPUs), so a slow round can be told from a slow host.

use crate::stats::cpu_seconds;
use crate::wire::Res;

/// A broker's stall counters summed over its shards (max: over shards).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct StallSnapshot {
    stalls: f64,
    max_us: f64,
    over_1ms: f64,
    over_5ms: f64,
    over_20ms: f64,
}

impl StallSnapshot {
    fn read(addr: &str) -> Res<StallSnapshot> {
        let (status, body) = fjord::metrics::fetch(addr, "/metrics")?;
        if status != 200 {
            return Err(format!("{addr}: HTTP {status}").into());
        }
        let mut s = StallSnapshot::default();
        for m in fjord::metrics::parse(&body) {
            match m.name.as_str() {
                "fjord_reactor_stalls_total" => s.stalls += m.value,
                "fjord_reactor_stall_max_us" => s.max_us = s.max_us.max(m.value),
                "fjord_reactor_stalls_over_ms" if m.labels.contains("gt=\"1\"") => {
                    s.over_1ms += m.value
                }
                "fjord_reactor_stalls_over_ms" if m.labels.contains("gt=\"5\"") => {
                    s.over_5ms += m.value
                }
                "fjord_reactor_stalls_over_ms" if m.labels.contains("gt=\"20\"") => {
                    s.over_20ms += m.value
                }
                _ => {}
            }
        }
        Ok(s)
    }

    /// Figures for the report: stalls between `self` (before) and `after`.
    /// The max is the run's only when it grew during the run; otherwise
    /// it is the broker's since start (an upper bound), named so.
    fn figures(&self, after: &StallSnapshot) -> Vec<(String, f64)> {
        let mut v = vec![
            ("broker stalls".to_string(), after.stalls - self.stalls),
            ("broker stalls >1 ms".into(), after.over_1ms - self.over_1ms),
            ("broker stalls >5 ms".into(), after.over_5ms - self.over_5ms),
            (
                "broker stalls >20 ms".into(),
                after.over_20ms - self.over_20ms,
            ),
        ];
        if after.stalls == self.stalls {
            v.push(("broker stall max µs".into(), 0.0));
        } else if after.max_us > self.max_us {
            v.push(("broker stall max µs".into(), after.max_us));
        } else {
            v.push(("broker stall max µs (since start)".into(), after.max_us));
        }
        v
    }
}

/// Reads the broker's stall counters (`--metrics`) and the machine's steal
/// time before and after a run.
pub(crate) struct StallProbe {
    metrics: Option<(String, StallSnapshot)>,
    steal_ms: Option<f64>,
}

impl StallProbe {
    pub(crate) fn start(addr: Option<&str>) -> StallProbe {
        let metrics = addr.and_then(|a| match StallSnapshot::read(a) {
            Ok(s) => Some((a.to_string(), s)),
            Err(e) => {
                eprintln!("warning: cannot read broker metrics at {a}: {e}");
                None
            }
        });
        StallProbe {
            metrics,
            steal_ms: steal_ms(),
        }
    }

    /// The run's figures: the stall counters (with `--metrics`) and "host
    /// steal ms", the CPU time the hypervisor gave to others, summed over
    /// this machine's CPUs (absent where /proc/stat has no steal column).
    pub(crate) fn finish(&self) -> Vec<(String, f64)> {
        let mut v = match &self.metrics {
            None => Vec::new(),
            Some((addr, before)) => match StallSnapshot::read(addr) {
                Ok(after) => before.figures(&after),
                Err(e) => {
                    eprintln!("warning: cannot read broker metrics at {addr}: {e}");
                    Vec::new()
                }
            },
        };
        if let (Some(before), Some(after)) = (self.steal_ms, steal_ms()) {
            v.push(("host steal ms".into(), after - before));
        }
        v
    }
}

/// The steal time of all CPUs since boot (ms), from /proc/stat's `cpu`
/// line; None where it cannot be read.
fn steal_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse_steal_ticks(&stat).map(|ticks| {
        // SAFETY: sysconf(3) takes a name and returns a value or -1.
        let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        ticks as f64 * 1e3 / tck.max(1) as f64
    })
}

/// The steal column (the 8th number) of /proc/stat's all-CPU `cpu` line,
/// in clock ticks.
fn parse_steal_ticks(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    line.split_whitespace().nth(8)?.parse().ok()
}

/// The broker process's CPU time (utime + stime, s) over a run
/// (`--broker-pid`).
pub(crate) struct CpuProbe(Option<(u32, f64)>);

impl CpuProbe {
    pub(crate) fn start(pid: Option<u32>) -> CpuProbe {
        CpuProbe(pid.and_then(|p| cpu_seconds(p).ok().map(|c| (p, c))))
    }
    pub(crate) fn stop(&self) -> Option<f64> {
        self.0
            .and_then(|(p, c0)| cpu_seconds(p).ok().map(|c1| c1 - c0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stall_figures() {
        let before = StallSnapshot {
            stalls: 3.0,
            max_us: 900.0,
            ..Default::default()
        };
        let after = StallSnapshot {
            stalls: 5.0,
            max_us: 2500.0,
            over_1ms: 1.0,
            ..Default::default()
        };
        let f = before.figures(&after);
        assert_eq!(f[0], ("broker stalls".into(), 2.0));
        assert_eq!(f[1], ("broker stalls >1 ms".into(), 1.0));
        assert_eq!(f[4], ("broker stall max µs".into(), 2500.0));
        assert_eq!(before.figures(&before)[4].1, 0.0);
    }

    #[test]
    fn steal_column() {
        let stat = "cpu  4683700 134299 1170211 4349494 2999560 0 167773 4490 0 0\n\
                    cpu0 2337409 62997 658600 1815473 1789215 0 103802 2228 0 0\n";
        assert_eq!(parse_steal_ticks(stat), Some(4490));
        assert_eq!(parse_steal_ticks("cpu  1 2 3\n"), None);
        assert!(steal_ms().is_some(), "this machine's /proc/stat");
    }
}
