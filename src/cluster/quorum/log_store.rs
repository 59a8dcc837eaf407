//! The metadata quorum's Raft log on disk, under
//! `<log.dirs>/__cluster_metadata-0/` (the directory Kafka keeps its
//! metadata log in; Fjord's files in it have their own names):
//!
//! - `quorum.log`: the entries, each framed as `u32 length`, `u32 CRC32C`
//!   of the payload, payload (the entry as JSON). A torn frame at the end
//!   (a crash mid-append) is cut off at open.
//! - `quorum-vote.json`, `quorum-committed.json`, `quorum-purged.json`: the
//!   vote, the last committed and the last purged log id, each replaced
//!   atomically (temporary file, fsync, rename).
//!
//! Entries are also kept in memory (the metadata log is small and snapshots
//! purge it). Every write runs on glommio's blocking pool and is fsynced
//! before openraft is told it is durable; the shard never waits on the file.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs::File;
use std::io::{self, Read};
use std::ops::{Bound, RangeBounds};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use openraft::entry::RaftEntry;
use openraft::storage::{IOFlushed, LogState, RaftLogReader, RaftLogStorage};

use super::types::{Entry, LogId, TypeConfig, Vote};
use crate::cluster::controller::write_atomic;

/// Directory of the metadata log under the data directory.
pub const QUORUM_DIR: &str = "__cluster_metadata-0";
const LOG_FILE: &str = "quorum.log";
const VOTE_FILE: &str = "quorum-vote.json";
const COMMITTED_FILE: &str = "quorum-committed.json";
const PURGED_FILE: &str = "quorum-purged.json";
const FRAME_HEADER: usize = 8;

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    file: Arc<File>,
    /// Entries by index, with the file position of their frame.
    entries: BTreeMap<u64, (Entry, u64)>,
    /// End of the last frame.
    end: u64,
    vote: Option<Vote>,
    committed: Option<LogId>,
    purged: Option<LogId>,
}

/// The log store (and, cloned, its reader): shared state on one shard.
#[derive(Debug, Clone)]
pub struct LogStore {
    inner: Rc<RefCell<Inner>>,
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> io::Result<Option<T>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> io::Result<Vec<u8>> {
    serde_json::to_vec(v).map_err(io::Error::other)
}

/// `entry` framed for `quorum.log`.
fn frame(entry: &Entry) -> io::Result<Vec<u8>> {
    let payload = to_json(entry)?;
    let len = u32::try_from(payload.len()).map_err(io::Error::other)?;
    let mut out = Vec::with_capacity(FRAME_HEADER + payload.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&crc32c::crc32c(&payload).to_be_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Why the scan of `quorum.log` stopped before the end of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The rest is the start of a frame a crash cut short, or one whole
    /// frame with a bad CRC and nothing after it (a torn last write): cut.
    TornTail,
    /// A frame that cannot be a torn last write: a CRC-valid payload that
    /// does not decode, or a bad frame followed by a good one. The log is
    /// not cut (committed entries would go); the broker refuses to start.
    Damaged(String),
}

/// Whether a whole, CRC-valid frame starts at `pos`.
fn good_frame_at(bytes: &[u8], pos: usize) -> bool {
    let Some(h) = bytes.get(pos..pos + FRAME_HEADER) else {
        return false;
    };
    let len = u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize;
    let crc = u32::from_be_bytes([h[4], h[5], h[6], h[7]]);
    bytes
        .get(pos + FRAME_HEADER..pos + FRAME_HEADER + len)
        .is_some_and(|p| crc32c::crc32c(p) == crc)
}

/// Reads every whole, checked frame of `bytes`; gives the entries with their
/// positions, the end of the last good frame and why the scan stopped
/// before the end, if it did.
pub(crate) fn parse_frames(bytes: &[u8]) -> (Vec<(Entry, u64)>, u64, Option<Stop>) {
    let (out, end) = scan_frames(bytes);
    let end_us = end as usize;
    if end_us >= bytes.len() {
        return (out, end, None);
    }
    let stop = match bytes.get(end_us..end_us + FRAME_HEADER) {
        None => Stop::TornTail,
        Some(h) => {
            let len = u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize;
            let start = end_us + FRAME_HEADER;
            match bytes.get(start..start + len) {
                // Cut short by the end of the file.
                None => Stop::TornTail,
                Some(payload)
                    if crc32c::crc32c(payload) == u32::from_be_bytes([h[4], h[5], h[6], h[7]]) =>
                {
                    Stop::Damaged(format!(
                        "the entry at byte {end} has a good CRC32C but does not decode"
                    ))
                }
                Some(_) if good_frame_at(bytes, start + len) => Stop::Damaged(format!(
                    "the entry at byte {end} fails its CRC32C and a whole entry follows it"
                )),
                Some(_) if start + len == bytes.len() => Stop::TornTail,
                Some(_) => Stop::Damaged(format!(
                    "the entry at byte {end} fails its CRC32C and {} more bytes follow it",
                    bytes.len() - start - len
                )),
            }
        }
    };
    (out, end, Some(stop))
}

/// The entries of `bytes` up to the first frame that is not whole, checked
/// and decodable; gives them with their positions and where they end.
fn scan_frames(bytes: &[u8]) -> (Vec<(Entry, u64)>, u64) {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while bytes.len() - pos >= FRAME_HEADER {
        let len = u32::from_be_bytes([bytes[pos], bytes[pos + 1], bytes[pos + 2], bytes[pos + 3]])
            as usize;
        let crc = u32::from_be_bytes([
            bytes[pos + 4],
            bytes[pos + 5],
            bytes[pos + 6],
            bytes[pos + 7],
        ]);
        let start = pos + FRAME_HEADER;
        let Some(payload) = bytes.get(start..start + len) else {
            break;
        };
        if crc32c::crc32c(payload) != crc {
            break;
        }
        let Ok(entry) = serde_json::from_slice::<Entry>(payload) else {
            break;
        };
        out.push((entry, pos as u64));
        pos = start + len;
    }
    (out, pos as u64)
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    glommio::executor().spawn_blocking(f).await
}

async fn replace_json<T: serde::Serialize>(path: PathBuf, v: &T) -> io::Result<()> {
    let bytes = to_json(v)?;
    blocking(move || write_atomic(&path, &bytes)).await
}

/// Every whole entry of the log under `data_dir`, in order (no file is
/// created or changed). Blocking.
pub fn read_entries(data_dir: &Path) -> io::Result<Vec<Entry>> {
    match std::fs::read(data_dir.join(QUORUM_DIR).join(LOG_FILE)) {
        Ok(bytes) => Ok(scan_frames(&bytes).0.into_iter().map(|(e, _)| e).collect()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

impl LogStore {
    /// Opens (creating) the log under `data_dir`: reads every entry, cuts a
    /// torn tail. Blocking: called once at start-up, before serving.
    pub fn open(data_dir: &Path) -> io::Result<LogStore> {
        let dir = data_dir.join(QUORUM_DIR);
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(LOG_FILE);
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let (frames, end, stop) = parse_frames(&bytes);
        match stop {
            None => {}
            Some(Stop::TornTail) => {
                log::warn!(
                    "{}: cutting {} bytes after the last whole entry (a write cut short by a crash)",
                    path.display(),
                    bytes.len() as u64 - end
                );
                file.set_len(end)?;
                file.sync_all()?;
            }
            Some(Stop::Damaged(why)) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{}: {why}; the metadata log is damaged and is left as it is (restore this node's {QUORUM_DIR} from a healthy voter, or remove it to have it copied from the leader)",
                        path.display()
                    ),
                ));
            }
        }
        let purged: Option<LogId> = read_json(&dir.join(PURGED_FILE))?;
        let floor = purged.as_ref().map_or(0, |p| p.index + 1);
        let entries = frames
            .into_iter()
            .filter(|(e, _)| e.index() >= floor)
            .map(|(e, pos)| (e.index(), (e, pos)))
            .collect();
        Ok(LogStore {
            inner: Rc::new(RefCell::new(Inner {
                vote: read_json(&dir.join(VOTE_FILE))?,
                committed: read_json(&dir.join(COMMITTED_FILE))?,
                purged,
                dir,
                file: Arc::new(file),
                entries,
                end,
            })),
        })
    }

    /// The first offset the log still has (None: empty and nothing purged).
    pub fn first_index(&self) -> Option<u64> {
        let i = self.inner.borrow();
        i.entries
            .keys()
            .next()
            .copied()
            .or_else(|| i.purged.map(|p| p.index + 1))
    }

    /// The entries with records at offsets `from..=to`, as (offset, records).
    pub fn normal_entries(
        &self,
        from: u64,
        to: u64,
    ) -> Vec<(u64, Vec<crate::cluster::records::MetadataRecord>)> {
        if from > to {
            return Vec::new();
        }
        self.inner
            .borrow()
            .entries
            .range(from..=to)
            .filter_map(|(i, (e, _))| match &e.payload {
                openraft::EntryPayload::Normal(d) => Some((*i, d.records.clone())),
                openraft::EntryPayload::Blank | openraft::EntryPayload::Membership(_) => None,
            })
            .collect()
    }

    /// Whether the log was never written (no vote, no entry, nothing purged).
    pub fn is_empty(&self) -> bool {
        let i = self.inner.borrow();
        i.vote.is_none() && i.entries.is_empty() && i.purged.is_none()
    }

    /// Rewrites `quorum.log` with only the entries kept in memory.
    async fn rewrite(&self) -> io::Result<()> {
        let (dir, frames) = {
            let i = self.inner.borrow();
            let mut frames = Vec::new();
            for (e, _) in i.entries.values() {
                frames.push((e.index(), frame(e)?));
            }
            (i.dir.clone(), frames)
        };
        let path = dir.join(LOG_FILE);
        let (file, positions, end) = blocking(move || {
            let mut bytes = Vec::new();
            let mut positions = Vec::new();
            for (index, f) in &frames {
                positions.push((*index, bytes.len() as u64));
                bytes.extend_from_slice(f);
            }
            write_atomic(&path, &bytes)?;
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)?;
            Ok((file, positions, bytes.len() as u64))
        })
        .await?;
        let mut i = self.inner.borrow_mut();
        i.file = Arc::new(file);
        i.end = end;
        for (index, pos) in positions {
            if let Some(slot) = i.entries.get_mut(&index) {
                slot.1 = pos;
            }
        }
        Ok(())
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        let i = self.inner.borrow();
        let start = match range.start_bound() {
            Bound::Included(s) => Bound::Included(*s),
            Bound::Excluded(s) => Bound::Excluded(*s),
            Bound::Unbounded => Bound::Unbounded,
        };
        let end = match range.end_bound() {
            Bound::Included(s) => Bound::Included(*s),
            Bound::Excluded(s) => Bound::Excluded(*s),
            Bound::Unbounded => Bound::Unbounded,
        };
        Ok(i.entries
            .range((start, end))
            .map(|(_, (e, _))| e.clone())
            .collect())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, io::Error> {
        Ok(self.inner.borrow().vote)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, io::Error> {
        let i = self.inner.borrow();
        let last = i
            .entries
            .values()
            .next_back()
            .map(|(e, _)| e.log_id())
            .or_else(|| i.purged);
        Ok(LogState {
            last_purged_log_id: i.purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), io::Error> {
        let path = self.inner.borrow().dir.join(VOTE_FILE);
        replace_json(path, vote).await?;
        self.inner.borrow_mut().vote = Some(*vote);
        Ok(())
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), io::Error> {
        let path = self.inner.borrow().dir.join(COMMITTED_FILE);
        replace_json(path, &committed).await?;
        self.inner.borrow_mut().committed = committed;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, io::Error> {
        Ok(self.inner.borrow().committed)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: IOFlushed<TypeConfig>,
    ) -> Result<(), io::Error>
    where
        I: IntoIterator<Item = Entry>,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        let (file, start) = {
            let i = self.inner.borrow();
            (i.file.clone(), i.end)
        };
        let mut bytes = Vec::new();
        let mut placed = Vec::with_capacity(entries.len());
        for e in entries {
            let pos = start + bytes.len() as u64;
            bytes.extend_from_slice(&frame(&e)?);
            placed.push((e, pos));
        }
        let len = bytes.len() as u64;
        let result = blocking(move || {
            file.write_all_at(&bytes, start)?;
            file.sync_data()
        })
        .await;
        if result.is_ok() {
            let mut i = self.inner.borrow_mut();
            i.end = start + len;
            for (e, pos) in placed {
                i.entries.insert(e.index(), (e, pos));
            }
        }
        let outcome = match &result {
            Ok(()) => Ok(()),
            Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
        };
        callback.io_completed(outcome);
        result
    }

    async fn truncate_after(&mut self, last_log_id: Option<LogId>) -> Result<(), io::Error> {
        let keep_to = last_log_id.as_ref().map(|l| l.index);
        let (file, cut) = {
            let i = self.inner.borrow();
            let first_dropped = match keep_to {
                Some(k) => i.entries.range(k + 1..).next(),
                None => i.entries.iter().next(),
            };
            match first_dropped {
                Some((_, (_, pos))) => (i.file.clone(), *pos),
                None => return Ok(()),
            }
        };
        blocking(move || {
            file.set_len(cut)?;
            file.sync_data()
        })
        .await?;
        let mut i = self.inner.borrow_mut();
        match keep_to {
            Some(k) => {
                i.entries.split_off(&(k + 1));
            }
            None => i.entries.clear(),
        }
        i.end = cut;
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), io::Error> {
        let path = self.inner.borrow().dir.join(PURGED_FILE);
        replace_json(path, &Some(log_id)).await?;
        {
            let mut i = self.inner.borrow_mut();
            let rest = i.entries.split_off(&(log_id.index + 1));
            i.entries = rest;
            i.purged = Some(log_id);
        }
        self.rewrite().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::quorum::types::MetadataEntry;
    use openraft::vote::RaftLeaderIdExt;

    fn entry(term: u64, index: u64) -> Entry {
        let leader =
            openraft::type_config::alias::CommittedLeaderIdOf::<TypeConfig>::new_committed(term, 1);
        Entry::new_normal(LogId::new(leader, index), MetadataEntry::default())
    }

    #[test]
    fn frames_round_trip_and_a_torn_tail_is_cut() {
        let mut bytes = Vec::new();
        for i in 1..=3 {
            bytes.extend_from_slice(&frame(&entry(1, i)).unwrap());
        }
        let whole = bytes.len() as u64;
        bytes.extend_from_slice(&frame(&entry(1, 4)).unwrap()[..10]);
        let (frames, end, stop) = parse_frames(&bytes);
        assert_eq!(
            frames.iter().map(|(e, _)| e.index()).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!((end, stop), (whole, Some(Stop::TornTail)));
        // A flipped payload byte in the first entry, with whole entries
        // after it: damage, not a torn write.
        let mut bad = bytes.clone();
        bad[FRAME_HEADER + 2] ^= 0xff;
        let (frames, end, stop) = parse_frames(&bad);
        assert!(frames.is_empty() && end == 0);
        assert!(matches!(stop, Some(Stop::Damaged(_))), "{stop:?}");
        // The last whole entry with a bad CRC and nothing after it: torn.
        let mut last_bad = bytes[..whole as usize].to_vec();
        let n = last_bad.len();
        last_bad[n - 1] ^= 0xff;
        assert!(matches!(parse_frames(&last_bad).2, Some(Stop::TornTail)));
        // A good CRC over a payload that is not an entry: damage.
        let mut undecodable = bytes[..whole as usize].to_vec();
        let junk = b"not an entry";
        undecodable.extend_from_slice(&(junk.len() as u32).to_be_bytes());
        undecodable.extend_from_slice(&crc32c::crc32c(junk).to_be_bytes());
        undecodable.extend_from_slice(junk);
        assert!(matches!(
            parse_frames(&undecodable).2,
            Some(Stop::Damaged(_))
        ));
    }

    #[test]
    fn a_damaged_log_is_refused_and_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let qdir = dir.path().join(QUORUM_DIR);
        std::fs::create_dir_all(&qdir).unwrap();
        let mut bytes = Vec::new();
        for i in 1..=3 {
            bytes.extend_from_slice(&frame(&entry(1, i)).unwrap());
        }
        bytes[FRAME_HEADER + 2] ^= 0xff;
        std::fs::write(qdir.join(LOG_FILE), &bytes).unwrap();
        let err = LogStore::open(dir.path()).unwrap_err();
        assert!(err.to_string().contains("damaged"), "{err}");
        assert_eq!(
            std::fs::read(qdir.join(LOG_FILE)).unwrap(),
            bytes,
            "nothing cut"
        );
    }
}

/// openraft's own conformance suite for log and state-machine storage,
/// run on the log under a temporary directory.
#[cfg(test)]
mod suite {
    use openraft::rt::AsyncRuntime;
    use openraft::testing::log::{StoreBuilder, Suite};
    use openraft::type_config::TypeConfigExt;
    use openraft::StorageError;

    use super::LogStore;
    use crate::cluster::metadata::MetadataImage;
    use crate::cluster::quorum::runtime::GlommioRuntime;
    use crate::cluster::quorum::state_machine::{Publish, StateMachine};
    use crate::cluster::quorum::types::TypeConfig;

    struct Builder;

    fn read_error(e: std::io::Error) -> StorageError<TypeConfig> {
        StorageError::read(<TypeConfig as TypeConfigExt>::err_from_error(&e))
    }

    impl StoreBuilder<TypeConfig, LogStore, StateMachine, tempfile::TempDir> for Builder {
        async fn build(
            &self,
        ) -> Result<(tempfile::TempDir, LogStore, StateMachine), StorageError<TypeConfig>> {
            let dir = tempfile::tempdir().map_err(read_error)?;
            let log = LogStore::open(dir.path()).map_err(read_error)?;
            let publish: Publish = std::rc::Rc::new(|_| Box::pin(async {}));
            let sm = StateMachine::open(dir.path(), MetadataImage::empty("c".into()), publish)
                .map_err(read_error)?;
            Ok((dir, log, sm))
        }
    }

    #[test]
    fn openraft_storage_suite() {
        let r = GlommioRuntime::new(1).block_on(Suite::test_all(Builder));
        assert!(r.is_ok(), "{r:?}");
    }
}
