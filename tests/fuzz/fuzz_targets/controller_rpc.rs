//! What a socket on the controller listener can carry: Raft RPCs, requests
//! for the active controller (decided), log chunks for broker-only nodes.
//! Entry point: `fjord::fuzzing::controller_rpc` (see docs/fuzzing.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

// The broker's allocator: reservations sized by counts read off the wire
// cost no memory there, so they must not fail here either.
#[global_allocator]
static GLOBAL: fjord::alloc::WireSafeAlloc = fjord::alloc::WireSafeAlloc;

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = fjord::fuzzing::controller_rpc(data) {
        panic!("{violation}");
    }
});
