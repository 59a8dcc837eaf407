//! The records of __consumer_offsets and __transaction_state as the group
//! and transaction coordinators load them.
//! Entry point: `fjord::fuzzing::coordinator_records` (see docs/fuzzing.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

// The broker's allocator: reservations sized by counts read off the wire
// cost no memory there, so they must not fail here either.
#[global_allocator]
static GLOBAL: fjord::alloc::WireSafeAlloc = fjord::alloc::WireSafeAlloc;

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = fjord::fuzzing::coordinator_records(data) {
        panic!("{violation}");
    }
});
