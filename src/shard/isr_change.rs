//! An ISR change a partition leader asks the active controller for: an
//! expansion when a follower caught up (from the owner's fetch path,
//! `shard::owner::fetch`), a shrink when an ISR follower lagged (the ISR check,
//! `replication::isr`). Each is an AlterPartition-shaped `IsrAsk` that takes
//! effect only once committed in the metadata log and applied here.

use std::rc::Rc;

use crate::cluster::alter_partition::IsrAsk;
use crate::cluster::control::{ControllerReply, ControllerRequest};
use crate::shard::partition::{IsrChange, Partition};
use crate::shard::{controller_call, stall};

/// Sends `change` of `part` (owned by the calling shard) to the active
/// controller in the background; on refusal the pending change is dropped
/// (see `Partition::isr_change_failed`). Takes effect when the image with
/// the new ISR is applied.
pub fn propose(part: Rc<Partition>, change: IsrChange) {
    let Ok(shard) = crate::shard::current() else {
        part.isr_change_failed(&change);
        return;
    };
    let shrink = change.new_isr.len() < part.isr_size();
    stall::spawn_local("isr change", async move {
        let node = shard.config.node_id;
        let Some(broker_epoch) = shard.metadata().registrations.get(&node).map(|b| b.epoch) else {
            part.isr_change_failed(&change);
            return;
        };
        let ask = IsrAsk {
            broker: node,
            broker_epoch,
            topic_id: change.topic_id,
            partition: change.partition,
            leader_epoch: change.leader_epoch,
            partition_epoch: change.partition_epoch,
            new_isr: change.new_isr.clone(),
        };
        match controller_call::submit(&shard, ControllerRequest::AlterPartition(ask)).await {
            Ok(ControllerReply::AlterPartition(Ok(()))) => {
                if let Some(m) = crate::metrics::shard::here() {
                    let n = if shrink {
                        &m.isr_shrinks
                    } else {
                        &m.isr_expands
                    };
                    n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                log::info!(
                    "{}-{}: ISR is now {:?} (leader epoch {})",
                    change.topic,
                    change.partition,
                    change.new_isr,
                    change.leader_epoch
                )
            }
            Ok(ControllerReply::AlterPartition(Err(e))) => {
                log::info!(
                    "{}-{}: ISR change to {:?} refused: {e}",
                    change.topic,
                    change.partition,
                    change.new_isr
                );
                part.isr_change_failed(&change);
            }
            Ok(other) => {
                log::warn!("ISR change answered with {other:?}");
                part.isr_change_failed(&change);
            }
            Err(e) => {
                log::info!(
                    "{}-{}: ISR change to {:?} not sent: {e}",
                    change.topic,
                    change.partition,
                    change.new_isr
                );
                part.isr_change_failed(&change);
            }
        }
    })
    .detach();
}
