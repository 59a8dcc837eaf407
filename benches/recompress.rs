//! The cost of broker-side recompression (topic `compression.type` other
//! than `producer`) per batch, next to the record walk that every
//! uncompressed produce now does for the timestamp window. Throughput is in
//! uncompressed record bytes. Run: `cargo bench --bench recompress`
//! (a short run: `-- --warm-up-time 1 --measurement-time 3`).

// Benchmarks: a failed set-up should stop the run at once; criterion's
// macros generate the undocumented entry points.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fjord::storage::recompress::{recompress, summarize_records};
use fjord::storage::{BatchHeader, Codec, TargetCodec, RECORD_BATCH_HEADER_BYTES};
use kafka_protocol::records::{Compression, RecordBatchEncoder, RecordEncodeOptions};

/// One RecordBatch v2 of ~16 KiB of loosely repetitive text, as JSON-ish
/// application records are, with the given codec.
fn batch(compression: Compression) -> Bytes {
    let records: Vec<_> = (0..64)
        .map(|i| {
            let value = format!(
                "{{\"id\":{i},\"user\":\"user-{}\",\"event\":\"click\",\"path\":\"/items/{}\",\"pad\":\"{}\"}}",
                i * 7919 % 1000,
                i * 104_729 % 5000,
                "abcdefghij".repeat(20)
            );
            fjord::protocol::plain_record(
                i,
                1_700_000_000_000 + i,
                Some(Bytes::from(format!("key-{i}"))),
                Some(Bytes::from(value)),
            )
        })
        .collect();
    let mut buf = BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression,
    };
    if let Err(e) = RecordBatchEncoder::encode(&mut buf, records.iter(), &opts) {
        panic!("encoding a benchmark batch failed: {e}");
    }
    buf.freeze()
}

fn bench_recompress(c: &mut Criterion) {
    let plain = batch(Compression::None);
    let header = match BatchHeader::parse(&plain) {
        Ok(h) => h,
        Err(e) => panic!("benchmark batch: {e}"),
    };
    let mut g = c.benchmark_group("recompress 16KiB batch");
    g.throughput(Throughput::Bytes(plain.len() as u64));
    g.bench_function("record walk (uncompressed, timestamp window)", |b| {
        b.iter(|| {
            summarize_records(
                &plain[RECORD_BATCH_HEADER_BYTES..],
                header.records_count,
                header.base_timestamp,
            )
        })
    });
    for (name, target) in [
        ("none -> snappy", TargetCodec::new(Codec::Snappy, 0)),
        ("none -> lz4 (level 9)", TargetCodec::new(Codec::Lz4, 9)),
        ("none -> zstd (level 3)", TargetCodec::new(Codec::Zstd, 3)),
        ("none -> gzip (level 6)", TargetCodec::new(Codec::Gzip, -1)),
    ] {
        g.bench_with_input(BenchmarkId::from_parameter(name), &target, |b, t| {
            b.iter(|| recompress(&plain, &header, *t, usize::MAX))
        });
    }
    let gz = batch(Compression::Gzip);
    let gz_header = match BatchHeader::parse(&gz) {
        Ok(h) => h,
        Err(e) => panic!("benchmark batch: {e}"),
    };
    g.bench_function("gzip -> snappy", |b| {
        b.iter(|| {
            recompress(
                &gz,
                &gz_header,
                TargetCodec::new(Codec::Snappy, 0),
                usize::MAX,
            )
        })
    });
    g.finish();
}

criterion_group!(benches, bench_recompress);
criterion_main!(benches);
