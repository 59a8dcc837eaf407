//! The metadata quorum: the log and snapshot files read at start-up, and
//! what a socket on the controller listener (or a controller's answer to a
//! broker-only node) can carry.

use std::time::{Duration, Instant};

use openraft::entry::RaftEntry;
use openraft::EntryPayload;
use uuid::Uuid;

use super::{parts, ScratchDir, Violation};
use crate::cluster::control::{decide, Dice, Liveness, Rules};
use crate::cluster::metadata::{Endpoint, MetadataImage};
use crate::cluster::quorum::log_store::{parse_frames, LogStore, QUORUM_DIR};
use crate::cluster::quorum::rpc::{QuorumRequest, QuorumResponse};
use crate::cluster::quorum::state_machine::{image_from_snapshot, read_offline};
use crate::cluster::quorum::types::Entry;
use crate::cluster::records::MetadataRecord;

/// Applies the normal entries among `entries` (index order as given) to
/// `image`, as the state machine does.
fn apply_entries<'a>(
    mut image: MetadataImage,
    entries: impl IntoIterator<Item = &'a Entry>,
) -> MetadataImage {
    for e in entries {
        if let EntryPayload::Normal(data) = &e.payload {
            image = image.apply(e.index(), &data.records);
        }
    }
    image
}

/// Takes a selector byte (`% 3`) and bytes. 0: the bytes are
/// `quorum.log` (`log_store::parse_frames`: length, CRC32C, JSON entry);
/// the entries found must lie inside the bytes in order, and their records
/// are applied to an image (`MetadataImage::apply`). 1: the bytes are an
/// image snapshot (the JSON a leader installs or a controller sends a
/// broker-only node), turned into an image. 2: the bytes are tagged parts
/// (see `fuzzing::encode_parts`; tag `% 5`: `quorum.log`,
/// `quorum-snapshot.json`, `quorum-vote.json`, `quorum-committed.json`,
/// `quorum-purged.json`) written to a metadata log directory, opened as
/// the quorum opens it (`LogStore::open`) and read as the offline tools
/// read it (`state_machine::read_offline`).
pub fn metadata_log(data: &[u8]) -> Result<(), Violation> {
    let Some((&selector, bytes)) = data.split_first() else {
        return Ok(());
    };
    match selector % 3 {
        0 => {
            let (frames, end, stop) = parse_frames(bytes);
            // Stopped before the end exactly when bytes are left over.
            if stop.is_some() != (end < bytes.len() as u64) {
                return Err(format!(
                    "stop {stop:?} with frames ending at {end} of {}",
                    bytes.len()
                ));
            }
            let mut at = 0u64;
            for (_, pos) in &frames {
                if *pos < at || *pos >= end {
                    return Err(format!("frame at {pos} after {at}, end {end}"));
                }
                at = *pos + 1;
            }
            if end > bytes.len() as u64 {
                return Err(format!("frames end at {end} of {} bytes", bytes.len()));
            }
            let _ = apply_entries(
                MetadataImage::empty("fuzz".into()),
                frames.iter().map(|(e, _)| e),
            );
        }
        1 => {
            let _ = image_from_snapshot(bytes, &MetadataImage::empty("fuzz".into()));
        }
        _ => {
            let scratch = ScratchDir::new().map_err(|e| format!("scratch directory: {e}"))?;
            let dir = scratch.0.join(QUORUM_DIR);
            std::fs::create_dir_all(&dir).map_err(|e| format!("scratch directory: {e}"))?;
            for (tag, part) in parts(bytes) {
                let name = match tag % 5 {
                    0 => "quorum.log",
                    1 => "quorum-snapshot.json",
                    2 => "quorum-vote.json",
                    3 => "quorum-committed.json",
                    _ => "quorum-purged.json",
                };
                std::fs::write(dir.join(name), part)
                    .map_err(|e| format!("scratch directory: {e}"))?;
            }
            let _ = LogStore::open(&scratch.0);
            let _ = read_offline(&scratch.0);
        }
    }
    Ok(())
}

/// The controller's dice, deterministic.
struct Counter(u64);

impl Dice for Counter {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        (self.0 >> 33) as usize % n.max(1)
    }
    fn topic_id(&mut self) -> Uuid {
        self.0 = self.0.wrapping_add(1);
        Uuid::from_u64_pair(0x0f0f, self.0)
    }
}

/// The image the controller decides against: three registered, unfenced
/// brokers of cluster `fuzz`.
fn base_image() -> MetadataImage {
    let mut records = Vec::new();
    for id in 1..=3 {
        records.push(MetadataRecord::RegisterBroker {
            broker_id: id,
            incarnation_id: Uuid::from_u64_pair(7, id as u64),
            endpoints: vec![Endpoint {
                listener: "PLAINTEXT".into(),
                host: "localhost".into(),
                port: 9091 + id as u16,
            }],
            rack: None,
            fenced: false,
        });
    }
    MetadataImage::empty("fuzz".into()).apply(1, &records)
}

/// Takes the JSON body of one controller-listener frame (the `u32` length
/// prefix is `rpc::read_frame`'s, bounded by `rpc::MAX_FRAME`); decodes it
/// as what a node may send (`QuorumRequest`) and as what a node reads back
/// (`QuorumResponse`), and carries out what a controller would with it
/// without Raft: a request for the active controller is decided
/// (`control::decide`) against a three-broker image and the decision's
/// records applied; AppendEntries' entries are applied; a snapshot's image
/// is decoded; a log chunk for a broker-only node is installed (snapshot,
/// then entries after it).
pub fn controller_rpc(data: &[u8]) -> Result<(), Violation> {
    if let Ok(req) = serde_json::from_slice::<QuorumRequest>(data) {
        let image = base_image();
        match req {
            QuorumRequest::Controller(r) => {
                let rules = Rules {
                    session_timeout: Duration::from_secs(9),
                    open_files_limit: Some(1 << 20),
                    node_id: 1,
                    election: crate::cluster::elr::ElectionRules::default(),
                };
                let mut liveness = Liveness::default();
                let now = Instant::now();
                liveness.reset(&image, now);
                let d = decide(&image, &r, &mut liveness, now, &rules, &mut Counter(1));
                let _ = image.apply(image.offset + 1, &d.records);
            }
            QuorumRequest::Append(a) => {
                let _ = apply_entries(image, a.entries.iter());
            }
            QuorumRequest::Snapshot { data, .. } => {
                let _ = image_from_snapshot(&data, &image);
            }
            QuorumRequest::SaslAuthenticate { token } => {
                for selector in 0u8..4 {
                    let mut input = vec![selector];
                    input.extend_from_slice(&token);
                    super::sasl_tokens(&input)?;
                }
            }
            QuorumRequest::Hello { .. }
            | QuorumRequest::SaslHandshake { .. }
            | QuorumRequest::Vote(_)
            | QuorumRequest::PreVote(_)
            | QuorumRequest::Describe
            | QuorumRequest::FetchLog { .. } => {}
        }
    }
    if let Ok(QuorumResponse::Log(Ok(chunk))) = serde_json::from_slice::<QuorumResponse>(data) {
        let mut image = base_image();
        if let Some(s) = &chunk.snapshot {
            match image_from_snapshot(s, &image) {
                Ok(i) => image = i,
                Err(_) => return Ok(()),
            }
        }
        for (offset, records) in &chunk.entries {
            if *offset > image.offset {
                image = image.apply(*offset, records);
            }
        }
    }
    Ok(())
}
