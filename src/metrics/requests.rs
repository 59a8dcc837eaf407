//! The scrape of Kafka's `RequestMetrics`: requests by API and version,
//! the request-time histograms (total and its five stages) and the error
//! codes answered, summed over the shards' [`ShardMetrics`](super::shard::ShardMetrics)
//! and encoded under the JMX exporter's names (docs/metrics.md).

use std::collections::BTreeMap;
use std::fmt::Error;
use std::sync::atomic::Ordering::Relaxed;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::collect::{counters, request_name, Labels};
use super::errors;
use super::shard::{TimeHistogram, COUNTED_VERSIONS, STAGES, TIME_BUCKETS_MS};
use crate::stall::ShardStallStats;

/// A histogram summed over shards: counts per bucket (not cumulative), the
/// count over the last bound and the sum in µs.
#[derive(Debug, Clone, Default)]
struct Summed {
    buckets: [u64; TIME_BUCKETS_MS.len()],
    over: u64,
    sum_us: u64,
}

impl Summed {
    /// Adds one shard's histogram.
    fn add(&mut self, h: &TimeHistogram) {
        for (slot, b) in self.buckets.iter_mut().zip(&h.buckets) {
            *slot += b.load(Relaxed);
        }
        self.over += h.over.load(Relaxed);
        self.sum_us += h.sum_us.load(Relaxed);
    }

    /// Observations.
    fn count(&self) -> u64 {
        self.buckets.iter().sum::<u64>() + self.over
    }
}

/// The Fetch kinds Kafka also counts each Fetch under, by kind index.
const FETCH_KINDS: [&str; 2] = ["FetchConsumer", "FetchFollower"];

/// Takes every shard's stats; encodes
/// `kafka_network_requestmetrics_requests_total{request,version}`, the
/// `totaltimems` histogram and the five stage histograms
/// (`requestqueuetimems`, `localtimems`, `remotetimems`,
/// `responsequeuetimems`, `responsesendtimems`) by `request`, and
/// `kafka_network_requestmetrics_errors_total{request,error}`.
pub fn request_metrics(
    stats: &[ShardStallStats],
    enc: &mut DescriptorEncoder<'_>,
) -> Result<(), Error> {
    let keys = stats.first().map_or(0, |s| s.broker.requests.len());
    let mut counts: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    let mut total: Vec<Summed> = vec![Summed::default(); keys];
    let mut stages: Vec<Vec<Summed>> = vec![vec![Summed::default(); keys]; STAGES.len()];
    let mut kind_versions = [[0u64; COUNTED_VERSIONS]; FETCH_KINDS.len()];
    let mut kind_total: Vec<Summed> = vec![Summed::default(); FETCH_KINDS.len()];
    let mut kind_stages: Vec<Vec<Summed>> =
        vec![vec![Summed::default(); STAGES.len()]; FETCH_KINDS.len()];
    let mut errors_by: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    for s in stats {
        let m = &s.broker;
        for (key, versions) in m.requests.iter().enumerate() {
            for (v, n) in versions.iter().enumerate() {
                let n = n.load(Relaxed);
                if n > 0 {
                    *counts.entry((key, v)).or_default() += n;
                }
            }
        }
        for (t, h) in total.iter_mut().zip(m.total_time.iter()) {
            t.add(h);
        }
        for (summed, hs) in stages.iter_mut().zip(&m.stage_time) {
            for (t, h) in summed.iter_mut().zip(hs.iter()) {
                t.add(h);
            }
        }
        for (kind, versions) in kind_versions.iter_mut().enumerate() {
            if let Some(k) = m.fetch_kinds.get(kind) {
                for (slot, n) in versions.iter_mut().zip(k) {
                    *slot += n.load(Relaxed);
                }
            }
        }
        for (t, h) in kind_total.iter_mut().zip(&m.fetch_kind_time) {
            t.add(h);
        }
        for (summed, hs) in kind_stages.iter_mut().zip(&m.fetch_kind_stage_time) {
            for (t, h) in summed.iter_mut().zip(hs) {
                t.add(h);
            }
        }
        for (key, by_code) in m.errors.iter().enumerate() {
            for (slot, n) in by_code.iter().enumerate() {
                let n = n.load(Relaxed);
                if n > 0 {
                    *errors_by.entry((key, slot)).or_default() += n;
                }
            }
        }
    }
    let mut series: Vec<(Labels, u64)> = counts
        .iter()
        .map(|((key, v), n)| {
            (
                vec![("request", request_name(*key)), ("version", v.to_string())],
                *n,
            )
        })
        .collect();
    // Kafka also counts each Fetch as FetchConsumer or FetchFollower.
    for (name, versions) in FETCH_KINDS.iter().zip(&kind_versions) {
        for (v, n) in versions.iter().enumerate().filter(|(_, n)| **n > 0) {
            series.push((
                vec![("request", (*name).to_string()), ("version", v.to_string())],
                *n,
            ));
        }
    }
    counters(
        enc,
        "kafka_network_requestmetrics_requests",
        "Requests served, by API and version.",
        &series,
    )?;
    let named = |by_key: &[Summed], by_kind: Vec<&Summed>| -> Vec<(String, Summed)> {
        by_key
            .iter()
            .enumerate()
            .map(|(key, h)| (request_name(key), h.clone()))
            .chain(
                FETCH_KINDS
                    .iter()
                    .zip(by_kind)
                    .map(|(n, h)| ((*n).to_string(), h.clone())),
            )
            .collect()
    };
    histograms(
        enc,
        "kafka_network_requestmetrics_totaltimems",
        "Time from the request's frame read whole to its response sent, in ms, by API (histogram).",
        &named(&total, kind_total.iter().collect()),
    )?;
    let helps = [
        "Time from the request's frame read whole to its handler's start, in ms, by API (histogram).",
        "Time the handler worked on the request, waits on others not counted, in ms, by API (histogram).",
        "Time the handler waited on others (followers for acks=all, data for a Fetch long poll), in ms, by API (histogram).",
        "Time from the response ready to its send's start, in ms, by API (histogram).",
        "Time from the response's send start to its last byte written to the socket, in ms, by API (histogram).",
    ];
    for (i, (stage, help)) in STAGES.iter().zip(helps).enumerate() {
        let by_kind = kind_stages.iter().filter_map(|k| k.get(i)).collect();
        if let Some(by_key) = stages.get(i) {
            histograms(
                enc,
                &format!("kafka_network_requestmetrics_{stage}"),
                help,
                &named(by_key, by_kind),
            )?;
        }
    }
    let errors: Vec<(Labels, u64)> = errors_by
        .into_iter()
        .map(|((key, slot), n)| {
            (
                vec![
                    ("request", request_name(key)),
                    ("error", errors::name(slot).to_string()),
                ],
                n,
            )
        })
        .collect();
    counters(
        enc,
        "kafka_network_requestmetrics_errors",
        "Error codes answered (NONE included), one per code in a response, by API and Kafka error name.",
        &errors,
    )
}

/// Encodes one histogram family with the bounds of [`TIME_BUCKETS_MS`],
/// one series per `(request, histogram)` that observed anything.
fn histograms(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    named: &[(String, Summed)],
) -> Result<(), Error> {
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Histogram)?;
    for (request, h) in named {
        let count = h.count();
        if count == 0 {
            continue;
        }
        let mut bounds: Vec<(f64, u64)> = TIME_BUCKETS_MS
            .iter()
            .zip(h.buckets)
            .map(|(b, n)| (*b, n))
            .collect();
        // The encoder writes `le="+Inf"` for an infinite bound only.
        bounds.push((f64::INFINITY, h.over));
        let labels: Labels = vec![("request", request.clone())];
        let mut fam = m.encode_family(&labels)?;
        fam.encode_histogram::<Labels>(h.sum_us as f64 / 1e3, count, &bounds, None)?;
    }
    Ok(())
}
