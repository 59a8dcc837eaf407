//! Data replication between brokers, Kafka's ISR model: followers pull
//! from leaders with Fetch ([`fetcher`]), over broker-to-broker Kafka
//! connections ([`client`]); leaders move the high watermark with their
//! followers' fetches (`shard::partition` keeps that state) and send ISR
//! changes to the controller ([`isr`]). See docs/ARCHITECTURE.md,
//! "Replication".

pub mod client;
pub mod fetch_session;
pub mod fetcher;
pub mod isr;
pub mod remote;
pub mod share_store;
