//! Micro-benchmarks of the per-batch work on the produce and fetch paths.
//! Throughput is in bytes so results compare with the machine's ceilings
//! (memory bandwidth, CRC32C per core). Run: `cargo bench --bench hot_paths`.

// Benchmarks: a failed set-up should stop the run at once; criterion's
// macros generate the undocumented entry points.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fjord::storage::{validate_batches, LogConfig, PartitionLog};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions};

/// One uncompressed RecordBatch v2 of `count` records of `value_len` bytes.
fn batch(count: usize, value_len: usize) -> Bytes {
    let records: Vec<Record> = (0..count)
        .map(|i| {
            let mut r = fjord::protocol::plain_record(
                i as i64,
                1_700_000_000_000 + i as i64,
                Some(Bytes::from(format!("key-{i}"))),
                Some(Bytes::from(vec![b'x'; value_len])),
            );
            r.headers = [(
                StrBytes::from_static_str("h"),
                Some(Bytes::from_static(b"v")),
            )]
            .into_iter()
            .collect();
            r
        })
        .collect();
    let mut buf = BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    if let Err(e) = RecordBatchEncoder::encode(&mut buf, records.iter(), &opts) {
        panic!("encoding a benchmark batch failed: {e}");
    }
    buf.freeze()
}

fn bench_validate(c: &mut Criterion) {
    let mut g = c.benchmark_group("validate_batches (CRC32C + header checks)");
    for (name, count) in [("16KiB", 15usize), ("1MiB", 1000)] {
        let b = batch(count, 1000);
        g.throughput(Throughput::Bytes(b.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(name), &b, |bench, b| {
            bench.iter(|| validate_batches(b, usize::MAX).map(|v| v.len()))
        });
    }
    g.finish();
}

fn bench_crc(c: &mut Criterion) {
    let mut g = c.benchmark_group("crc32c");
    for size in [16 * 1024usize, 1 << 20] {
        let data = vec![7u8; size];
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::from_parameter(size), &data, |bench, d| {
            bench.iter(|| crc32c::crc32c(d))
        });
    }
    g.finish();
}

fn bench_append(c: &mut Criterion) {
    let mut g = c.benchmark_group("segment append (pwritev to page cache)");
    let b = batch(64, 1000);
    g.throughput(Throughput::Bytes(b.len() as u64));
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("tempdir: {e}"),
    };
    let cfg = LogConfig {
        segment_bytes: 256 << 20,
        ..LogConfig::default()
    };
    let mut log = match PartitionLog::open(&dir.path().join("bench-0"), cfg) {
        Ok(l) => l,
        Err(e) => panic!("open: {e}"),
    };
    let v = match validate_batches(&b, usize::MAX) {
        Ok(v) => v,
        Err(e) => panic!("validate: {e}"),
    };
    g.bench_function("64KiB batch", |bench| {
        bench.iter(|| log.append(&b, &v, 0, 0).map(|r| r.last_offset))
    });
    g.bench_function("read 1MiB as file regions", |bench| {
        bench.iter(|| log.read(0, 1 << 20, true).map(|r| r.bytes))
    });
    g.finish();
}

criterion_group!(benches, bench_validate, bench_crc, bench_append);
criterion_main!(benches);
