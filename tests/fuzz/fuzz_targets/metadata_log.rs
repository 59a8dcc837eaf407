//! The metadata log (quorum.log frames, snapshots, vote files) and the
//! application of its records to an image.
//! Entry point: `fjord::fuzzing::metadata_log` (see docs/fuzzing.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

// The broker's allocator: reservations sized by counts read off the wire
// cost no memory there, so they must not fail here either.
#[global_allocator]
static GLOBAL: fjord::alloc::WireSafeAlloc = fjord::alloc::WireSafeAlloc;

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = fjord::fuzzing::metadata_log(data) {
        panic!("{violation}");
    }
});
