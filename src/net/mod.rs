//! Client connections: per-shard accept on a SO_REUSEPORT port, request
//! framing, in-order responses and zero-copy writes of file regions.

pub mod connection;
pub mod handoff;
pub mod sendfile;
