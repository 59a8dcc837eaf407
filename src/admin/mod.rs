//! Operator commands that talk the Kafka protocol to any broker
//! (`fjord groups | topics | configs | acls | users | cluster`), built on a
//! small blocking client, and `fjord dump-log`, which reads segment files.

pub mod acls;
pub mod cli;
pub mod client;
pub mod cluster;
pub mod configs;
pub mod dump_index;
pub mod dump_log;
pub mod groups;
pub mod groups_cli;
pub mod output;
pub mod topics;
pub mod users;
