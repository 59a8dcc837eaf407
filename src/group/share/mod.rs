//! Share groups (KIP-932) in the group coordinator: [`assignor`] is the
//! `simple` assignor (several members per partition); [`membership`] the
//! ShareGroupHeartbeat state machine; [`records`] its records of
//! `__consumer_offsets` (keys 10–15); [`state_topics`] the share-partitions
//! a group has state for (record 15). The shard glue is
//! `group::share_group_coordinator` (docs/decisions/share-groups.md).

pub mod assignor;
pub mod membership;
pub mod records;
pub mod state_topics;
