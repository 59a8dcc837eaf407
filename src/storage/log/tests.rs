//! Unit tests of the partition log (append, read, roll, recovery on open,
//! truncation), on temporary directories.

use super::*;
use crate::error::KafkaCode;
use crate::storage::batch::testutil::build_batch;
use crate::storage::batch::validate_batches;
use crate::storage::segment::segment_file_name;
use std::os::unix::fs::FileExt;

pub fn cfg() -> LogConfig {
    LogConfig::default()
}

/// Appends one call made of batches with the given record counts.
pub fn append_batches(
    log: &mut PartitionLog,
    counts: &[i32],
    base_ts: i64,
    value_len: usize,
    now: i64,
) -> AppendResult {
    let mut buf = Vec::new();
    for (i, n) in counts.iter().enumerate() {
        // Producers send base offset 0; the broker rewrites it.
        buf.extend(build_batch(0, *n, base_ts + i as i64 * 10, value_len));
    }
    let v = validate_batches(&buf, usize::MAX).unwrap();
    log.append(&buf, &v, 0, now).unwrap()
}

#[test]
fn append_stamps_leader_epoch_and_keeps_crc_valid() {
    for lat in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut c = cfg();
        if lat {
            c.message_timestamp_type = TimestampType::LogAppendTime;
        }
        let mut log = PartitionLog::open(dir.path(), c).unwrap();
        let mut buf = build_batch(0, 3, 1_000, 10);
        buf[12..16].copy_from_slice(&(-1i32).to_be_bytes());
        let v = validate_batches(&buf, usize::MAX).unwrap();
        log.append(&buf, &v, 7, 5_000).unwrap();
        let path = dir.path().join(segment_file_name(0, "log"));
        let headers = file_batches(&path);
        assert_eq!(headers[0].partition_leader_epoch, 7);
        assert_eq!(
            headers[0].max_timestamp,
            if lat { 5_000 } else { headers[0].max_timestamp }
        );
    }
}

#[test]
fn nowait_read_of_an_evicted_segment_warms_to_the_blocking_result() {
    use crate::storage::cache;
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), cfg()).unwrap();
    for _ in 0..40 {
        append_batches(&mut log, &[5, 5, 5, 5], 1_000, 2_000, 1_000);
    }
    let want = log.read(77, 300_000, true).unwrap();
    assert!(want.bytes > 0);
    let same = |got: &ReadResult| {
        assert_eq!(got.regions.len(), 1);
        assert_eq!(got.regions[0].position, want.regions[0].position);
        assert_eq!(got.bytes, want.bytes);
        assert_eq!(got.end_offset, want.end_offset);
        assert_eq!(got.first_batch_bytes, want.first_batch_bytes);
    };
    let file = log.active_log_file();
    let size = file.metadata().unwrap().len();
    let hw = log.high_watermark();
    // POSIX_FADV_DONTNEED is advice: under load the kernel may keep some
    // pages (a page still in another CPU's LRU batch), and a missed
    // RWF_NOWAIT probe starts readahead. So evict again until a NoWait read
    // meets an uncached header; every read that answers must equal the
    // blocking one whatever the cache held.
    for _ in 0..20 {
        cache::evict(&file).unwrap();
        if cache::cached_state(&file, 0, size).unwrap() == cache::CacheState::Cached {
            eprintln!("SKIP: the kernel kept the pages after POSIX_FADV_DONTNEED");
            return;
        }
        let mut not_cached = 0;
        let got = loop {
            match log.read_bounded_in(77, 300_000, true, hw, ReadMode::NoWait) {
                Ok(r) => break r,
                Err(StorageError::NotCached {
                    file,
                    position,
                    len,
                    ..
                }) => {
                    not_cached += 1;
                    assert!(not_cached < 50, "warming makes no progress");
                    assert!(len > 0 && position + len <= size);
                    cache::warm_blocking(&file, position, len).unwrap();
                }
                Err(e) => panic!("{e}"),
            }
        };
        same(&got);
        if not_cached > 0 {
            return;
        }
    }
    eprintln!("SKIP: 20 evictions left every header of the read in the page cache");
}

/// All batches of one `.log` file (validating CRCs).
pub fn file_batches(path: &Path) -> Vec<BatchHeader> {
    let bytes = std::fs::read(path).unwrap();
    if bytes.is_empty() {
        return Vec::new();
    }
    validate_batches(&bytes, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|b| b.header)
        .collect()
}

pub fn region_bytes(r: &ReadResult) -> Vec<u8> {
    let mut out = Vec::new();
    for reg in &r.regions {
        let mut b = vec![0u8; reg.len as usize];
        reg.file.read_exact_at(&mut b, reg.position).unwrap();
        out.extend(b);
    }
    out
}

pub fn read_headers(log: &PartitionLog, off: i64, max: u64, min_one: bool) -> Vec<BatchHeader> {
    let r = log.read(off, max, min_one).unwrap();
    let bytes = region_bytes(&r);
    assert_eq!(bytes.len() as u64, r.bytes);
    if bytes.is_empty() {
        return Vec::new();
    }
    validate_batches(&bytes, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|b| b.header)
        .collect()
}

#[test]
fn append_assigns_contiguous_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), cfg()).unwrap();
    assert_eq!(log.log_end_offset(), 0);
    let r1 = append_batches(&mut log, &[3], 1000, 5, 1);
    assert_eq!((r1.base_offset, r1.last_offset, r1.records), (0, 2, 3));
    assert_eq!(r1.log_append_time, -1);
    let r2 = append_batches(&mut log, &[2, 5], 1000, 5, 2);
    assert_eq!((r2.base_offset, r2.last_offset, r2.records), (3, 9, 7));
    let r3 = append_batches(&mut log, &[1], 1000, 5, 3);
    assert_eq!((r3.base_offset, r3.last_offset), (10, 10));
    assert_eq!(log.log_end_offset(), 11);
    assert_eq!(log.high_watermark(), 11);
    assert_eq!(log.log_start_offset(), 0);
    let hs = file_batches(&dir.path().join(segment_file_name(0, "log")));
    let bases: Vec<i64> = hs.iter().map(|h| h.base_offset).collect();
    assert_eq!(bases, vec![0, 3, 5, 10]);
    let lasts: Vec<i64> = hs.iter().map(|h| h.last_offset()).collect();
    assert_eq!(lasts, vec![2, 4, 9, 10]);
    assert_eq!(log.size_bytes(), r1.bytes + r2.bytes + r3.bytes);
    // Empty append is a no-op.
    let r = log.append(&[], &[], 0, 4).unwrap();
    assert_eq!((r.base_offset, r.last_offset, r.bytes), (-1, -1, 0));
    assert_eq!(log.log_end_offset(), 11);
}

#[test]
fn append_rejects_batches_outside_records() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), cfg()).unwrap();
    let b = build_batch(0, 2, 0, 5);
    let v = validate_batches(&b, usize::MAX).unwrap();
    let e = log.append(&b[..b.len() - 1], &v, 0, 0).unwrap_err();
    assert_eq!(e.code(), 2);
    assert_eq!(log.log_end_offset(), 0);
    assert_eq!(log.size_bytes(), 0);
}

#[test]
fn read_whole_batches_max_bytes_and_kip74() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), cfg()).unwrap();
    for _ in 0..5 {
        append_batches(&mut log, &[4], 1000, 20, 0);
    }
    let s = log.size_bytes() / 5; // all batches have the same size
    assert_eq!(read_headers(&log, 0, u64::MAX, false).len(), 5);
    let two = read_headers(&log, 0, 2 * s + s / 2, false);
    assert_eq!(
        two.iter().map(|h| h.base_offset).collect::<Vec<_>>(),
        vec![0, 4]
    );
    let exact = read_headers(&log, 0, 3 * s, false);
    assert_eq!(exact.len(), 3);
    // Offset inside the third batch: starts at that batch.
    let mid = read_headers(&log, 10, 2 * s, false);
    assert_eq!(
        mid.iter().map(|h| h.base_offset).collect::<Vec<_>>(),
        vec![8, 12]
    );
    // KIP-74: first batch even if larger than max_bytes, but not a second.
    let one = read_headers(&log, 5, s - 1, true);
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].base_offset, 4);
    assert!(read_headers(&log, 5, s - 1, false).is_empty());
    assert_eq!(read_headers(&log, 5, 1, true).len(), 1);
    // Read at LEO is empty.
    let r = log.read(20, 1000, true).unwrap();
    assert!(r.regions.is_empty());
    assert_eq!((r.bytes, r.log_end_offset, r.high_watermark), (0, 20, 20));
    // Out of range.
    match log.read(21, 1000, true) {
        Err(StorageError::OffsetOutOfRange {
            requested,
            log_start_offset,
            log_end_offset,
        }) => assert_eq!((requested, log_start_offset, log_end_offset), (21, 0, 20)),
        other => panic!("{other:?}"),
    }
    let e = log.read(-1, 1000, true).unwrap_err();
    assert_eq!(e.code(), 1);
}

#[test]
fn big_first_batch_then_small_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), cfg()).unwrap();
    append_batches(&mut log, &[10], 0, 500, 0);
    append_batches(&mut log, &[1], 0, 1, 0);
    let hs = read_headers(&log, 0, 100, true);
    assert_eq!(hs.len(), 1);
    assert_eq!(hs[0].records_count, 10);
}

/// Reads the whole log like a consumer; gives every batch header.
pub fn consume_all(log: &PartitionLog, max_bytes: u64) -> Vec<BatchHeader> {
    let mut out = Vec::new();
    let mut off = log.log_start_offset();
    while off < log.log_end_offset() {
        let hs = read_headers(log, off, max_bytes, true);
        assert!(!hs.is_empty(), "no progress at {off}");
        assert!(hs[0].base_offset <= off && off <= hs[0].last_offset());
        off = hs.last().unwrap().last_offset() + 1;
        out.extend(hs);
    }
    out
}

#[test]
fn segment_roll_and_reads_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let one = build_batch(0, 2, 0, 30).len() as u64;
    let config = LogConfig {
        segment_bytes: 3 * one,
        ..cfg()
    };
    let mut log = PartitionLog::open(dir.path(), config).unwrap();
    for _ in 0..10 {
        append_batches(&mut log, &[2], 0, 30, 0);
    }
    assert_eq!(log.segment_count(), 4);
    assert_eq!(log.segment_base_offsets(), vec![0, 6, 12, 18]);
    for base in [0, 6, 12, 18] {
        for ext in ["log", "index", "timeindex"] {
            assert!(dir.path().join(segment_file_name(base, ext)).exists());
        }
    }
    assert_eq!(
        file_batches(&dir.path().join(segment_file_name(6, "log"))).len(),
        3
    );
    // A read stops at the end of its segment.
    let hs = read_headers(&log, 2, u64::MAX, true);
    assert_eq!(
        hs.iter().map(|h| h.base_offset).collect::<Vec<_>>(),
        vec![2, 4]
    );
    let all = consume_all(&log, u64::MAX);
    assert_eq!(all.len(), 10);
    for (i, h) in all.iter().enumerate() {
        assert_eq!(h.base_offset, 2 * i as i64);
    }
    for o in 0..20 {
        let hs = read_headers(&log, o, 1, true);
        assert_eq!(hs.len(), 1);
        assert_eq!(hs[0].base_offset, o - o % 2);
    }
    // A batch bigger than segment_bytes goes into an empty segment alone.
    append_batches(&mut log, &[50], 0, 30, 0);
    assert_eq!(log.segment_count(), 5);
    append_batches(&mut log, &[1], 0, 1, 0);
    assert_eq!(log.segment_count(), 6);
}

/// Checks every `.index` entry of a segment against the `.log`: entry
/// (rel, pos) must be the start of the batch whose last offset is base + rel.
pub fn check_index_file(dir: &Path, base: i64) -> usize {
    let idx = std::fs::read(dir.join(segment_file_name(base, "index"))).unwrap();
    assert_eq!(idx.len() % 8, 0);
    let log = std::fs::read(dir.join(segment_file_name(base, "log"))).unwrap();
    for e in idx.chunks_exact(8) {
        let rel = u32::from_be_bytes(e[..4].try_into().unwrap()) as i64;
        let pos = u32::from_be_bytes(e[4..].try_into().unwrap()) as usize;
        let h = BatchHeader::parse(&log[pos..]).unwrap();
        assert_eq!(h.last_offset(), base + rel);
    }
    idx.len() / 8
}

#[test]
fn index_lookups_after_many_appends() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        index_interval_bytes: 100,
        ..cfg()
    };
    let mut log = PartitionLog::open(dir.path(), config).unwrap();
    for i in 0..300 {
        let n = 1 + (i % 7);
        let counts: Vec<i32> = (0..1 + i % 3).map(|_| n).collect();
        append_batches(&mut log, &counts, 0, (i % 50) as usize, 0);
    }
    let entries = check_index_file(dir.path(), 0);
    assert!(entries > 100, "{entries}");
    let all = consume_all(&log, u64::MAX);
    for h in &all {
        for o in [h.base_offset, h.last_offset()] {
            let got = read_headers(&log, o, 1, true);
            assert_eq!(got[0].base_offset, h.base_offset, "offset {o}");
        }
    }
    // Bounded reads give whole batches only.
    let mut off = 0;
    while off < log.log_end_offset() {
        let r = log.read(off, 700, true).unwrap();
        let hs = read_headers(&log, off, 700, true);
        assert!(r.bytes <= 700 || hs.len() == 1);
        off = hs.last().unwrap().last_offset() + 1;
    }
}

#[test]
fn index_entry_placement_follows_kafka() {
    // Kafka: an entry is added when MORE than index.interval.bytes were
    // appended since the last one; it holds (batch last offset, batch start).
    let dir = tempfile::tempdir().unwrap();
    let s = build_batch(0, 2, 0, 10).len() as u64;
    let config = LogConfig {
        index_interval_bytes: s as u32,
        ..cfg()
    };
    let mut log = PartitionLog::open(dir.path(), config).unwrap();
    for _ in 0..6 {
        append_batches(&mut log, &[2], 0, 10, 0);
    }
    let idx = std::fs::read(dir.path().join(segment_file_name(0, "index"))).unwrap();
    let mut expect = Vec::new();
    for (last, pos) in [(5u32, 2 * s as u32), (9, 4 * s as u32)] {
        expect.extend_from_slice(&last.to_be_bytes());
        expect.extend_from_slice(&pos.to_be_bytes());
    }
    assert_eq!(idx, expect);
    let t = std::fs::read(dir.path().join(segment_file_name(0, "timeindex"))).unwrap();
    let mut texpect = Vec::new();
    texpect.extend_from_slice(&1i64.to_be_bytes());
    texpect.extend_from_slice(&1u32.to_be_bytes());
    // Timestamps never increase after the first batch: one entry only,
    // written at the first index moment with (max ts so far, its offset).
    assert_eq!(t, texpect);
}

#[test]
fn offset_for_timestamp_matches_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        index_interval_bytes: 150,
        segment_bytes: 2000,
        ..cfg()
    };
    let mut log = PartitionLog::open(dir.path(), config).unwrap();
    assert_eq!(log.offset_for_timestamp(0).unwrap(), None);
    assert_eq!(log.max_timestamp_offset().unwrap(), None);
    for i in 0..60i64 {
        append_batches(&mut log, &[3], 1000 + i * 100, 10, 0);
    }
    assert!(log.segment_count() > 2);
    let all = consume_all(&log, u64::MAX);
    let brute = |ts: i64| {
        all.iter()
            .find(|h| h.max_timestamp >= ts)
            .map(|h| (h.base_offset, h.max_timestamp))
    };
    for ts in (900..7100).step_by(7) {
        assert_eq!(log.offset_for_timestamp(ts).unwrap(), brute(ts), "ts {ts}");
    }
    assert_eq!(log.offset_for_timestamp(1000).unwrap(), Some((0, 1002)));
    assert_eq!(log.offset_for_timestamp(1103).unwrap(), Some((6, 1202)));
    assert_eq!(log.offset_for_timestamp(99_999).unwrap(), None);
    assert_eq!(log.max_timestamp_offset().unwrap(), Some((179, 6902)));
}

#[test]
fn max_timestamp_offset_picks_largest() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 300,
        ..cfg()
    };
    let mut log = PartitionLog::open(dir.path(), config.clone()).unwrap();
    append_batches(&mut log, &[2], 100, 10, 0); // 0..1, max 101
    append_batches(&mut log, &[2], 5000, 10, 0); // 2..3, max 5001
    append_batches(&mut log, &[2], 200, 10, 0); // 4..5
    append_batches(&mut log, &[2], 300, 10, 0); // 6..7
    assert!(log.segment_count() > 1);
    assert_eq!(log.max_timestamp_offset().unwrap(), Some((3, 5001)));
    assert_eq!(log.offset_for_timestamp(150).unwrap(), Some((2, 5001)));
    log.close().unwrap();
    let log = PartitionLog::open(dir.path(), config).unwrap();
    assert_eq!(log.max_timestamp_offset().unwrap(), Some((3, 5001)));
    assert_eq!(log.offset_for_timestamp(150).unwrap(), Some((2, 5001)));
}

#[test]
fn reopen_after_close_keeps_leo() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 500,
        index_interval_bytes: 50,
        ..cfg()
    };
    let mut log = PartitionLog::open(dir.path(), config.clone()).unwrap();
    for _ in 0..20 {
        append_batches(&mut log, &[3, 2], 0, 10, 0);
    }
    let segs = log.segment_count();
    let before = consume_all(&log, 1000);
    log.close().unwrap();
    assert!(dir.path().join(".clean_shutdown").exists());
    let mut log = PartitionLog::open(dir.path(), config.clone()).unwrap();
    assert!(!dir.path().join(".clean_shutdown").exists());
    assert_eq!(log.log_end_offset(), 100);
    assert_eq!(log.high_watermark(), 100);
    assert_eq!(log.log_start_offset(), 0);
    assert_eq!(log.segment_count(), segs);
    assert_eq!(consume_all(&log, 1000), before);
    let r = append_batches(&mut log, &[4], 0, 10, 0);
    assert_eq!(r.base_offset, 100);
    assert_eq!(log.log_end_offset(), 104);
    for b in log.segment_base_offsets() {
        check_index_file(dir.path(), b);
    }
}

#[test]
fn log_append_time_rewrites_max_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        ..cfg()
    };
    let mut log = PartitionLog::open(dir.path(), config).unwrap();
    let r = append_batches(&mut log, &[3, 2], 1000, 10, 5555);
    assert_eq!(r.log_append_time, 5555);
    append_batches(&mut log, &[1], 1000, 10, 6666);
    // file_batches validates the CRC of every stored batch.
    let hs = file_batches(&dir.path().join(segment_file_name(0, "log")));
    assert_eq!(hs.len(), 3);
    assert_eq!(hs[0].max_timestamp, 5555);
    assert_eq!(hs[1].max_timestamp, 5555);
    assert_eq!(hs[2].max_timestamp, 6666);
    assert_eq!(hs[0].base_timestamp, 1000);
    assert_eq!(hs[1].base_offset, 3);
    assert!(hs
        .iter()
        .all(|h| h.timestamp_type() == TimestampType::LogAppendTime));
    assert_eq!(log.offset_for_timestamp(6000).unwrap(), Some((5, 6666)));
    assert_eq!(log.max_timestamp_offset().unwrap(), Some((5, 6666)));
}

#[test]
fn time_and_index_based_rolls() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_ms: Some(1000),
        ..cfg()
    };
    let mut log = PartitionLog::open(dir.path(), config).unwrap();
    append_batches(&mut log, &[1], 0, 1, 10_000);
    append_batches(&mut log, &[1], 0, 1, 10_900);
    assert_eq!(log.segment_count(), 1);
    append_batches(&mut log, &[1], 0, 1, 11_001);
    assert_eq!(log.segment_count(), 2);
    assert_eq!(log.segment_base_offsets(), vec![0, 2]);

    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        index_interval_bytes: 1,
        segment_index_bytes: 24, // 3 offset entries, 2 time entries
        ..cfg()
    };
    let mut log = PartitionLog::open(dir.path(), config).unwrap();
    for i in 0..10 {
        append_batches(&mut log, &[1], i * 10, 1, 0);
    }
    assert!(log.segment_count() >= 3, "{}", log.segment_count());
    assert_eq!(consume_all(&log, u64::MAX).len(), 10);
}

#[test]
fn segment_jitter_rolls_earlier() {
    let config = LogConfig {
        segment_ms: Some(1000),
        segment_jitter_ms: 5000,
        ..cfg()
    };
    // Drawn below min(segment.jitter.ms, segment.ms).
    for _ in 0..200 {
        assert!((0..1000).contains(&config.random_segment_jitter()));
    }
    let none = LogConfig {
        segment_jitter_ms: 0,
        ..config.clone()
    };
    assert_eq!(none.random_segment_jitter(), 0);
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), config).unwrap();
    log.active.roll_jitter_ms = 400;
    append_batches(&mut log, &[1], 0, 1, 10_000);
    append_batches(&mut log, &[1], 0, 1, 10_600);
    assert_eq!(log.segment_count(), 1, "600 ms is within 1000 - 400");
    append_batches(&mut log, &[1], 0, 1, 10_601);
    assert_eq!(log.segment_count(), 2, "rolled past 1000 - 400 ms");
}

#[test]
fn preallocated_segments_keep_their_length() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        preallocate: true,
        segment_bytes: 1 << 20,
        ..cfg()
    };
    let mut log = PartitionLog::open(dir.path(), config).unwrap();
    append_batches(&mut log, &[1], 0, 1, 0);
    let path = dir.path().join("00000000000000000000.log");
    let m = std::fs::metadata(&path).unwrap();
    assert!(m.len() < 4096);
    assert!(
        m.blocks() * 512 >= 1 << 20,
        "{} allocated",
        m.blocks() * 512
    );
    log.roll().unwrap();
    let m = std::fs::metadata(&path).unwrap();
    assert!(
        m.blocks() * 512 <= 8192,
        "{} allocated after the roll",
        m.blocks() * 512
    );
    assert_eq!(consume_all(&log, u64::MAX).len(), 1);
}

#[test]
fn flush_and_active_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), cfg()).unwrap();
    append_batches(&mut log, &[1], 0, 1, 0);
    log.flush().unwrap();
    let f = log.active_log_file();
    assert_eq!(f.metadata().unwrap().len(), log.size_bytes());
    f.sync_data().unwrap();
}

/// Appends what `log` holds from `from` on to `follower`, as a replica
/// fetcher does: the fetched bytes, reserved as they are, written, committed.
fn replicate(
    log: &PartitionLog,
    follower: &mut PartitionLog,
    from: i64,
) -> Result<AppendResult, StorageError> {
    let r = log.read_bounded(from, u64::MAX, true, log.log_end_offset())?;
    let mut bytes = Vec::new();
    for region in &r.regions {
        let mut b = vec![0u8; region.len as usize];
        region.file.read_exact_at(&mut b, region.position).unwrap();
        bytes.extend(b);
    }
    let bytes = bytes::Bytes::from(bytes);
    let v = validate_batches(&bytes, usize::MAX).unwrap();
    let (write, ticket) = follower.reserve_replica(&bytes, &v, 10_000)?;
    if let Some(w) = write {
        w.write_now().unwrap();
    }
    for w in follower.commit(&ticket)? {
        w.write_now().unwrap();
    }
    Ok(ticket.result)
}

#[test]
fn a_replica_append_copies_the_leaders_batches_byte_for_byte() {
    let (ld, fd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut leader = PartitionLog::open(ld.path(), cfg()).unwrap();
    let mut follower = PartitionLog::open(fd.path(), cfg()).unwrap();
    follower.set_replicated(true);
    append_batches(&mut leader, &[3, 1, 5], 1_000, 20, 2_000);
    let r = replicate(&leader, &mut follower, 0).unwrap();
    assert_eq!((r.base_offset, r.last_offset), (0, 8));
    append_batches(&mut leader, &[2], 2_000, 20, 3_000);
    replicate(&leader, &mut follower, 9).unwrap();
    assert_eq!(follower.log_end_offset(), leader.log_end_offset());
    let name = segment_file_name(0, "log");
    assert_eq!(
        std::fs::read(ld.path().join(&name)).unwrap(),
        std::fs::read(fd.path().join(&name)).unwrap(),
        "the follower's segment is the leader's, byte for byte"
    );
    // The high watermark of a replicated log moves only when set.
    assert_eq!(follower.high_watermark(), 0);
    assert_eq!(follower.set_high_watermark(7), 7);
    assert_eq!(follower.set_high_watermark(99), 11, "at most the LEO");
    // Out of step: the same batches again.
    match replicate(&leader, &mut follower, 9) {
        Err(StorageError::Inconsistent {
            what:
                crate::storage::Inconsistency::ReplicaOutOfStep {
                    base_offset: 9,
                    expected: 11,
                },
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    // One replica again: the high watermark is the LEO.
    follower.set_replicated(false);
    assert_eq!(follower.high_watermark(), 11);
}

/// A leader's compacted log has gaps (whole batches the cleaner removed):
/// the follower copies across them, its LEO jumping as the leader's does
/// (a follower that refused them stopped fetching that partition for good).
#[test]
fn a_replica_append_crosses_a_compaction_gap() {
    let fd = tempfile::tempdir().unwrap();
    let mut follower = PartitionLog::open(fd.path(), cfg()).unwrap();
    follower.set_replicated(true);
    // The leader's batches at 0-2 and 10-11: 3..=9 were compacted away.
    let mut bytes = build_batch(0, 3, 1_000, 10);
    bytes.extend(build_batch(10, 2, 2_000, 10));
    let bytes = bytes::Bytes::from(bytes);
    let v = validate_batches(&bytes, usize::MAX).unwrap();
    let (w, ticket) = follower.reserve_replica(&bytes, &v, 0).unwrap();
    w.unwrap().write_now().unwrap();
    for w in follower.commit(&ticket).unwrap() {
        w.write_now().unwrap();
    }
    assert_eq!(follower.log_end_offset(), 12);
    // The next fetch starts past the gap too.
    let next = bytes::Bytes::from(build_batch(20, 1, 3_000, 10));
    let v = validate_batches(&next, usize::MAX).unwrap();
    let (w, ticket) = follower.reserve_replica(&next, &v, 0).unwrap();
    w.unwrap().write_now().unwrap();
    for w in follower.commit(&ticket).unwrap() {
        w.write_now().unwrap();
    }
    assert_eq!(follower.log_end_offset(), 21);
    follower.set_high_watermark(21);
    // A read inside a gap gives the batch after it.
    let bases: Vec<i64> = read_headers(&follower, 5, u64::MAX, true)
        .iter()
        .map(|h| h.base_offset)
        .collect();
    assert_eq!(bases, [10, 20]);
    // Below the LEO is still out of step.
    let old = bytes::Bytes::from(build_batch(15, 1, 3_000, 10));
    let v = validate_batches(&old, usize::MAX).unwrap();
    assert!(matches!(
        follower.reserve_replica(&old, &v, 0),
        Err(StorageError::Inconsistent {
            what: crate::storage::Inconsistency::ReplicaOutOfStep { .. },
            ..
        })
    ));
    // Reopened, the log keeps its offsets.
    drop(follower);
    let follower = PartitionLog::open(fd.path(), cfg()).unwrap();
    assert_eq!(follower.log_end_offset(), 21);
}

/// A clean close with appends reserved (and written) but not committed —
/// a replica fetcher's append in flight at shutdown — cuts them off and
/// still marks the log clean: the next open ends at the committed LEO.
#[test]
fn close_cuts_uncommitted_appends_and_marks_the_log_clean() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), cfg()).unwrap();
    append_batches(&mut log, &[3, 2], 0, 10, 0);
    let buf = bytes::Bytes::from(build_batch(0, 4, 100, 10));
    let v = validate_batches(&buf, usize::MAX).unwrap();
    let (write, _ticket) = log.reserve(&buf, &v, 1, 0).unwrap();
    write.unwrap().write_now().unwrap();
    assert!(log.has_pending());
    log.close().unwrap();
    assert!(dir.path().join(".clean_shutdown").exists());
    let log = PartitionLog::open(dir.path(), cfg()).unwrap();
    assert_eq!(log.log_end_offset(), 5);
    assert_eq!(log.latest_epoch(), Some(0));
}
