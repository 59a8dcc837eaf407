//! RecordBatch v2 validation on the produce path (client and follower rules),
//! the record walk and the LogAppendTime header rewrite.
//! Entry point: `fjord::fuzzing::record_batches` (see docs/fuzzing.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

// The broker's allocator: reservations sized by counts read off the wire
// cost no memory there, so they must not fail here either.
#[global_allocator]
static GLOBAL: fjord::alloc::WireSafeAlloc = fjord::alloc::WireSafeAlloc;

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = fjord::fuzzing::record_batches(data) {
        panic!("{violation}");
    }
});
