//! Produce v0-v2 bodies and their legacy (magic 0/1) message sets: the
//! UNSUPPORTED_VERSION answer, Produce validation, the protocol crate's
//! record decoder.
//! Entry point: `fjord::fuzzing::legacy_produce` (see docs/fuzzing.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

// The broker's allocator: reservations sized by counts read off the wire
// cost no memory there, so they must not fail here either.
#[global_allocator]
static GLOBAL: fjord::alloc::WireSafeAlloc = fjord::alloc::WireSafeAlloc;

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = fjord::fuzzing::legacy_produce(data) {
        panic!("{violation}");
    }
});
