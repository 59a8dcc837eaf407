//! Decompression of gzip/snappy/lz4/zstd payloads and the topic rules that
//! recompress a batch to the topic's codec.
//! Entry point: `fjord::fuzzing::compressed_batches` (see docs/fuzzing.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

// The broker's allocator: reservations sized by counts read off the wire
// cost no memory there, so they must not fail here either.
#[global_allocator]
static GLOBAL: fjord::alloc::WireSafeAlloc = fjord::alloc::WireSafeAlloc;

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = fjord::fuzzing::compressed_batches(data) {
        panic!("{violation}");
    }
});
