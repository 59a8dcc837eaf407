//! Batch validation (the only per-batch work on the produce path) must reject
//! or accept any input without panicking, and accepted batches must lie inside
//! the input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(batches) = fjord::storage::validate_batches(data, 1_048_588) {
        for b in batches {
            assert!(b.position + b.size <= data.len());
        }
    }
});
