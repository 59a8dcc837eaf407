//! Transaction markers and the aborted-transaction index (KIP-98).
//!
//! A control batch (attributes bit 5) holds one control record whose key is
//! `version: i16 = 0, type: i16` (0 = ABORT, 1 = COMMIT) and whose value is
//! `version: i16 = 0, coordinator_epoch: i32` (Kafka `EndTransactionMarker`).
//!
//! Each segment may have a `<base offset>.txnindex` file (Kafka
//! `TransactionIndex`): one 34-byte big-endian entry per aborted transaction
//! whose ABORT marker lies in that segment: `version: i16 = 0,
//! producer_id: i64, first_offset: i64, last_offset: i64,
//! last_stable_offset: i64`. The log stays the source of truth: the files
//! are rebuilt from it at start-up when missing or different.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// Suffix of aborted-transaction index files.
pub const TXN_INDEX_SUFFIX: &str = "txnindex";

/// Size in bytes of one `.txnindex` entry.
pub const TXN_INDEX_ENTRY_BYTES: usize = 34;

/// Control record type 0 (Kafka `ControlRecordType.ABORT`).
pub const CONTROL_TYPE_ABORT: i16 = 0;
/// Control record type 1 (Kafka `ControlRecordType.COMMIT`).
pub const CONTROL_TYPE_COMMIT: i16 = 1;

/// One aborted transaction (Kafka `AbortedTxn`), all offsets absolute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    /// Producer id of the transaction.
    pub producer_id: i64,
    /// Offset of the first record of its first transactional batch on this
    /// partition (the ABORT marker's offset when it wrote no data).
    pub first_offset: i64,
    /// Offset of the ABORT marker.
    pub last_offset: i64,
    /// The last stable offset once this transaction completed.
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    /// Gives the 34-byte `.txnindex` entry (version 0, big-endian).
    pub fn encode(&self) -> [u8; TXN_INDEX_ENTRY_BYTES] {
        let mut b = [0u8; TXN_INDEX_ENTRY_BYTES];
        b[0..2].copy_from_slice(&0i16.to_be_bytes());
        b[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        b[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        b[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        b[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        b
    }

    /// Takes one 34-byte entry; gives it decoded, or None when it is short
    /// or its version is not 0.
    pub fn decode(b: &[u8]) -> Option<AbortedTxn> {
        let b: &[u8; TXN_INDEX_ENTRY_BYTES] = b.get(..TXN_INDEX_ENTRY_BYTES)?.try_into().ok()?;
        let i64_at = |at: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[at..at + 8]);
            i64::from_be_bytes(a)
        };
        if i16::from_be_bytes([b[0], b[1]]) != 0 {
            return None;
        }
        Some(AbortedTxn {
            producer_id: i64_at(2),
            first_offset: i64_at(10),
            last_offset: i64_at(18),
            last_stable_offset: i64_at(26),
        })
    }
}

/// The content of a transaction marker (one control record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlMarker {
    /// True for COMMIT (type 1), false for ABORT (type 0).
    pub commit: bool,
    /// Epoch of the transaction coordinator that wrote it (-1 if the value
    /// is missing).
    pub coordinator_epoch: i32,
}

/// Takes a control record's key and value; gives the marker, or None for a
/// key that is not version 0 with type ABORT/COMMIT (Kafka skips unknown
/// control types).
pub fn parse_control_record(key: &[u8], value: Option<&[u8]>) -> Option<ControlMarker> {
    let k: &[u8; 4] = key.get(..4)?.try_into().ok()?;
    if i16::from_be_bytes([k[0], k[1]]) != 0 {
        return None;
    }
    let commit = match i16::from_be_bytes([k[2], k[3]]) {
        CONTROL_TYPE_ABORT => false,
        CONTROL_TYPE_COMMIT => true,
        _ => return None,
    };
    let coordinator_epoch = value
        .and_then(|v| v.get(2..6))
        .and_then(|e| <[u8; 4]>::try_from(e).ok())
        .map(i32::from_be_bytes)
        .unwrap_or(-1);
    Some(ControlMarker {
        commit,
        coordinator_epoch,
    })
}

/// Gives the key bytes of a control record: version 0, then type 0 (ABORT)
/// or 1 (COMMIT).
pub fn control_key(commit: bool) -> [u8; 4] {
    let t = if commit {
        CONTROL_TYPE_COMMIT
    } else {
        CONTROL_TYPE_ABORT
    };
    let mut k = [0u8; 4];
    k[2..].copy_from_slice(&t.to_be_bytes());
    k
}

/// Gives the value bytes of a control record: version 0, coordinator epoch.
pub fn control_value(coordinator_epoch: i32) -> [u8; 6] {
    let mut v = [0u8; 6];
    v[2..].copy_from_slice(&coordinator_epoch.to_be_bytes());
    v
}

/// Takes a `.txnindex` path; gives its entries (a trailing partial entry or
/// an entry of an unknown version ends the list), or None when the file
/// does not exist.
pub fn read_txn_index(path: &Path) -> io::Result<Option<Vec<AbortedTxn>>> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(Some(
        bytes
            .chunks_exact(TXN_INDEX_ENTRY_BYTES)
            .map_while(AbortedTxn::decode)
            .collect(),
    ))
}

/// Takes a `.txnindex` path and an entry; appends the entry (creating the
/// file). Not fsynced: the index is rebuilt from the log at start-up.
pub fn append_txn_index(path: &Path, entry: &AbortedTxn) -> io::Result<()> {
    let mut f = OpenOptions::new().create(true).append(true).open(path)?;
    f.write_all(&entry.encode())
}

/// Takes a `.txnindex` path and entries; replaces the file with exactly
/// those entries (a `.swap` temporary file, which recovery removes if left
/// behind, then rename).
pub fn write_txn_index(path: &Path, entries: &[AbortedTxn]) -> io::Result<()> {
    let mut bytes = Vec::with_capacity(entries.len() * TXN_INDEX_ENTRY_BYTES);
    for e in entries {
        bytes.extend_from_slice(&e.encode());
    }
    let tmp = path.with_extension(format!("{TXN_INDEX_SUFFIX}.swap"));
    fs::write(&tmp, &bytes)?;
    fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_bytes_are_kafkas() {
        let e = AbortedTxn {
            producer_id: 0x0102030405060708,
            first_offset: 5,
            last_offset: 9,
            last_stable_offset: 10,
        };
        let b = e.encode();
        let mut expect = vec![0u8, 0];
        expect.extend_from_slice(&0x0102030405060708i64.to_be_bytes());
        expect.extend_from_slice(&5i64.to_be_bytes());
        expect.extend_from_slice(&9i64.to_be_bytes());
        expect.extend_from_slice(&10i64.to_be_bytes());
        assert_eq!(b.to_vec(), expect);
        assert_eq!(AbortedTxn::decode(&b), Some(e));
        let mut bad = b;
        bad[1] = 1;
        assert_eq!(AbortedTxn::decode(&bad), None);
    }

    #[test]
    fn control_records() {
        let m = parse_control_record(&control_key(true), Some(&control_value(7))).unwrap();
        assert_eq!(
            m,
            ControlMarker {
                commit: true,
                coordinator_epoch: 7
            }
        );
        let m = parse_control_record(&control_key(false), None).unwrap();
        assert!(!m.commit);
        assert_eq!(m.coordinator_epoch, -1);
        assert_eq!(parse_control_record(&[0, 0, 0, 5], None), None);
        assert_eq!(parse_control_record(&[0, 1, 0, 0], None), None);
    }

    #[test]
    fn file_roundtrip_and_partial_tail() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("00000000000000000000.txnindex");
        assert_eq!(read_txn_index(&p).unwrap(), None);
        let a = AbortedTxn {
            producer_id: 1,
            first_offset: 0,
            last_offset: 3,
            last_stable_offset: 4,
        };
        append_txn_index(&p, &a).unwrap();
        append_txn_index(&p, &a).unwrap();
        assert_eq!(read_txn_index(&p).unwrap(), Some(vec![a, a]));
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(&[1, 2, 3]).unwrap();
        assert_eq!(read_txn_index(&p).unwrap(), Some(vec![a, a]));
        write_txn_index(&p, &[a]).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), a.encode().to_vec());
    }
}
