//! What an unauthenticated client can send a SASL listener: PLAIN, SCRAM
//! and OAUTHBEARER tokens through the broker's exchanges, and the JAAS and
//! principal-rule parsers. Entry point: `fjord::fuzzing::sasl_tokens` (see
//! docs/fuzzing.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[global_allocator]
static GLOBAL: fjord::alloc::WireSafeAlloc = fjord::alloc::WireSafeAlloc;

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = fjord::fuzzing::sasl_tokens(data) {
        panic!("{violation}");
    }
});
