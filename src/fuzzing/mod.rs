//! Entry points for the fuzz targets (`tests/fuzz`, run with cargo-fuzz)
//! and for the seed check of the normal test suite (`tests/fuzz_seeds.rs`):
//! one function per family of decoders that read bytes from outside the
//! process. Each takes arbitrary bytes, runs them through the broker's own
//! code exactly as the socket or the start-up path would, and gives
//! `Err(what)` only when an invariant the broker relies on breaks; a panic
//! or an abort is a bug as well. See docs/fuzzing.md for which decoder each
//! one reaches.
//!
//! Not part of the broker's API: hidden from the documentation and used by
//! nothing else.

mod files;
mod metadata;
mod records;
mod requests;
mod sasl;

pub use files::{checkpoint_files, partition_dir};
pub use metadata::{controller_rpc, metadata_log};
pub use records::{compressed_batches, coordinator_records, record_batches};
pub use requests::{legacy_produce, request_stream};
pub use sasl::sasl_tokens;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// What broke: the message of an invariant that did not hold.
pub type Violation = String;

/// Splits `data` into tagged parts: a tag byte, a big-endian `u32` length,
/// then that many bytes (the last part takes what is left when shorter).
/// The file-reading targets describe a directory this way.
fn parts(data: &[u8]) -> Vec<(u8, &[u8])> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some((&tag, tail)) = rest.split_first() {
        let Some((len, tail)) = tail.split_first_chunk::<4>() else {
            break;
        };
        let len = (u32::from_be_bytes(*len) as usize).min(tail.len());
        out.push((tag, &tail[..len]));
        rest = &tail[len..];
    }
    out
}

/// Takes bytes holding RecordBatch v2 batches one after the other; gives a
/// copy in which every whole batch (walked by its length field) carries the
/// CRC32C of its bytes, so that mutated inputs get past the CRC check and
/// reach the rules behind it. Bytes after the last whole batch are kept.
fn with_fixed_crcs(data: &[u8]) -> Vec<u8> {
    use crate::storage::RECORD_BATCH_HEADER_BYTES;
    let mut out = data.to_vec();
    let mut pos = 0usize;
    while let Some(len) = out.get(pos + 8..pos + 12) {
        let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        let Some(end) = usize::try_from(len)
            .ok()
            .and_then(|l| (pos + 12).checked_add(l))
        else {
            break;
        };
        if end > out.len() || end < pos + RECORD_BATCH_HEADER_BYTES {
            break;
        }
        let crc = crc32c::crc32c(&out[pos + 21..end]);
        out[pos + 17..pos + 21].copy_from_slice(&crc.to_be_bytes());
        pos = end;
    }
    out
}

/// A fresh, empty directory under the temporary directory (`TMPDIR`), removed
/// when dropped.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> std::io::Result<ScratchDir> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("fjord-fuzz-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        Ok(ScratchDir(dir))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Encodes parts as [`parts`] reads them (for building seeds and tests).
pub fn encode_parts(items: &[(u8, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (tag, bytes) in items {
        out.push(*tag);
        out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_crcs_make_a_batch_valid_again() {
        let mut b = crate::storage::batch::testutil::build_batch(0, 2, 1_000, 8);
        b[70] ^= 0xff;
        assert!(crate::storage::validate_batches(&b, usize::MAX).is_err());
        let fixed = with_fixed_crcs(&b);
        assert_eq!(
            crate::storage::validate_batches(&fixed, usize::MAX).map(|v| v.len()),
            Ok(1)
        );
        assert_eq!(with_fixed_crcs(&[1, 2, 3]), vec![1, 2, 3]);
    }

    #[test]
    fn parts_roundtrip_and_short_tail() {
        let e = encode_parts(&[(1, b"abc"), (2, b""), (3, b"xy")]);
        assert_eq!(
            parts(&e),
            vec![(1, &b"abc"[..]), (2, &b""[..]), (3, &b"xy"[..])]
        );
        let mut cut = e.clone();
        cut.truncate(e.len() - 1);
        assert_eq!(parts(&cut).last(), Some(&(3, &b"x"[..])));
        assert!(parts(&[7, 0, 0]).is_empty());
    }
}
