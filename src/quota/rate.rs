//! The two measures of Kafka's quotas, with time passed in (ms), so they
//! are tested without a clock:
//!
//! * [`SampledRate`]: Kafka's `Rate` over a `SampledStat` — `samples`
//!   windows of `window_ms` each (plus one that overlaps the oldest edge),
//!   samples idle for `samples × window_ms` forgotten, the rate the sum
//!   over the retained samples divided by the time they span (at least
//!   `samples − 1` whole windows). A recording over the bound gives
//!   Kafka's throttle time: `(rate − bound) / bound × window span`.
//! * [`TokenBucket`]: Kafka's `TokenBucket` (KIP-599): refilled at the
//!   quota per second up to a burst of `samples × window` seconds' worth;
//!   a mutation is admitted while the bucket is not negative, and the
//!   throttle time is the time to refill it to zero.

/// The windows of a quota's rate (`quota.window.num`,
/// `quota.window.size.seconds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Windows {
    /// How many samples (Kafka's default 11).
    pub samples: u32,
    /// Each sample's length in ms (default 1000).
    pub window_ms: u64,
}

impl Default for Windows {
    fn default() -> Windows {
        Windows {
            samples: 11,
            window_ms: 1000,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    value: f64,
    start_ms: u64,
    last_event_ms: u64,
    events: u64,
}

impl Sample {
    fn new(now: u64) -> Sample {
        Sample {
            value: 0.0,
            start_ms: now,
            last_event_ms: now,
            events: 0,
        }
    }
}

/// A rate per second over sampled windows (Kafka's `Rate`).
#[derive(Debug, Clone)]
pub struct SampledRate {
    samples: Vec<Sample>,
    current: usize,
}

impl SampledRate {
    /// A rate with nothing recorded.
    pub fn new() -> SampledRate {
        SampledRate {
            samples: Vec::new(),
            current: 0,
        }
    }

    fn current(&mut self, now: u64) -> &mut Sample {
        if self.samples.is_empty() {
            self.samples.push(Sample::new(now));
        }
        &mut self.samples[self.current]
    }

    fn purge(&mut self, w: Windows, now: u64) {
        let expire = u64::from(w.samples) * w.window_ms;
        for s in &mut self.samples {
            if now.saturating_sub(s.last_event_ms) >= expire {
                *s = Sample::new(now);
            }
        }
    }

    /// Adds `value` at `now` (a negative value takes back what was
    /// recorded).
    pub fn record(&mut self, w: Windows, value: f64, now: u64) {
        let complete = {
            let s = self.current(now);
            now.saturating_sub(s.start_ms) >= w.window_ms
        };
        if complete {
            let max = w.samples as usize + 1;
            self.current = (self.current + 1) % max;
            if self.current >= self.samples.len() {
                self.samples.push(Sample::new(now));
            } else {
                self.samples[self.current] = Sample::new(now);
            }
        }
        let s = self.current(now);
        s.value += value;
        s.events += 1;
        s.last_event_ms = now;
    }

    /// The time the rate is taken over at `now`, in ms (Kafka's
    /// `Rate.windowSize`): from the oldest sample's start, at least
    /// `samples − 1` whole windows, at least 1 ms.
    pub fn window_span_ms(&mut self, w: Windows, now: u64) -> u64 {
        self.purge(w, now);
        let oldest = self.samples.iter().map(|s| s.start_ms).min().unwrap_or(now);
        let mut elapsed = now.saturating_sub(oldest);
        let full = elapsed / w.window_ms;
        let min_full = u64::from(w.samples.saturating_sub(1));
        if full < min_full {
            elapsed += (min_full - full) * w.window_ms;
        }
        elapsed.max(1)
    }

    /// The rate per second at `now`.
    pub fn rate(&mut self, w: Windows, now: u64) -> f64 {
        let span = self.window_span_ms(w, now);
        let total: f64 = self.samples.iter().map(|s| s.value).sum();
        total / (span as f64 / 1000.0)
    }

    /// Records `value` at `now` and gives the throttle time in ms when the
    /// rate is then over `bound` (Kafka's `QuotaUtils.throttleTime`), 0
    /// otherwise.
    pub fn record_and_throttle(&mut self, w: Windows, value: f64, bound: f64, now: u64) -> u64 {
        self.record(w, value, now);
        self.throttle(w, bound, now)
    }

    /// The throttle time at `now` for `bound` (0 within it).
    pub fn throttle(&mut self, w: Windows, bound: f64, now: u64) -> u64 {
        let span = self.window_span_ms(w, now);
        let total: f64 = self.samples.iter().map(|s| s.value).sum();
        let rate = total / (span as f64 / 1000.0);
        if rate <= bound || bound <= 0.0 {
            return 0;
        }
        ((rate - bound) / bound * span as f64).round() as u64
    }

    /// When the last value was recorded (ms), for forgetting idle rates.
    pub fn last_event_ms(&self) -> u64 {
        self.samples
            .iter()
            .map(|s| s.last_event_ms)
            .max()
            .unwrap_or(0)
    }
}

impl Default for SampledRate {
    fn default() -> SampledRate {
        SampledRate::new()
    }
}

/// Kafka's `TokenBucket` for controller mutations (KIP-599).
#[derive(Debug, Clone)]
pub struct TokenBucket {
    tokens: f64,
    last_ms: u64,
}

impl TokenBucket {
    /// A bucket as Kafka creates one: it fills to its burst at the first
    /// use.
    pub fn new() -> TokenBucket {
        TokenBucket {
            tokens: 0.0,
            last_ms: 0,
        }
    }

    fn refill(&mut self, w: Windows, quota: f64, now: u64) {
        let burst = f64::from(w.samples) * (w.window_ms as f64 / 1000.0) * quota;
        let elapsed = now.saturating_sub(self.last_ms) as f64 / 1000.0;
        self.tokens = (self.tokens + quota * elapsed).min(burst);
        self.last_ms = now;
    }

    /// The tokens at `now` for `quota` per second.
    pub fn tokens(&mut self, w: Windows, quota: f64, now: u64) -> f64 {
        self.refill(w, quota, now);
        self.tokens
    }

    /// A strict mutation of `permits` at `now` (CreateTopics v6+,
    /// DeleteTopics v5+, CreatePartitions v3+): refused with the throttle
    /// time in ms while the bucket is negative, else taken (the bucket may
    /// go below zero).
    pub fn take_strict(
        &mut self,
        w: Windows,
        quota: f64,
        permits: f64,
        now: u64,
    ) -> Result<(), u64> {
        let t = self.tokens(w, quota, now);
        if t < 0.0 {
            return Err(Self::throttle_of(t, quota));
        }
        self.tokens = t - permits;
        Ok(())
    }

    /// A permissive mutation (older versions): always taken; gives the
    /// throttle time in ms when the bucket is then negative.
    pub fn take_permissive(&mut self, w: Windows, quota: f64, permits: f64, now: u64) -> u64 {
        let t = self.tokens(w, quota, now) - permits;
        self.tokens = t;
        if t < 0.0 {
            Self::throttle_of(t, quota)
        } else {
            0
        }
    }

    /// The time until the bucket is back at zero, as Kafka computes it.
    fn throttle_of(tokens: f64, quota: f64) -> u64 {
        (-tokens / quota * 1000.0).round() as u64
    }

    /// When the bucket was last used (ms).
    pub fn last_ms(&self) -> u64 {
        self.last_ms
    }
}

impl Default for TokenBucket {
    fn default() -> TokenBucket {
        TokenBucket::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Windows = Windows {
        samples: 11,
        window_ms: 1000,
    };

    /// A fresh rate is taken over 10 whole windows, so a first burst is
    /// throttled by Kafka's formula.
    #[test]
    fn first_burst_is_taken_over_ten_windows() {
        let mut r = SampledRate::new();
        let start = 1_000_000;
        assert_eq!(r.record_and_throttle(W, 500.0, 100.0, start), 0);
        assert!((r.rate(W, start) - 50.0).abs() < 1e-9);
        // 2,000 more: 2,500 over 10 s = 250/s against 100/s: (250-100)/100 × 10 s.
        assert_eq!(r.record_and_throttle(W, 2000.0, 100.0, start), 15_000);
    }

    /// Recording at the bound for a long time converges to it; samples
    /// older than the window are forgotten.
    #[test]
    fn steady_rate_and_forgetting() {
        let mut r = SampledRate::new();
        let mut now = 5_000;
        for _ in 0..100 {
            r.record(W, 100.0, now);
            now += 100; // 1,000 per second
        }
        let rate = r.rate(W, now);
        assert!((rate - 1000.0).abs() < 100.0, "{rate}");
        now += 11_000;
        assert_eq!(r.rate(W, now), 0.0);
        // A negative record takes a value back.
        r.record(W, 300.0, now);
        r.record(W, -300.0, now);
        assert_eq!(r.rate(W, now), 0.0);
    }

    /// A client that waits out each throttle stays at the bound over a
    /// long run (what muting relies on).
    #[test]
    fn waiting_out_throttles_holds_the_bound() {
        let mut r = SampledRate::new();
        let bound = 10_000.0;
        let start = 100_000u64;
        let mut now = start;
        let mut sent = 0.0;
        while now < start + 60_000 {
            let t = r.record_and_throttle(W, 4096.0, bound, now);
            sent += 4096.0;
            now += 1 + t; // the next request after the throttle
        }
        let rate = sent / ((now - start) as f64 / 1000.0);
        assert!((rate - bound).abs() / bound < 0.05, "{rate}");
    }

    #[test]
    fn token_bucket_as_kafka() {
        let mut b = TokenBucket::new();
        let now = 50_000;
        // Full at first use: burst 11 × 2 = 22 tokens at 2 per second.
        assert_eq!(b.tokens(W, 2.0, now), 22.0);
        assert_eq!(b.take_strict(W, 2.0, 30.0, now), Ok(()));
        // -8 tokens: refused for 4 s.
        assert_eq!(b.take_strict(W, 2.0, 1.0, now), Err(4000));
        assert_eq!(b.take_strict(W, 2.0, 1.0, now + 4000), Ok(()));
        // Permissive: taken, with the time to refill.
        assert_eq!(b.take_permissive(W, 2.0, 3.0, now + 4000), 2000);
    }
}
