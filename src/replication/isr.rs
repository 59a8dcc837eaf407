//! ISR changes a partition leader sends to the controller: an expansion
//! when a follower caught up (from the fetch path), a shrink when an ISR
//! follower lagged past `replica.lag.time.max.ms` (the ISR check every half
//! of it, as Kafka's `isr-expiration` task). Each is an AlterPartition-shaped
//! [`IsrAsk`] that takes effect only once committed in the metadata log and
//! applied here; a refusal or no answer clears the pending change so that
//! the next check proposes again.

use std::rc::Rc;
use std::time::Duration;

use crate::cluster::alter_partition::IsrAsk;
use crate::cluster::control::{ControllerReply, ControllerRequest};
use crate::shard::partition::{IsrChange, Partition};
use crate::shard::{controller_call, now_ms, stall, Shard};

/// Sends `change` of `part` (owned by the calling shard) to the active
/// controller in the background; on refusal the pending change is dropped
/// (see `Partition::isr_change_failed`). Takes effect when the image with
/// the new ISR is applied.
pub fn propose(part: Rc<Partition>, change: IsrChange) {
    let Ok(shard) = crate::shard::current() else {
        part.isr_change_failed(&change);
        return;
    };
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
            Ok(ControllerReply::AlterPartition(Ok(()))) => log::info!(
                "{}-{}: ISR is now {:?} (leader epoch {})",
                change.topic,
                change.partition,
                change.new_isr,
                change.leader_epoch
            ),
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

/// Starts the ISR check of `shard`: every `replica.lag.time.max.ms / 2`,
/// each partition it leads proposes to drop the followers that lagged past
/// `replica.lag.time.max.ms`.
pub fn start_isr_check(shard: &Rc<Shard>) {
    let lag = shard.config.cluster.replica_lag_time_max_ms;
    let every = Duration::from_millis((lag / 2).max(1));
    let me = Rc::downgrade(shard);
    stall::spawn_local("isr check", async move {
        loop {
            glommio::timer::sleep(every).await;
            let Some(shard) = me.upgrade() else { break };
            let now = now_ms();
            for p in shard.owned_partitions() {
                if let Some(change) = p.isr_shrink(now, lag) {
                    log::info!(
                        "{}-{}: followers out of sync for over {lag} ms; asking for ISR {:?}",
                        change.topic,
                        change.partition,
                        change.new_isr
                    );
                    propose(p, change);
                }
            }
        }
    })
    .detach();
}
