//! `fjord dump-log` of a `.index` or `.timeindex`: its entries, and the
//! checks `kafka-dump-log.sh` makes of them against the segment's `.log`
//! (the file of the same base offset beside it, when there is one).
//!
//! - `.index`: each entry names a batch's last offset and the byte position
//!   where that batch starts (`LogSegment.append` in Kafka); an entry whose
//!   position holds no batch, or a batch with another last offset, is a
//!   mismatch ("Index offset: …, log offset: …"); offsets must increase.
//! - `.timeindex`: each entry is (the segment's max timestamp so far, the
//!   last offset of the batch that holds it); an entry whose offset is no
//!   batch's last offset, or whose batch has another max timestamp, is a
//!   mismatch; timestamps must increase.
//!
//! Bytes after the last whole entry (8 bytes in `.index`, 12 in
//! `.timeindex`) are reported too: the broker's start-up recovery rebuilds
//! such an index from the `.log`. All-zero entries after the first, up to
//! the end of the file, are not entries, as in `kafka-dump-log.sh`: Kafka
//! preallocates the index of its active segment (`segment.index.bytes`)
//! and the zeros are unused space (Fjord's indexes hold only their
//! entries). A zero entry with others after it is checked like any entry
//! (and fails: it is out of order).

use std::path::Path;

use serde_json::{json, Value};

use crate::storage::batch::{BatchHeader, MIN_BATCH_LENGTH};
use crate::storage::index::{
    decode_offset_entries, decode_time_entries, OFFSET_INDEX_ENTRY_BYTES, TIME_INDEX_ENTRY_BYTES,
};

use super::output::Report;

/// What a dumped index held and what its checks found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexSummary {
    /// Whole entries found.
    pub entries: usize,
    /// Bytes after the last whole entry.
    pub trailing_bytes: usize,
    /// Entries that do not agree with the `.log` (see the module docs).
    pub mismatches: usize,
    /// Entries whose offset (`.index`) or timestamp (`.timeindex`) is not
    /// above the previous entry's.
    pub out_of_order: usize,
    /// Whether the `.log` beside the index was found and read.
    pub log_checked: bool,
    /// All-zero entries from the first after the first entry on (unused,
    /// preallocated space; not shown or checked).
    pub preallocated: usize,
}

/// One RecordBatch of the `.log`, as the checks need it.
struct BatchAt {
    position: u64,
    last_offset: i64,
    max_timestamp: i64,
}

/// Takes a `.log`'s bytes; gives its whole batches in file order (stops at
/// the first bytes that are not a whole batch).
fn batches(data: &[u8]) -> Vec<BatchAt> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while let Some(rest) = data.get(pos..).filter(|r| !r.is_empty()) {
        let Ok(h) = BatchHeader::parse(rest) else {
            break;
        };
        let size = h.total_size();
        if h.batch_length < MIN_BATCH_LENGTH || size > rest.len() {
            break;
        }
        out.push(BatchAt {
            position: pos as u64,
            last_offset: h.last_offset(),
            max_timestamp: h.max_timestamp,
        });
        pos += size;
    }
    out
}

/// Takes decoded entries and what makes one all zero; gives how many are in
/// use: up to the first all-zero entry after the first entry when every
/// entry from there on is zero (preallocated space). A zero entry followed
/// by others is not space but damage: every entry is then kept, and the
/// checks report the zero one.
fn used_entries<E>(entries: &[E], zero: impl Fn(&E) -> bool) -> usize {
    let first_zero = entries
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, e)| zero(e))
        .map_or(entries.len(), |(i, _)| i);
    if entries[first_zero..].iter().all(&zero) {
        first_zero
    } else {
        entries.len()
    }
}

/// Takes the index path; gives the batches of the `.log` beside it, or None
/// when there is none to read.
fn log_beside(path: &Path) -> Option<Vec<BatchAt>> {
    let data = std::fs::read(path.with_extension("log")).ok()?;
    Some(batches(&data))
}

/// Takes a `.index` file's path, bytes and base offset; gives its dump
/// (JSON: {entries: [{offset, position}], mismatches, summary}) and summary.
pub fn dump_offset_index(path: &Path, data: &[u8], base: i64) -> (Report, IndexSummary) {
    let log = log_beside(path);
    let mut entries = decode_offset_entries(data);
    let used = used_entries(&entries, |e| e.relative_offset == 0 && e.position == 0);
    let preallocated = entries.len() - used;
    entries.truncate(used);
    let mut sum = IndexSummary {
        entries: entries.len(),
        preallocated,
        trailing_bytes: data.len() % OFFSET_INDEX_ENTRY_BYTES,
        log_checked: log.is_some(),
        ..IndexSummary::default()
    };
    let mut text = String::new();
    let mut docs = Vec::new();
    let mut mismatches = Vec::new();
    let mut prev: Option<i64> = None;
    for e in &entries {
        let offset = base + i64::from(e.relative_offset);
        text.push_str(&format!("offset: {offset} position: {}\n", e.position));
        docs.push(json!({"offset": offset, "position": e.position}));
        if prev.is_some_and(|p| offset <= p) {
            sum.out_of_order += 1;
        }
        prev = Some(offset);
        if let Some(batches) = &log {
            let found = batches
                .iter()
                .find(|b| b.position == u64::from(e.position))
                .map(|b| b.last_offset);
            if found != Some(offset) {
                mismatches.push(json!({"index_offset": offset, "log_offset": found}));
            }
        }
    }
    sum.mismatches = mismatches.len();
    finish(text, docs, mismatches, &sum, "Index offset", "log offset")
}

/// Takes a `.timeindex` file's path, bytes and base offset; gives its dump
/// (JSON: {entries: [{timestamp, offset}], mismatches, summary}) and
/// summary.
pub fn dump_time_index(path: &Path, data: &[u8], base: i64) -> (Report, IndexSummary) {
    let log = log_beside(path);
    let mut entries = decode_time_entries(data);
    let used = used_entries(&entries, |e| e.relative_offset == 0 && e.timestamp == 0);
    let preallocated = entries.len() - used;
    entries.truncate(used);
    let mut sum = IndexSummary {
        entries: entries.len(),
        preallocated,
        trailing_bytes: data.len() % TIME_INDEX_ENTRY_BYTES,
        log_checked: log.is_some(),
        ..IndexSummary::default()
    };
    let mut text = String::new();
    let mut docs = Vec::new();
    let mut mismatches = Vec::new();
    let mut prev: Option<i64> = None;
    for e in &entries {
        let offset = base + i64::from(e.relative_offset);
        text.push_str(&format!("timestamp: {} offset: {offset}\n", e.timestamp));
        docs.push(json!({"timestamp": e.timestamp, "offset": offset}));
        if prev.is_some_and(|p| e.timestamp <= p) {
            sum.out_of_order += 1;
        }
        prev = Some(e.timestamp);
        if let Some(batches) = &log {
            let found = batches
                .iter()
                .find(|b| b.last_offset == offset)
                .map(|b| b.max_timestamp);
            if found != Some(e.timestamp) {
                mismatches.push(json!({"index_timestamp": e.timestamp, "log_timestamp": found}));
            }
        }
    }
    sum.mismatches = mismatches.len();
    finish(
        text,
        docs,
        mismatches,
        &sum,
        "Index timestamp",
        "log timestamp",
    )
}

/// Takes the entries' text and documents and the mismatches found; gives
/// the report with the checks' lines after the entries.
fn finish(
    mut text: String,
    docs: Vec<Value>,
    mismatches: Vec<Value>,
    sum: &IndexSummary,
    index_label: &str,
    log_label: &str,
) -> (Report, IndexSummary) {
    let (index_key, log_key) = if index_label == "Index offset" {
        ("index_offset", "log_offset")
    } else {
        ("index_timestamp", "log_timestamp")
    };
    for m in &mismatches {
        let log = match m[log_key].as_i64() {
            Some(v) => v.to_string(),
            None => "none".into(),
        };
        text.push_str(&format!(
            "Mismatch: {index_label}: {}, {log_label}: {log}\n",
            m[index_key]
        ));
    }
    if sum.out_of_order > 0 {
        text.push_str(&format!(
            "Found {} entries not above the entry before them\n",
            sum.out_of_order
        ));
    }
    if sum.trailing_bytes > 0 {
        text.push_str(&format!(
            "Found {} bytes after the last whole entry\n",
            sum.trailing_bytes
        ));
    }
    if !sum.log_checked {
        text.push_str("No .log beside this index: entries not checked against it\n");
    }
    let doc = json!({
        "entries": docs,
        "mismatches": mismatches,
        "summary": {
            "entries": sum.entries,
            "mismatches": sum.mismatches,
            "out_of_order": sum.out_of_order,
            "trailing_bytes": sum.trailing_bytes,
            "log_checked": sum.log_checked,
            "preallocated": sum.preallocated,
        },
    });
    (Report::new(doc, text), sum.clone())
}

/// Takes a dumped index's file name and summary; gives the reasons it fails
/// the command (empty: none).
pub fn problems(file: &str, s: &IndexSummary) -> Vec<String> {
    let mut out = Vec::new();
    if s.mismatches > 0 {
        out.push(format!(
            "{file}: {} entr(ies) that do not match the .log",
            s.mismatches
        ));
    }
    if s.out_of_order > 0 {
        out.push(format!("{file}: {} entr(ies) out of order", s.out_of_order));
    }
    if s.trailing_bytes > 0 {
        out.push(format!(
            "{file}: {} byte(s) after the last whole entry",
            s.trailing_bytes
        ));
    }
    out
}
