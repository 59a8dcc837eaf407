//! Operator commands that talk the Kafka protocol to any broker
//! (`fjord groups …`), built on a small blocking client.

pub mod client;
pub mod groups;
