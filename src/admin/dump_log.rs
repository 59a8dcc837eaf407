//! `fjord dump-log FILE…`: what Kafka's `kafka-dump-log.sh` prints for a
//! partition's files, decoded with the broker's own code in
//! `crate::storage` (batch headers, record decoding, index entries):
//! every RecordBatch of a `.log` segment (with `--print-records` its
//! records), the entries of a `.index` or `.timeindex` checked against
//! the `.log` beside it (`super::dump_index`).

use std::path::Path;

use bytes::Bytes;
use serde_json::{json, Value};

use crate::storage::batch::{BatchHeader, ATTRIBUTES_OFFSET, MIN_BATCH_LENGTH};
use crate::storage::records::{decode_batch, record_headers};
use crate::storage::txn_index::parse_control_record;
use crate::storage::RECORD_BATCH_HEADER_BYTES;

use super::dump_index::{dump_offset_index, dump_time_index, problems, IndexSummary};
use super::output::Report;

/// Errors of `dump-log`.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// Not a `.log`, `.index` or `.timeindex` file.
    #[error("{0}: not a .log, .index or .timeindex file")]
    UnknownFile(String),
}

/// What a dumped `.log` segment held.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SegmentSummary {
    /// Batches found.
    pub batches: usize,
    /// Records counted in their headers.
    pub records: i64,
    /// Batches whose stored CRC32C is not the computed one.
    pub invalid_crcs: usize,
    /// Bytes after the last whole batch (a torn write, or preallocated
    /// space).
    pub trailing_bytes: usize,
}

fn codec_name(bits: u8) -> &'static str {
    match bits {
        0 => "none",
        1 => "gzip",
        2 => "snappy",
        3 => "lz4",
        4 => "zstd",
        _ => "unknown",
    }
}

fn text_or_hex(b: Option<&[u8]>) -> Value {
    match b {
        None => Value::Null,
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => json!(s),
            Err(_) => json!(format!(
                "0x{}",
                b.iter().map(|x| format!("{x:02x}")).collect::<String>()
            )),
        },
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

/// Takes the bytes of a `.log` segment and whether to decode records;
/// gives the report (JSON: {batches: [...], summary}) and the summary.
pub fn dump_segment(data: &[u8], print_records: bool) -> (Report, SegmentSummary) {
    let mut text = String::new();
    let mut docs = Vec::new();
    let mut sum = SegmentSummary::default();
    let mut pos = 0usize;
    let whole = Bytes::copy_from_slice(data);
    while pos < data.len() {
        let rest = &data[pos..];
        let h = match BatchHeader::parse(rest) {
            Ok(h) => h,
            Err(_) => break,
        };
        let size = h.total_size();
        if h.batch_length < MIN_BATCH_LENGTH || size > rest.len() {
            break;
        }
        let batch = &rest[..size];
        let computed = crc32c::crc32c(&batch[ATTRIBUTES_OFFSET..]);
        // Valid as Kafka's `isValid`: a v2 batch whose CRC matches.
        let crc_valid = computed == h.crc && h.magic == 2;
        if !crc_valid {
            sum.invalid_crcs += 1;
        }
        sum.batches += 1;
        sum.records += i64::from(h.records_count);
        let last_sequence = if h.base_sequence < 0 {
            -1
        } else {
            h.base_sequence.wrapping_add(h.last_offset_delta)
        };
        let ts_type = format!("{:?}", h.timestamp_type());
        text.push_str(&format!(
            "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {last_sequence} \
             producerId: {} producerEpoch: {} partitionLeaderEpoch: {} isTransactional: {} \
             isControl: {} position: {pos} {ts_type}: {} maxTimestamp: {} size: {size} magic: {} \
             compresscodec: {} crc: {} isvalid: {crc_valid}\n",
            h.base_offset,
            h.last_offset(),
            h.records_count,
            h.base_sequence,
            h.producer_id,
            h.producer_epoch,
            h.partition_leader_epoch,
            h.is_transactional(),
            h.is_control(),
            h.base_timestamp,
            h.max_timestamp,
            h.magic,
            codec_name(h.compression()),
            h.crc,
        ));
        let mut doc = json!({
            "base_offset": h.base_offset,
            "last_offset": h.last_offset(),
            "count": h.records_count,
            "base_sequence": h.base_sequence,
            "last_sequence": last_sequence,
            "producer_id": h.producer_id,
            "producer_epoch": h.producer_epoch,
            "partition_leader_epoch": h.partition_leader_epoch,
            "is_transactional": h.is_transactional(),
            "is_control": h.is_control(),
            "position": pos,
            "size": size,
            "magic": h.magic,
            "compression": codec_name(h.compression()),
            "timestamp_type": ts_type,
            "base_timestamp": h.base_timestamp,
            "max_timestamp": h.max_timestamp,
            "crc": h.crc,
            "crc_computed": computed,
            "crc_valid": crc_valid,
        });
        if print_records && size >= RECORD_BATCH_HEADER_BYTES {
            let mut b = whole.slice(pos..pos + size);
            match decode_batch(&mut b) {
                Ok(set) => {
                    let stored_headers = record_headers(batch, &h).ok();
                    let mut recs = Vec::new();
                    for (index, r) in set.records.iter().enumerate() {
                        let key = text_or_hex(r.key.as_deref());
                        let value = text_or_hex(r.value.as_deref());
                        // In record order, a key as often as it was sent
                        // (read from the stored bytes; the crate's map
                        // keeps one value per key).
                        let crate_headers = || {
                            r.headers
                                .iter()
                                .map(|(k, v)| (k.to_string(), v.as_ref().map(|b| b.to_vec())))
                                .collect::<Vec<_>>()
                        };
                        let stored = stored_headers
                            .as_ref()
                            .and_then(|all| all.get(index))
                            .cloned()
                            .unwrap_or_else(crate_headers);
                        let headers: Vec<Value> = stored
                            .iter()
                            .map(|(k, v)| json!({"key": k, "value": text_or_hex(v.as_deref())}))
                            .collect();
                        let header_keys: Vec<&str> =
                            stored.iter().map(|(k, _)| k.as_str()).collect();
                        // A batch without a producer sequence has none per
                        // record either (Kafka prints -1).
                        let sequence = if h.base_sequence < 0 { -1 } else { r.sequence };
                        let marker = if h.is_control() {
                            r.key
                                .as_deref()
                                .and_then(|k| parse_control_record(k, r.value.as_deref()))
                        } else {
                            None
                        };
                        let mut line = format!(
                            "| offset: {} {ts_type}: {} keySize: {} valueSize: {} sequence: {}",
                            r.offset,
                            r.timestamp,
                            r.key.as_ref().map(|k| k.len() as i64).unwrap_or(-1),
                            r.value.as_ref().map(|v| v.len() as i64).unwrap_or(-1),
                            sequence,
                        );
                        if let Some(m) = marker {
                            line.push_str(&format!(
                                " endTxnMarker: {} coordinatorEpoch: {}",
                                if m.commit { "COMMIT" } else { "ABORT" },
                                m.coordinator_epoch
                            ));
                        } else {
                            line.push_str(&format!(
                                " headerKeys: [{}] key: {} payload: {}",
                                header_keys.join(","),
                                show(&key),
                                show(&value)
                            ));
                        }
                        text.push_str(&line);
                        text.push('\n');
                        recs.push(json!({
                            "offset": r.offset,
                            "timestamp": r.timestamp,
                            "sequence": sequence,
                            "key": key,
                            "value": value,
                            "headers": headers,
                            "control": marker.map(|m| json!({
                                "type": if m.commit { "COMMIT" } else { "ABORT" },
                                "coordinator_epoch": m.coordinator_epoch,
                            })),
                        }));
                    }
                    doc["records"] = json!(recs);
                }
                Err(e) => {
                    text.push_str(&format!("| records not decodable: {e}\n"));
                    doc["records_error"] = json!(e.to_string());
                }
            }
        }
        docs.push(doc);
        pos += size;
    }
    sum.trailing_bytes = data.len() - pos;
    if sum.trailing_bytes > 0 {
        text.push_str(&format!(
            "Found {} bytes at position {pos} that are not a whole batch\n",
            sum.trailing_bytes
        ));
    }
    let summary = json!({
        "batches": sum.batches,
        "records": sum.records,
        "invalid_crcs": sum.invalid_crcs,
        "trailing_bytes": sum.trailing_bytes,
    });
    (
        Report::new(json!({ "batches": docs, "summary": summary }), text),
        sum,
    )
}

fn base_offset_of(path: &Path) -> i64 {
    path.file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// What a dumped file held: a segment's batches, or an index's entries and
/// checks.
#[derive(Debug, Clone, PartialEq)]
pub enum FileSummary {
    /// A `.log` segment.
    Log(SegmentSummary),
    /// A `.index` or `.timeindex` (see [`super::dump_index`]).
    Index(IndexSummary),
}

/// Takes a file path and whether to print records; gives its dump as a
/// report (JSON: {file, kind, base_offset, …}) and what it held.
pub fn dump_file(path: &Path, print_records: bool) -> Result<(Report, FileSummary), DumpError> {
    let shown = path.display().to_string();
    let data = std::fs::read(path).map_err(|source| DumpError::Io {
        path: shown.clone(),
        source,
    })?;
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let base = base_offset_of(path);
    let mut text = format!("Dumping {shown}\n");
    let (r, kind, sum) = match ext {
        "log" => {
            text.push_str(&format!("Log starting offset: {base}\n"));
            let (r, sum) = dump_segment(&data, print_records);
            (r, "log", FileSummary::Log(sum))
        }
        "index" => {
            let (r, sum) = dump_offset_index(path, &data, base);
            (r, "index", FileSummary::Index(sum))
        }
        "timeindex" => {
            let (r, sum) = dump_time_index(path, &data, base);
            (r, "timeindex", FileSummary::Index(sum))
        }
        _ => return Err(DumpError::UnknownFile(shown)),
    };
    text.push_str(&r.text);
    let mut json = r.json;
    json["file"] = json!(shown);
    json["kind"] = json!(kind);
    json["base_offset"] = json!(base);
    Ok((Report::new(json, text), sum))
}

/// `fjord dump-log` arguments.
#[derive(clap::Args, Debug)]
pub struct DumpLogArgs {
    /// `.log`, `.index` or `.timeindex` files.
    #[arg(required = true)]
    pub files: Vec<std::path::PathBuf>,
    /// Decode and print each record (offset, timestamp, key, value, headers).
    #[arg(long = "print-records", alias = "print-data-log")]
    pub print_records: bool,
    /// Print JSON (stable keys): a list with one document per file.
    #[arg(long)]
    pub json: bool,
}

/// Takes `fjord dump-log` arguments; prints every file it can read. Fails
/// (after printing) when a file could not be read, a segment holds a
/// batch that is not valid (bad CRC, not magic 2) or bytes that are not a
/// whole batch (a torn tail, a corrupt batch length, garbage), or an index
/// has entries that do not match its `.log`, are out of order, or is
/// followed by a partial entry.
pub fn run(a: DumpLogArgs) -> Result<(), String> {
    let mut docs = Vec::new();
    let mut bad = Vec::new();
    for f in &a.files {
        let (r, sum) = match dump_file(f, a.print_records) {
            Ok(x) => x,
            Err(e) => {
                bad.push(e.to_string());
                continue;
            }
        };
        let shown = f.display().to_string();
        match &sum {
            FileSummary::Log(s) => {
                if s.invalid_crcs > 0 {
                    bad.push(format!(
                        "{shown}: {} batch(es) with an invalid CRC or magic",
                        s.invalid_crcs
                    ));
                }
                if s.trailing_bytes > 0 {
                    bad.push(format!(
                        "{shown}: {} byte(s) that are not a whole batch",
                        s.trailing_bytes
                    ));
                }
            }
            FileSummary::Index(s) => bad.extend(problems(&shown, s)),
        }
        if a.json {
            docs.push(r.json);
        } else {
            super::output::emit(&r.text);
        }
    }
    if a.json {
        let mut out = serde_json::to_string_pretty(&Value::Array(docs)).unwrap_or_default();
        out.push('\n');
        super::output::emit(&out);
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(bad.join("; "))
    }
}
