//! ISR changes a partition leader sends to the controller: an expansion
//! when a follower caught up (from the fetch path), a shrink when an ISR
//! follower lagged past `replica.lag.time.max.ms` (the ISR check every half
//! of it, as Kafka's `isr-expiration` task). Each is an AlterPartition-shaped
//! [`IsrAsk`] that takes effect only once committed in the metadata log and
//! applied here; a refusal or no answer clears the pending change so that
//! the next check proposes again.

use std::rc::Rc;
use std::time::Duration;

use crate::shard::isr_change::propose;
use crate::shard::{now_ms, stall, Shard};

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
