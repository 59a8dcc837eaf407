//! Each checkpoint and metadata file reader: leader-epoch-checkpoint, offset
//! checkpoints, partition.metadata, meta.properties, producer snapshots,
//! .txnindex, .index, .timeindex.
//! Entry point: `fjord::fuzzing::checkpoint_files` (see docs/fuzzing.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

// The broker's allocator: reservations sized by counts read off the wire
// cost no memory there, so they must not fail here either.
#[global_allocator]
static GLOBAL: fjord::alloc::WireSafeAlloc = fjord::alloc::WireSafeAlloc;

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = fjord::fuzzing::checkpoint_files(data) {
        panic!("{violation}");
    }
});
