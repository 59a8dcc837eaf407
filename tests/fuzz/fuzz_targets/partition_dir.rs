//! A partition directory opened at start-up: segments, indexes, checkpoints,
//! producer snapshots, recovery, the producer state rebuild, compaction.
//! Entry point: `fjord::fuzzing::partition_dir` (see docs/fuzzing.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

// The broker's allocator: reservations sized by counts read off the wire
// cost no memory there, so they must not fail here either.
#[global_allocator]
static GLOBAL: fjord::alloc::WireSafeAlloc = fjord::alloc::WireSafeAlloc;

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = fjord::fuzzing::partition_dir(data) {
        panic!("{violation}");
    }
});
