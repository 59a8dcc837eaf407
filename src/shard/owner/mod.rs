//! The partition owner's typed operations for the handlers: each takes
//! what a request asks of one partition, makes its own cross-shard call to
//! the shard that owns it, and gives a typed answer or a typed error (mapped
//! to Kafka codes only in `crate::error`). Handlers decode, route, call these
//! and encode; they read no log themselves.

pub mod fetch;
pub mod offsets;
pub mod produce;
pub mod share;
pub mod share_dlq;
pub mod share_persist;
