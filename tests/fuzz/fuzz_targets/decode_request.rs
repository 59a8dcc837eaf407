//! Request framing (as the connection cuts frames) and body decoding of every
//! served API at every served version, the answers to unserved versions, and
//! the validation of Produce records.
//! Entry point: `fjord::fuzzing::request_stream` (see docs/fuzzing.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

// The broker's allocator: reservations sized by counts read off the wire
// cost no memory there, so they must not fail here either.
#[global_allocator]
static GLOBAL: fjord::alloc::WireSafeAlloc = fjord::alloc::WireSafeAlloc;

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = fjord::fuzzing::request_stream(data) {
        panic!("{violation}");
    }
});
