//! Client quotas (KIP-13, KIP-124, KIP-219, KIP-546, KIP-599): the model
//! kept in the metadata image ([`model`]), Kafka's measures ([`rate`]),
//! and one shard's usage ([`ShardUsage`]): the rates of produce bytes,
//! fetch bytes and request time, and the controller mutation buckets,
//! each by Kafka's metric tags ([`model::SensorKey`]).
//!
//! The broker keeps one [`ShardUsage`], on shard 0, as Kafka keeps one
//! sensor per user and client id: a request with a quota is measured on
//! its connection's shard and recorded on shard 0 over the mesh, which
//! gives back the throttle time; a user's connections on any shards share
//! one rate (see `docs/decisions/client-quotas-across-shards.md` for why,
//! and the bound). Where the throttle time goes into a response and where
//! a connection mutes is `handlers::quota`.

pub mod model;
pub mod rate;

use std::collections::HashMap;

use model::SensorKey;
use rate::{SampledRate, TokenBucket, Windows};

/// Which rate a request is counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Measure {
    /// Produce request bytes (`producer_byte_rate`).
    Produce,
    /// Fetch response bytes (`consumer_byte_rate`).
    Fetch,
    /// Handler time, in percent of a second per second
    /// (`request_percentage`).
    Request,
}

impl Measure {
    /// The quota key limiting this measure.
    pub fn key(self) -> &'static str {
        match self {
            Measure::Produce => model::PRODUCER_BYTE_RATE,
            Measure::Fetch => model::CONSUMER_BYTE_RATE,
            Measure::Request => model::REQUEST_PERCENTAGE,
        }
    }
}

/// A controller mutation refused by a strict `controller_mutation_rate`
/// (KIP-599): THROTTLING_QUOTA_EXCEEDED (89), for the topic it was asked
/// for, with the time until the bucket is back at zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("The throttling quota has been exceeded.")]
pub struct MutationThrottled {
    /// Milliseconds until the quota admits mutations again.
    pub throttle_ms: u64,
}

/// Rates idle for this long are dropped (their samples would all be
/// forgotten by then).
const IDLE_SWEEP_MS: u64 = 60_000;

/// The most bytes one fetch may return under a byte-rate `limit` (bytes/s)
/// without being throttled whatever else was recorded: `limit` × (samples
/// − 1) windows (Kafka's `getMaxValueInQuotaWindow`, which caps a consumer
/// fetch's `max_bytes`).
pub fn max_in_window(windows: Windows, limit: f64) -> f64 {
    limit * f64::from(windows.samples.saturating_sub(1)) * (windows.window_ms as f64 / 1000.0)
}

/// The broker's quota usage (held by shard 0).
#[derive(Debug)]
pub struct ShardUsage {
    windows: Windows,
    mutation_windows: Windows,
    rates: HashMap<(Measure, SensorKey), SampledRate>,
    buckets: HashMap<SensorKey, TokenBucket>,
    last_sweep_ms: u64,
}

impl ShardUsage {
    /// The usage with the broker's windows (`quota.window.*`) and those of
    /// controller mutations (`controller.quota.window.*`).
    pub fn new(windows: Windows, mutation_windows: Windows) -> ShardUsage {
        ShardUsage {
            windows,
            mutation_windows,
            rates: HashMap::new(),
            buckets: HashMap::new(),
            last_sweep_ms: 0,
        }
    }

    /// Records `value` of `measure` for `sensor` at `now` against
    /// `limit`; gives the throttle time in ms (0 within the quota). Request time is bounded by one window, as Kafka's
    /// request quota is.
    pub fn record(
        &mut self,
        measure: Measure,
        sensor: &SensorKey,
        limit: f64,
        value: f64,
        now: u64,
    ) -> u64 {
        self.sweep(now);
        let bound = limit;
        let w = self.windows;
        let rate = self.rates.entry((measure, sensor.clone())).or_default();
        let t = rate.record_and_throttle(w, value, bound, now);
        match measure {
            Measure::Request => t.min(w.window_ms),
            Measure::Produce | Measure::Fetch => t,
        }
    }

    /// Takes back `value` recorded for `measure` (a throttled fetch whose
    /// data is not sent).
    pub fn unrecord(&mut self, measure: Measure, sensor: &SensorKey, value: f64, now: u64) {
        let w = self.windows;
        if let Some(rate) = self.rates.get_mut(&(measure, sensor.clone())) {
            rate.record(w, -value, now);
        }
    }

    /// The most bytes one fetch may return without being throttled
    /// whatever else was recorded (Kafka's `getMaxValueInQuotaWindow`:
    /// the limit × (samples − 1) windows).
    pub fn max_in_window(&self, limit: f64) -> f64 {
        max_in_window(self.windows, limit)
    }

    /// A controller mutation of `permits` partitions for `sensor` at
    /// `now` against `rate` per second: strict refuses it with the throttle
    /// time while the bucket is negative; permissive takes it and gives
    /// the throttle time (0 when none).
    pub fn mutate(
        &mut self,
        sensor: &SensorKey,
        rate: f64,
        permits: f64,
        strict: bool,
        now: u64,
    ) -> Result<u64, u64> {
        self.sweep(now);
        let w = self.mutation_windows;
        let b = self.buckets.entry(sensor.clone()).or_default();
        if strict {
            b.take_strict(w, rate, permits, now).map(|()| 0)
        } else {
            Ok(b.take_permissive(w, rate, permits, now))
        }
    }

    /// The throttle time of a mutation bucket at `now` (0 when not
    /// negative), for the answer of a request whose topics were refused.
    pub fn mutation_throttle(&mut self, sensor: &SensorKey, rate: f64, now: u64) -> u64 {
        let w = self.mutation_windows;
        match self.buckets.get_mut(sensor) {
            Some(b) => {
                let t = b.tokens(w, rate, now);
                if t < 0.0 {
                    (-t / rate * 1000.0).round() as u64
                } else {
                    0
                }
            }
            None => 0,
        }
    }

    /// How many rates and buckets are kept (for tests and metrics).
    pub fn tracked(&self) -> usize {
        self.rates.len() + self.buckets.len()
    }

    fn sweep(&mut self, now: u64) {
        if now.saturating_sub(self.last_sweep_ms) < IDLE_SWEEP_MS {
            return;
        }
        self.last_sweep_ms = now;
        let idle = |last: u64| now.saturating_sub(last) >= IDLE_SWEEP_MS;
        self.rates.retain(|_, r| !idle(r.last_event_ms()));
        // A bucket idle that long is full again: dropping it changes nothing.
        let longest = u64::from(self.mutation_windows.samples) * self.mutation_windows.window_ms;
        self.buckets
            .retain(|_, b| now.saturating_sub(b.last_ms()) < IDLE_SWEEP_MS.max(longest));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(u: &str) -> SensorKey {
        SensorKey {
            user: u.into(),
            client_id: String::new(),
        }
    }

    /// One user's rate does not touch another's.
    #[test]
    fn separate_users() {
        let mut u = ShardUsage::new(Windows::default(), Windows::default());
        let now = 1_000_000;
        // 5,000 over 10 s = 500/s: within 500/s, not throttled.
        assert_eq!(u.record(Measure::Produce, &key("a"), 500.0, 5000.0, now), 0);
        assert!(u.record(Measure::Produce, &key("a"), 500.0, 1000.0, now) > 0);
        assert_eq!(u.record(Measure::Produce, &key("b"), 500.0, 5000.0, now), 0);
        // Request time is throttled one window at most.
        assert_eq!(u.record(Measure::Request, &key("a"), 1.0, 1e6, now), 1000);
        assert_eq!(u.max_in_window(500.0), 5000.0);
        // Idle rates are dropped.
        u.record(Measure::Fetch, &key("c"), 1.0, 1.0, now + IDLE_SWEEP_MS + 1);
        assert_eq!(u.tracked(), 1);
    }

    #[test]
    fn strict_and_permissive_mutations() {
        let mut u = ShardUsage::new(Windows::default(), Windows::default());
        let now = 70_000;
        // A burst of 11 × 1 tokens.
        assert_eq!(u.mutate(&key("a"), 1.0, 20.0, true, now), Ok(0));
        assert_eq!(u.mutate(&key("a"), 1.0, 1.0, true, now), Err(9000));
        assert_eq!(u.mutation_throttle(&key("a"), 1.0, now), 9000);
        assert_eq!(u.mutate(&key("a"), 1.0, 1.0, false, now), Ok(10_000));
        assert_eq!(u.mutation_throttle(&key("b"), 1.0, now), 0);
    }
}
