//! InitProducerId (key 22), v0–v4, for idempotent producers (KIP-98): a fresh
//! producer id with epoch 0, never reused after a restart; from v3, a
//! producer that passes its current id and epoch gets the epoch bumped
//! (KIP-360) so it can reset its sequences. Transactional ids are not served
//! yet: COORDINATOR_NOT_AVAILABLE (FindCoordinator for transactions answers
//! the same).

use std::rc::Rc;

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};
use kafka_protocol::ResponseError as E;

use super::{respond, with_controller, HandlerResult};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Answers InitProducerId.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: InitProducerIdRequest = frame.decode()?;
    let mut resp = InitProducerIdResponse::default();
    resp.producer_id = ProducerId(-1);
    resp.producer_epoch = -1;
    if req.transactional_id.is_some() {
        resp.error_code = E::CoordinatorNotAvailable.code();
        return Ok(respond(frame, &resp));
    }
    if req.producer_id.0 >= 0 && req.producer_epoch >= 0 {
        // KIP-360: bump the epoch of an existing idempotent producer; a new id
        // when the epoch would overflow.
        if req.producer_epoch < i16::MAX - 1 {
            resp.producer_id = req.producer_id;
            resp.producer_epoch = req.producer_epoch + 1;
            return Ok(respond(frame, &resp));
        }
    }
    match with_controller(shard, |c| {
        c.allocate_producer_id().map_err(|e| e.to_string())
    })
    .await
    {
        Ok(Ok(id)) => {
            resp.producer_id = ProducerId(id);
            resp.producer_epoch = 0;
        }
        Ok(Err(e)) => {
            log::error!("cannot allocate a producer id: {e}");
            resp.error_code = E::CoordinatorNotAvailable.code();
        }
        Err(_) => resp.error_code = E::CoordinatorNotAvailable.code(),
    }
    Ok(respond(frame, &resp))
}
