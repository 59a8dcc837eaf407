//! The share-group workload (`fjord-perf share`, KIP-932).
//!
//! Set-up, before the clock: the topic (one partition by default) is
//! created if missing, the `share.version` feature is finalized at level 1
//! where it is below (a new Fjord cluster; Kafka 4.4 finalizes it on its
//! own) with UpdateFeatures, and each group named by `--group` gets the
//! group config `share.auto.offset.reset` of `--offset-reset` (default
//! earliest: it reads records produced before it joined) with
//! IncrementalAlterConfigs on the GROUP resource.
//! `--setup-only` stops there (scripts/bench-share uses it for the groups
//! of Kafka's own share consumer tool too).
//!
//! Then `--consumers` threads, each one share member on its own connection
//! (ShareGroupHeartbeat v1 with a client-made member id), join the group and
//! wait until each is assigned the partition. The clock starts when all
//! have joined. Each member loops: ShareFetch (no acknowledgements
//! piggybacked; up to `--max-records` records, long-polling up to
//! `--max-wait-ms`), then one explicit ShareAcknowledge that accepts every
//! record it acquired. The acknowledgement latency is the round trip of
//! that ShareAcknowledge, from the write of the request to the read of its
//! answer, one sample per request (not per record). Members heartbeat at the
//! interval the group answers. The clock stops when the members together
//! have accepted `--records` records.
//!
//! Correctness: every offset below `--records` must have been accepted
//! exactly once (a count per offset), else the run fails; so does any error
//! code in an answer, and a run that does not finish within `--timeout`.
//! A single broker is assumed (the bootstrap serves the group and the
//! partition).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use hdrhistogram::Histogram;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::share_acknowledge_request::{
    AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch,
};
use kafka_protocol::messages::share_fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::update_features_request::FeatureUpdateKey;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, FindCoordinatorRequest, IncrementalAlterConfigsRequest,
    MetadataRequest, ShareAcknowledgeRequest, ShareFetchRequest, ShareFetchResponse,
    ShareGroupHeartbeatRequest, UpdateFeaturesRequest,
};
use kafka_protocol::protocol::StrBytes;
use serde_json::json;
use uuid::Uuid;

use crate::parse_cores;
use crate::stats::{fmt_ns, merge, new_hist, record};
use crate::wire::{create_topic, topic_name, Conn, Res, Versions, CLIENT_ID};
use crate::workloads::pin;

/// AcknowledgeType ACCEPT (KIP-932): the record is done.
const ACCEPT: i8 = 1;
/// The share session epoch that closes a session (KIP-932).
const FINAL_EPOCH: i32 = -1;
/// The member epoch of a ShareGroupHeartbeat that leaves the group.
const LEAVE_EPOCH: i32 = -1;
/// IncrementalAlterConfigs resource type of a group (KIP-848).
const GROUP_RESOURCE: i8 = 32;
/// IncrementalAlterConfigs operation SET.
const SET: i8 = 0;

#[derive(Args, Clone)]
pub struct ShareArgs {
    /// Broker address host:port (a single broker).
    #[arg(long, short = 'b', default_value = "127.0.0.1:9092")]
    pub bootstrap: String,
    /// The topic the members read (created if missing).
    #[arg(long, default_value = "fjord-perf-share")]
    pub topic: String,
    /// Partitions of the topic when it is created.
    #[arg(long, default_value_t = 1)]
    pub partitions: i32,
    /// The partition the members read.
    #[arg(long, default_value_t = 0)]
    pub partition: i32,
    /// Share group id; with --setup-only a comma-separated list.
    #[arg(long, default_value = "fjord-perf-share")]
    pub group: String,
    /// Only create the topic, finalize share.version and set the groups'
    /// share.auto.offset.reset; no members.
    #[arg(long)]
    pub setup_only: bool,
    /// The group config share.auto.offset.reset set on every --group
    /// (earliest: read the records produced before the group joined).
    #[arg(long, default_value = "earliest")]
    pub offset_reset: String,
    /// Instead of measuring: join the group as one new member and fail if
    /// any record is still there to acquire (after another client read the
    /// partition: every record it got was acknowledged, and none is left).
    #[arg(long)]
    pub check_drained: bool,
    /// Share members (threads, one connection each).
    #[arg(long, default_value_t = 1)]
    pub consumers: usize,
    /// Records in the partition (offsets 0..N), every one to be accepted once.
    #[arg(long, default_value_t = 0)]
    pub records: u64,
    /// Value bytes per record (MB/s = accepted records × this / 10^6 / s).
    #[arg(long, default_value_t = 1024)]
    pub record_size: u64,
    /// ShareFetch max_records (and batch_size): the Java client's
    /// max.poll.records default is 500.
    #[arg(long, default_value_t = 500)]
    pub max_records: i32,
    /// ShareFetch max_wait_ms.
    #[arg(long, default_value_t = 100)]
    pub max_wait_ms: i32,
    /// ShareFetch max_bytes (and partition_max_bytes).
    #[arg(long, default_value_t = 1_048_576)]
    pub max_bytes: i32,
    /// Seconds the whole run may take (join included) before it fails.
    #[arg(long, default_value_t = 120.0)]
    pub timeout: f64,
    /// Cores for client threads: "1", "1,2" or "1-3".
    #[arg(long, default_value = "1")]
    pub client_cores: String,
    /// Write the result as JSON here.
    #[arg(long)]
    pub json: Option<String>,
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// What one member did.
struct MemberOut {
    hist: Histogram<u64>,
    accepted: u64,
    share_fetches: u64,
    acks: u64,
}

/// State the members share.
struct Shared {
    /// Acceptances per offset below `records`.
    counts: Vec<AtomicU8>,
    /// Offsets acquired at or above `records` (should stay 0).
    beyond: AtomicU64,
    accepted: AtomicU64,
    done: AtomicBool,
    end: Mutex<Option<Instant>>,
}

/// Runs the workload: set-up, then (unless --setup-only) the members.
pub fn run(a: &ShareArgs) -> Res<()> {
    let mut conn = Conn::connect(&a.bootstrap)?;
    let versions = Versions::fetch(&mut conn)?;
    create_topic(&mut conn, &versions, &a.topic, a.partitions, 1, &[])?;
    enable_share(&mut conn, &versions)?;
    let groups: Vec<&str> = a.group.split(',').filter(|g| !g.is_empty()).collect();
    for g in &groups {
        set_offset_reset(&mut conn, &versions, g, &a.offset_reset)?;
    }
    if a.setup_only {
        return Ok(());
    }
    let [group] = groups[..] else {
        return Err("the members need exactly one --group".into());
    };
    if a.check_drained {
        let id = topic_id(&mut conn, &versions, &a.topic)?;
        return check_drained(a, group, id);
    }
    if a.records == 0 {
        return Err("--records must be the number of records in the partition".into());
    }
    let topic_id = topic_id(&mut conn, &versions, &a.topic)?;
    let cores = parse_cores(&a.client_cores)?;
    let n = a.consumers.max(1);
    let shared = Arc::new(Shared {
        counts: (0..a.records).map(|_| AtomicU8::new(0)).collect(),
        beyond: AtomicU64::new(0),
        accepted: AtomicU64::new(0),
        done: AtomicBool::new(false),
        end: Mutex::new(None),
    });
    let deadline = Instant::now() + Duration::from_secs_f64(a.timeout);
    let barrier = Arc::new(Barrier::new(n + 1));
    let joined_at = Instant::now();
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let (a, shared, barrier, cores) =
                (a.clone(), shared.clone(), barrier.clone(), cores.clone());
            let group = group.to_string();
            std::thread::spawn(move || {
                pin(&cores, i);
                let r = member(&a, &group, topic_id, &shared, &barrier, deadline);
                if r.is_err() {
                    shared.done.store(true, Ordering::Release);
                }
                r
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    let join_s = start.duration_since(joined_at).as_secs_f64();
    let mut outs = Vec::new();
    let mut errors = Vec::new();
    for (i, h) in handles.into_iter().enumerate() {
        match h.join() {
            Ok(Ok(o)) => outs.push(o),
            Ok(Err(e)) => errors.push(format!("member {i}: {e}")),
            Err(_) => errors.push(format!("member {i}: thread panicked")),
        }
    }
    if !errors.is_empty() {
        return Err(errors.join("; ").into());
    }
    let end = shared
        .end
        .lock()
        .map_err(|_| "poisoned")?
        .unwrap_or_else(Instant::now);
    let elapsed = end.duration_since(start).as_secs_f64().max(1e-9);
    let (missing, twice) = check_counts(&shared.counts);
    let beyond = shared.beyond.load(Ordering::Relaxed);
    let accepted: u64 = outs.iter().map(|o| o.accepted).sum();
    let hist = merge(outs.iter().map(|o| &o.hist));
    let acks: u64 = outs.iter().map(|o| o.acks).sum();
    let fetches: u64 = outs.iter().map(|o| o.share_fetches).sum();
    let records_s = a.records as f64 / elapsed;
    let mb_s = records_s * a.record_size as f64 / 1e6;
    let q = |p: f64| hist.value_at_quantile(p);
    println!(
        "share: {n} member(s), {} records in {elapsed:.3} s (join {join_s:.3} s): \
         {records_s:.0} records/s, {mb_s:.1} MB/s",
        a.records
    );
    println!(
        "  ShareFetch {fetches}, ShareAcknowledge {acks} ({:.1} records each); \
         ack latency p50 {} p99 {} p99.9 {} max {}",
        accepted as f64 / acks.max(1) as f64,
        fmt_ns(q(0.5)),
        fmt_ns(q(0.99)),
        fmt_ns(q(0.999)),
        fmt_ns(hist.max())
    );
    println!(
        "  accepted {accepted}: offsets never accepted {missing}, accepted more than once {twice}, \
         beyond the last offset {beyond}"
    );
    if let Some(p) = &a.json {
        let j = json!({
            "workload": "share", "topic": a.topic, "partition": a.partition, "group": group,
            "consumers": n, "records": a.records, "record_size": a.record_size,
            "max_records": a.max_records, "max_wait_ms": a.max_wait_ms,
            "join_s": join_s, "elapsed_s": elapsed, "records_per_s": records_s, "mb_per_s": mb_s,
            "share_fetches": fetches, "share_acknowledges": acks, "accepted": accepted,
            "missing": missing, "accepted_twice": twice, "beyond": beyond,
            "ack_latency_us": {
                "p50": q(0.5) as f64 / 1e3, "p99": q(0.99) as f64 / 1e3,
                "p99.9": q(0.999) as f64 / 1e3, "max": hist.max() as f64 / 1e3,
                "count": hist.len(),
            },
        });
        std::fs::write(p, serde_json::to_string_pretty(&j)?)?;
    }
    if beyond != 0 {
        return Err(format!(
            "{beyond} record(s) acquired at offsets from {} on: the partition holds more than \
             --records",
            a.records
        )
        .into());
    }
    if missing != 0 || twice != 0 || accepted != a.records {
        return Err(format!(
            "not every record accepted exactly once: {missing} never, {twice} more than once, \
             {accepted} acceptances for {} records",
            a.records
        )
        .into());
    }
    Ok(())
}

/// Offsets never accepted and offsets accepted more than once.
pub fn check_counts(counts: &[AtomicU8]) -> (u64, u64) {
    counts
        .iter()
        .fold((0, 0), |(m, t), c| match c.load(Ordering::Relaxed) {
            0 => (m + 1, t),
            1 => (m, t),
            _ => (m, t + 1),
        })
}

/// Counts the acceptance of `first..=last`; gives how many were below the
/// record count.
fn count_range(shared: &Shared, first: i64, last: i64) -> u64 {
    let mut n = 0;
    for off in first.max(0)..=last {
        match shared.counts.get(off as usize) {
            Some(c) => {
                c.fetch_add(1, Ordering::Relaxed);
                n += 1;
            }
            None => {
                shared.beyond.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    n
}

/// One share member: join, then fetch and acknowledge until the group has
/// accepted every record.
fn member(
    a: &ShareArgs,
    group: &str,
    topic_id: Uuid,
    shared: &Shared,
    barrier: &Barrier,
    deadline: Instant,
) -> Res<MemberOut> {
    let member_id = Uuid::new_v4().to_string();
    let joined = (|| -> Res<_> {
        let mut c = Conn::connect(&a.bootstrap)?;
        let versions = Versions::fetch(&mut c)?;
        let hb_v = versions.pick(ApiKey::ShareGroupHeartbeat, 1, 1)?;
        let fetch_v = versions.pick(ApiKey::ShareFetch, 1, 1)?;
        let ack_v = versions.pick(ApiKey::ShareAcknowledge, 1, 1)?;
        let (epoch, interval) = join(&mut c, &versions, hb_v, group, &member_id, a, deadline)?;
        Ok((c, [hb_v, fetch_v, ack_v], epoch, interval))
    })();
    // Wait for the others even when this one failed, so the barrier opens.
    barrier.wait();
    let (mut c, [hb_v, fetch_v, ack_v], mut member_epoch, interval) = joined?;
    let mut next_hb = Instant::now() + interval;
    let mut out = MemberOut {
        hist: new_hist(),
        accepted: 0,
        share_fetches: 0,
        acks: 0,
    };
    let mut epoch = 0;
    while !shared.done.load(Ordering::Acquire) {
        if Instant::now() > deadline {
            return Err(format!(
                "timeout: the group accepted {} of {} records",
                shared.accepted.load(Ordering::Relaxed),
                a.records
            )
            .into());
        }
        if Instant::now() >= next_hb {
            let r = c.call(&heartbeat(group, &member_id, member_epoch, None), hb_v)?;
            if r.error_code != 0 {
                return Err(format!("ShareGroupHeartbeat: error {}", r.error_code).into());
            }
            member_epoch = r.member_epoch;
            next_hb = Instant::now() + Duration::from_millis(r.heartbeat_interval_ms.max(1) as u64);
        }
        let r = c.call(&fetch_req(a, group, &member_id, epoch, topic_id), fetch_v)?;
        epoch += 1;
        out.share_fetches += 1;
        let runs = acquired(&r, topic_id, a.partition)?;
        if runs.is_empty() {
            continue;
        }
        let req = ack_req(group, &member_id, epoch, topic_id, a.partition, &runs);
        let t0 = Instant::now();
        let r = c.call(&req, ack_v)?;
        record(&mut out.hist, t0.elapsed().as_nanos() as u64, 1);
        epoch += 1;
        out.acks += 1;
        if r.error_code != 0 {
            return Err(format!("ShareAcknowledge: error {}", r.error_code).into());
        }
        for p in r.responses.iter().flat_map(|t| t.partitions.iter()) {
            if p.error_code != 0 {
                return Err(format!("ShareAcknowledge partition: error {}", p.error_code).into());
            }
        }
        let n: u64 = runs.iter().map(|&(f, l)| count_range(shared, f, l)).sum();
        out.accepted += n;
        let total = shared.accepted.fetch_add(n, Ordering::AcqRel) + n;
        if total >= a.records && !shared.done.swap(true, Ordering::AcqRel) {
            *shared.end.lock().map_err(|_| "poisoned")? = Some(Instant::now());
        }
    }
    // Close the share session and leave; the run is measured already.
    let close = ShareAcknowledgeRequest::default()
        .with_group_id(Some(s(group).into()))
        .with_member_id(Some(s(&member_id)))
        .with_share_session_epoch(FINAL_EPOCH);
    let _ = c.call(&close, ack_v);
    let _ = c.call(&heartbeat(group, &member_id, LEAVE_EPOCH, None), hb_v);
    Ok(out)
}

/// `--check-drained`: three ShareFetches (each long-polling up to
/// `--max-wait-ms`; a record available is answered at once) must acquire
/// nothing. What they acquire is released when the session closes.
fn check_drained(a: &ShareArgs, group: &str, topic_id: Uuid) -> Res<()> {
    let deadline = Instant::now() + Duration::from_secs_f64(a.timeout);
    let mut c = Conn::connect(&a.bootstrap)?;
    let versions = Versions::fetch(&mut c)?;
    let hb_v = versions.pick(ApiKey::ShareGroupHeartbeat, 1, 1)?;
    let fetch_v = versions.pick(ApiKey::ShareFetch, 1, 1)?;
    let member_id = Uuid::new_v4().to_string();
    join(&mut c, &versions, hb_v, group, &member_id, a, deadline)?;
    let mut left = Vec::new();
    for epoch in 0..3 {
        let r = c.call(&fetch_req(a, group, &member_id, epoch, topic_id), fetch_v)?;
        left.extend(acquired(&r, topic_id, a.partition)?);
    }
    let _ = c.call(&heartbeat(group, &member_id, LEAVE_EPOCH, None), hb_v);
    if left.is_empty() {
        println!(
            "share: group {group} has nothing left to deliver on {}-{}",
            a.topic, a.partition
        );
        Ok(())
    } else {
        let n: i64 = left.iter().map(|(f, l)| l - f + 1).sum();
        Err(format!("group {group}: {n} record(s) still to deliver: {left:?}").into())
    }
}

/// Joins until the member is assigned `a.partition`; gives its epoch and
/// heartbeat interval.
fn join(
    c: &mut Conn,
    versions: &Versions,
    hb_v: i16,
    group: &str,
    member_id: &str,
    a: &ShareArgs,
    deadline: Instant,
) -> Res<(i32, Duration)> {
    // Kafka creates its internal topics on the first FindCoordinator.
    let fc_v = versions.pick(ApiKey::FindCoordinator, 4, 4)?;
    let topics = [a.topic.as_str()];
    let mut epoch = 0;
    loop {
        let f = c.call(
            &FindCoordinatorRequest::default()
                .with_key_type(0)
                .with_coordinator_keys(vec![s(group)]),
            fc_v,
        )?;
        if f.coordinators.iter().all(|x| x.error_code == 0) {
            let subscribe = (epoch == 0).then_some(&topics[..]);
            let r = c.call(&heartbeat(group, member_id, epoch, subscribe), hb_v)?;
            if r.error_code == 0 {
                epoch = r.member_epoch;
                let assigned = r.assignment.as_ref().is_some_and(|x| {
                    x.topic_partitions
                        .iter()
                        .any(|t| t.partitions.contains(&a.partition))
                });
                if assigned {
                    let ms = r.heartbeat_interval_ms.max(1) as u64;
                    return Ok((epoch, Duration::from_millis(ms)));
                }
            }
        }
        if Instant::now() > deadline {
            return Err(format!("{group}: not assigned {}-{}", a.topic, a.partition).into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn heartbeat(
    group: &str,
    member_id: &str,
    epoch: i32,
    topics: Option<&[&str]>,
) -> ShareGroupHeartbeatRequest {
    ShareGroupHeartbeatRequest::default()
        .with_group_id(s(group).into())
        .with_member_id(s(member_id))
        .with_member_epoch(epoch)
        .with_subscribed_topic_names(topics.map(|t| t.iter().map(|n| topic_name(n)).collect()))
}

fn fetch_req(
    a: &ShareArgs,
    group: &str,
    member_id: &str,
    epoch: i32,
    topic_id: Uuid,
) -> ShareFetchRequest {
    ShareFetchRequest::default()
        .with_group_id(Some(s(group).into()))
        .with_member_id(Some(s(member_id)))
        .with_share_session_epoch(epoch)
        .with_max_wait_ms(a.max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(a.max_bytes)
        .with_max_records(a.max_records)
        .with_batch_size(a.max_records)
        .with_topics(vec![FetchTopic::default()
            .with_topic_id(topic_id)
            .with_partitions(vec![FetchPartition::default()
                .with_partition_index(a.partition)
                .with_partition_max_bytes(a.max_bytes)])])
}

/// ACCEPT for every acquired run.
fn ack_req(
    group: &str,
    member_id: &str,
    epoch: i32,
    topic_id: Uuid,
    partition: i32,
    runs: &[(i64, i64)],
) -> ShareAcknowledgeRequest {
    let batches = runs
        .iter()
        .map(|&(f, l)| {
            AcknowledgementBatch::default()
                .with_first_offset(f)
                .with_last_offset(l)
                .with_acknowledge_types(vec![ACCEPT])
        })
        .collect();
    ShareAcknowledgeRequest::default()
        .with_group_id(Some(s(group).into()))
        .with_member_id(Some(s(member_id)))
        .with_share_session_epoch(epoch)
        .with_topics(vec![AcknowledgeTopic::default()
            .with_topic_id(topic_id)
            .with_partitions(vec![AcknowledgePartition::default()
                .with_partition_index(partition)
                .with_acknowledgement_batches(batches)])])
}

/// The acquired runs (first, last offset) of the partition; an error code
/// anywhere fails.
fn acquired(r: &ShareFetchResponse, topic_id: Uuid, partition: i32) -> Res<Vec<(i64, i64)>> {
    if r.error_code != 0 {
        return Err(format!("ShareFetch: error {}", r.error_code).into());
    }
    let mut out = Vec::new();
    for t in r.responses.iter().filter(|t| t.topic_id == topic_id) {
        for p in t
            .partitions
            .iter()
            .filter(|p| p.partition_index == partition)
        {
            if p.error_code != 0 {
                return Err(format!("ShareFetch partition: error {}", p.error_code).into());
            }
            out.extend(
                p.acquired_records
                    .iter()
                    .map(|x| (x.first_offset, x.last_offset)),
            );
        }
    }
    Ok(out)
}

/// The topic's id (Metadata v10 and later name it).
fn topic_id(c: &mut Conn, versions: &Versions, topic: &str) -> Res<Uuid> {
    let v = versions.pick(ApiKey::Metadata, 12, 10)?;
    let req = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default().with_name(Some(topic_name(topic)))
    ]));
    let r = c.call(&req, v)?;
    r.topics
        .iter()
        .find(|t| t.error_code == 0 && !t.topic_id.is_nil())
        .map(|t| t.topic_id)
        .ok_or_else(|| format!("Metadata names no id for {topic}").into())
}

/// Finalizes share.version 1 where it is below 1 (a new Fjord cluster).
fn enable_share(c: &mut Conn, versions: &Versions) -> Res<()> {
    let req = ApiVersionsRequest::default()
        .with_client_software_name(s(CLIENT_ID))
        .with_client_software_version(s(env!("CARGO_PKG_VERSION")));
    // A broker just started may not list its finalized features yet.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut r = c.call(&req, 3)?;
    while r.finalized_features.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        r = c.call(&req, 3)?;
    }
    let level = r
        .finalized_features
        .iter()
        .find(|f| f.name.as_str() == "share.version")
        .map_or(0, |f| f.max_version_level);
    if level >= 1 {
        return Ok(());
    }
    let v = versions.pick(ApiKey::UpdateFeatures, 1, 1)?;
    let req = UpdateFeaturesRequest::default()
        .with_timeout_ms(30_000)
        .with_feature_updates(vec![FeatureUpdateKey::default()
            .with_feature(s("share.version"))
            .with_max_version_level(1)
            .with_upgrade_type(1)]);
    let r = c.call(&req, v)?;
    if r.error_code != 0 {
        return Err(format!(
            "UpdateFeatures share.version=1: error {} {:?}",
            r.error_code, r.error_message
        )
        .into());
    }
    Ok(())
}

/// Sets the group config share.auto.offset.reset (KIP-932).
fn set_offset_reset(c: &mut Conn, versions: &Versions, group: &str, reset: &str) -> Res<()> {
    let v = versions.pick(ApiKey::IncrementalAlterConfigs, 1, 0)?;
    let req = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(GROUP_RESOURCE)
            .with_resource_name(s(group))
            .with_configs(vec![AlterableConfig::default()
                .with_name(s("share.auto.offset.reset"))
                .with_config_operation(SET)
                .with_value(Some(s(reset)))]),
    ]);
    let r = c.call(&req, v)?;
    for x in r.responses {
        if x.error_code != 0 {
            return Err(format!(
                "group {group}: share.auto.offset.reset={reset}: error {} {:?}",
                x.error_code, x.error_message
            )
            .into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_find_missing_and_repeated_offsets() {
        let counts: Vec<AtomicU8> = [1, 0, 2, 1, 0].iter().map(|&c| AtomicU8::new(c)).collect();
        assert_eq!(check_counts(&counts), (2, 1));
    }

    #[test]
    fn a_range_past_the_records_is_counted_apart() {
        let shared = Shared {
            counts: (0..4).map(|_| AtomicU8::new(0)).collect(),
            beyond: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            done: AtomicBool::new(false),
            end: Mutex::new(None),
        };
        assert_eq!(count_range(&shared, 2, 5), 2);
        assert_eq!(shared.beyond.load(Ordering::Relaxed), 2);
        assert_eq!(check_counts(&shared.counts), (2, 0));
    }

    #[test]
    fn the_acknowledgement_accepts_every_run() {
        let id = Uuid::new_v4();
        let r = ack_req("g", "m", 3, id, 0, &[(0, 9), (20, 29)]);
        assert_eq!(r.share_session_epoch, 3);
        let p = &r.topics[0].partitions[0];
        let b: Vec<_> = p
            .acknowledgement_batches
            .iter()
            .map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone()))
            .collect();
        assert_eq!(b, vec![(0, 9, vec![ACCEPT]), (20, 29, vec![ACCEPT])]);
    }
}
