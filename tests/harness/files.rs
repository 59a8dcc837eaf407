//! A partition's segment files as the data directory holds them, read
//! from their batch headers (for the scenarios that damage or check files
//! while the node is stopped).

use std::path::{Path, PathBuf};

/// `(position, base offset, record count, length)` of every whole batch of
/// a segment file, read from its headers.
pub fn segment_batches(path: &Path) -> Vec<(usize, i64, i64, usize)> {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos + 61 <= data.len() {
        let at = |i: usize, n: usize| &data[pos + i..pos + i + n];
        let base = i64::from_be_bytes(at(0, 8).try_into().expect("8 bytes"));
        let len = i32::from_be_bytes(at(8, 4).try_into().expect("4 bytes")) as usize + 12;
        if pos + len > data.len() {
            break;
        }
        let last_delta = i32::from_be_bytes(at(23, 4).try_into().expect("4 bytes")) as i64;
        out.push((pos, base, last_delta + 1, len));
        pos += len;
    }
    out
}

/// `.log` segment files of a partition directory, by base offset.
pub fn segment_files(dir: &Path) -> Vec<(i64, PathBuf)> {
    let mut v: Vec<(i64, PathBuf)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(|e| {
            let e = e.expect("dir entry");
            let name = e.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".log")?;
            let digits = stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit());
            digits.then(|| (stem.parse().expect("digits"), e.path()))
        })
        .collect();
    v.sort();
    v
}

/// Files of a partition directory still waiting for removal (`*.deleted`).
pub fn pending_deletes(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("read partition dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".deleted"))
        .collect()
}

/// Checks every `.log` file of a partition directory: each batch has magic
/// 2 and a valid CRC32C, the file ends at a batch boundary, offsets never
/// go back. Gives the number of batches.
pub fn assert_segments_intact(dir: &Path) -> usize {
    let mut next = i64::MIN;
    let mut total = 0;
    for (base, path) in segment_files(dir) {
        let data = std::fs::read(&path).expect("read segment");
        let batches = segment_batches(&path);
        let end = batches.last().map(|b| b.0 + b.3).unwrap_or(0);
        assert_eq!(end, data.len(), "{} ends inside a batch", path.display());
        for &(pos, offset, count, len) in &batches {
            let b = &data[pos..pos + len];
            assert_eq!(b[16], 2, "{} @{pos}: magic", path.display());
            let stored = u32::from_be_bytes(b[17..21].try_into().expect("4 bytes"));
            assert_eq!(
                stored,
                crc32c::crc32c(&b[21..]),
                "{} @{pos}: CRC32C",
                path.display()
            );
            assert!(
                offset >= base && offset >= next,
                "{} @{pos}: offset",
                path.display()
            );
            next = offset + count;
            total += 1;
        }
    }
    total
}
