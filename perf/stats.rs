//! Counters, the per-second timeline, latency histograms, broker CPU, and
//! the result outputs (table, JSON, and the SVG chart drawn by
//! [`crate::charts`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use crate::wire::Res;

/// Shared by all actors of a run; only relaxed atomic adds on the hot path.
#[derive(Default)]
pub struct Counters {
    pub bytes: AtomicU64,
    pub records: AtomicU64,
    pub requests: AtomicU64,
    pub errors: AtomicU64,
}

impl Counters {
    pub fn add(&self, bytes: u64, records: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.records.fetch_add(records, Ordering::Relaxed);
        self.requests.fetch_add(1, Ordering::Relaxed);
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub t: f64,
    pub mb_per_s: f64,
    pub records_per_s: f64,
}

/// Samples the counters every second and prints a progress line.
pub struct Timeline {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<Sample>>,
}

impl Timeline {
    pub fn start(label: &'static str, counters: Arc<Counters>) -> Timeline {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::spawn(move || {
            let start = Instant::now();
            let mut out = Vec::new();
            let (mut pb, mut pr) = (0u64, 0u64);
            let mut last = start;
            let mut tick = 1u64;
            while !s.load(Ordering::Relaxed) {
                let next = start + Duration::from_secs(tick);
                while Instant::now() < next && !s.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let now = Instant::now();
                let dt = (now - last).as_secs_f64();
                if dt < 0.2 {
                    break;
                }
                let b = counters.bytes.load(Ordering::Relaxed);
                let r = counters.records.load(Ordering::Relaxed);
                let smp = Sample {
                    t: (now - start).as_secs_f64(),
                    mb_per_s: (b - pb) as f64 / dt / 1e6,
                    records_per_s: (r - pr) as f64 / dt,
                };
                eprintln!(
                    "[{label} {:5.1}s] {:9.1} MB/s {:11.0} records/s",
                    smp.t, smp.mb_per_s, smp.records_per_s
                );
                out.push(smp);
                (pb, pr, last) = (b, r, now);
                tick += 1;
            }
            out
        });
        Timeline { stop, handle }
    }

    pub fn finish(self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// Latency histogram in nanoseconds, 1 ns .. 100 s, 3 significant digits.
pub fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("histogram bounds")
}

pub fn record(h: &mut Histogram<u64>, ns: u64, count: u64) {
    let _ = h.record_n(ns.clamp(1, h.high()), count);
}

/// Merges actor histograms into one.
pub fn merge<'a>(hs: impl IntoIterator<Item = &'a Histogram<u64>>) -> Histogram<u64> {
    let mut out = new_hist();
    for h in hs {
        out.add(h).expect("same bounds");
    }
    out
}

pub const QUANTILES: [(&str, f64); 5] = [
    ("p50", 0.50),
    ("p99", 0.99),
    ("p99.9", 0.999),
    ("p99.99", 0.9999),
    ("max", 1.0),
];

/// utime + stime of a process in seconds (Linux /proc).
pub fn cpu_seconds(pid: u32) -> Res<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after = s.rsplit_once(") ").ok_or("bad /proc stat")?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields after the command: state(3) … utime(14) stime(15).
    let ut: f64 = f.get(11).ok_or("short stat")?.parse()?;
    let st: f64 = f.get(12).ok_or("short stat")?.parse()?;
    let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Ok((ut + st) / tck)
}

/// Result of one workload run.
pub struct Report {
    pub workload: String,
    pub params: Value,
    pub elapsed_s: f64,
    pub bytes: u64,
    pub records: u64,
    pub errors: u64,
    pub timeline: Vec<Sample>,
    /// Named histograms (e.g. "produce ack", "end-to-end").
    pub hists: Vec<(String, Histogram<u64>)>,
    pub broker_cpu_s: Option<f64>,
    /// (ceiling name, MB/s) to compare throughput against.
    pub ceiling: Option<(String, f64)>,
    /// Further workload figures (name, value), e.g. transactions per second;
    /// printed under records/s and written as top-level JSON keys.
    pub extra: Vec<(String, f64)>,
}

impl Report {
    pub fn mb_per_s(&self) -> f64 {
        self.bytes as f64 / self.elapsed_s.max(1e-9) / 1e6
    }

    pub fn records_per_s(&self) -> f64 {
        self.records as f64 / self.elapsed_s.max(1e-9)
    }

    pub fn cpu_s_per_gb(&self) -> Option<f64> {
        self.broker_cpu_s
            .filter(|_| self.bytes > 0)
            .map(|c| c / (self.bytes as f64 / 1e9))
    }

    pub fn print(&self) {
        println!();
        println!("== {} ({:.1} s)", self.workload, self.elapsed_s);
        println!("{:<24}{:>14}", "MB/s", format!("{:.1}", self.mb_per_s()));
        println!(
            "{:<24}{:>14}",
            "records/s",
            format!("{:.0}", self.records_per_s())
        );
        for (name, v) in &self.extra {
            println!("{:<24}{:>14}", name, fmt_extra(*v));
        }
        if let Some((name, c)) = &self.ceiling {
            println!(
                "{:<24}{:>14}",
                format!("% of {name}"),
                format!("{:.1}%", 100.0 * self.mb_per_s() / c)
            );
        }
        if let Some(c) = self.broker_cpu_s {
            println!("{:<24}{:>14}", "broker CPU s", format!("{c:.2}"));
        }
        if let Some(c) = self.cpu_s_per_gb() {
            println!("{:<24}{:>14}", "broker CPU s/GB", format!("{c:.2}"));
        }
        if self.errors > 0 {
            println!("{:<24}{:>14}", "errors", self.errors);
        }
        for (name, h) in &self.hists {
            if h.is_empty() {
                continue;
            }
            let cells: Vec<String> = QUANTILES
                .iter()
                .map(|(q, v)| format!("{q} {}", fmt_ns(h.value_at_quantile(*v))))
                .collect();
            println!("latency {name:<16} {}  (n={})", cells.join("  "), h.len());
        }
    }

    pub fn to_json(&self) -> Value {
        let lat: serde_json::Map<String, Value> = self
            .hists
            .iter()
            .map(|(name, h)| {
                let mut m = serde_json::Map::new();
                m.insert("count".into(), json!(h.len()));
                for (q, v) in QUANTILES {
                    m.insert(
                        format!("{q}_us"),
                        json!(h.value_at_quantile(v) as f64 / 1e3),
                    );
                }
                m.insert("mean_us".into(), json!(h.mean() / 1e3));
                m.insert(
                    "curve".into(),
                    Value::Array(
                        curve_points()
                            .iter()
                            .map(|&q| json!([q, h.value_at_quantile(q) as f64 / 1e3]))
                            .collect(),
                    ),
                );
                (name.clone(), Value::Object(m))
            })
            .collect();
        let mut out = json!({
            "workload": self.workload,
            "params": self.params,
            "elapsed_s": self.elapsed_s,
            "bytes": self.bytes,
            "records": self.records,
            "errors": self.errors,
            "mb_per_s": self.mb_per_s(),
            "records_per_s": self.records_per_s(),
            "broker_cpu_s": self.broker_cpu_s,
            "broker_cpu_s_per_gb": self.cpu_s_per_gb(),
            "ceiling": self.ceiling.as_ref().map(|(n, c)| json!({
                "name": n, "mb_per_s": c, "percent": 100.0 * self.mb_per_s() / c})),
            "timeline": self.timeline.iter().map(|s| json!({
                "t": s.t, "mb_per_s": s.mb_per_s, "records_per_s": s.records_per_s})).collect::<Vec<_>>(),
            "latency": Value::Object(lat),
        });
        for (name, v) in &self.extra {
            out[name.as_str()] = json!(v);
        }
        out
    }

    pub fn write_outputs(&self, json_path: Option<&str>, plot: Option<&str>) -> Res<()> {
        if let Some(p) = json_path {
            std::fs::write(p, serde_json::to_string_pretty(&self.to_json())?)?;
            eprintln!("wrote {p}");
        }
        if let Some(p) = plot {
            crate::charts::write(
                std::path::Path::new(p),
                &self.workload,
                &[crate::charts::RunSeries::from_report(&self.workload, self)],
            )?;
            eprintln!("wrote {p}");
        }
        Ok(())
    }
}

fn fmt_extra(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

pub fn fmt_ns(ns: u64) -> String {
    if ns < 10_000 {
        format!("{:.2}µs", ns as f64 / 1e3)
    } else if ns < 10_000_000 {
        format!("{:.3}ms", ns as f64 / 1e6)
    } else {
        format!("{:.1}ms", ns as f64 / 1e6)
    }
}

/// Quantiles for the percentile curve: 0, 0.5, 0.9, 0.99, … up to 0.99999.
pub fn curve_points() -> Vec<f64> {
    let mut v = vec![0.0];
    for i in 0..=50 {
        // x = log10(1/(1-q)) from 0 to 5 in steps of 0.1
        let x = i as f64 * 0.1;
        v.push(1.0 - 10f64.powf(-x));
    }
    v.dedup();
    v
}

/// Ceilings from a `limits --json` file.
pub fn load_ceilings(path: &str) -> Res<Value> {
    Ok(serde_json::from_str(&std::fs::read_to_string(path)?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_histogram_has_all_counts_and_extremes() {
        let mut a = new_hist();
        let mut b = new_hist();
        for v in 1..=1000u64 {
            record(&mut a, v * 1000, 1);
        }
        record(&mut b, 5_000_000, 10);
        record(&mut b, 0, 1); // clamped to 1 ns
        let m = merge([&a, &b]);
        assert_eq!(m.len(), 1011);
        assert_eq!(m.max(), m.highest_equivalent(5_000_000));
        assert_eq!(m.min(), 1);
        // Median of the merged set is still in the first actor's range.
        let p50 = m.value_at_quantile(0.5);
        assert!((500_000..=520_000).contains(&p50), "p50 {p50}");
        // The top 10 samples (b's) own everything above 99.1%.
        assert!(m.value_at_quantile(0.995) >= 4_990_000);
    }

    #[test]
    fn merge_of_nothing_is_empty() {
        let m = merge(std::iter::empty());
        assert!(m.is_empty());
    }

    #[test]
    fn report_json_renders() {
        let mut h = new_hist();
        record(&mut h, 250_000, 99);
        record(&mut h, 2_000_000, 1);
        let r = Report {
            workload: "produce".into(),
            params: json!({}),
            elapsed_s: 2.0,
            bytes: 200_000_000,
            records: 200_000,
            errors: 0,
            timeline: vec![
                Sample {
                    t: 1.0,
                    mb_per_s: 90.0,
                    records_per_s: 9e4,
                },
                Sample {
                    t: 2.0,
                    mb_per_s: 110.0,
                    records_per_s: 1.1e5,
                },
            ],
            hists: vec![("produce ack".into(), h)],
            broker_cpu_s: Some(1.0),
            ceiling: Some(("pipeline".into(), 200.0)),
            extra: vec![("transactions_per_s".into(), 12.5)],
        };
        assert_eq!(r.mb_per_s(), 100.0);
        assert_eq!(r.cpu_s_per_gb(), Some(5.0));
        let j = r.to_json();
        assert_eq!(j["ceiling"]["percent"], json!(50.0));
        assert_eq!(j["timeline"].as_array().unwrap().len(), 2);
        assert_eq!(j["latency"]["produce ack"]["count"], json!(100));
        assert_eq!(j["transactions_per_s"], json!(12.5));
    }

    #[test]
    fn curve_points_are_increasing_to_five_nines() {
        let c = curve_points();
        assert_eq!(c[0], 0.0);
        assert!(c.windows(2).all(|w| w[0] < w[1]));
        assert!((c.last().unwrap() - 0.99999).abs() < 1e-12);
    }
}
