//! Request framing and body decoding must never panic or abort, whatever the
//! bytes: every supported API at every version.
#![no_main]

use bytes::Bytes;
use fjord::protocol::RequestFrame;
use kafka_protocol::messages::RequestKind;
use libfuzzer_sys::fuzz_target;

#[global_allocator]
static GLOBAL: fjord::alloc::WireSafeAlloc = fjord::alloc::WireSafeAlloc;

fuzz_target!(|data: &[u8]| {
    if let Ok(frame) = RequestFrame::parse(Bytes::copy_from_slice(data)) {
        if fjord::protocol::supported_range(frame.api_key).is_some() {
            let mut body = frame.body.clone();
            let _ = RequestKind::decode(frame.api_key, &mut body, frame.prefix.api_version);
        }
    }
});
