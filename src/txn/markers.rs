//! Control batches (KIP-98): the COMMIT / ABORT markers the transaction
//! coordinator writes to every partition of a transaction.

use std::rc::Rc;

use bytes::{BufMut, BytesMut};
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions};
use kafka_protocol::ResponseError as E;

use crate::shard::internal::append_encoded;
use crate::shard::now_ms;
use crate::shard::partition::Partition;

/// Appends a COMMIT (`commit`) or ABORT marker of producer `producer_id` at
/// `epoch` to `part`: a v2 control batch (attributes transactional|control)
/// with one record, key `version 0, type (0 abort, 1 commit)`, value
/// `version 0, coordinator_epoch`. Waits for the flush policy. Gives the
/// marker's offset or the Kafka error code (KAFKA_STORAGE_ERROR on I/O).
pub async fn write_marker(
    part: &Rc<Partition>,
    producer_id: i64,
    epoch: i16,
    commit: bool,
    coordinator_epoch: i32,
) -> Result<i64, i16> {
    let ts = now_ms();
    let mut key = BytesMut::with_capacity(4);
    key.put_i16(0);
    key.put_i16(i16::from(commit));
    let mut value = BytesMut::with_capacity(6);
    value.put_i16(0);
    value.put_i32(coordinator_epoch);
    let mut r = crate::protocol::plain_record(0, ts, Some(key.freeze()), Some(value.freeze()));
    r.transactional = true;
    r.control = true;
    r.producer_id = producer_id;
    r.producer_epoch = epoch;
    r.sequence = -1;
    let recs: [Record; 1] = [r];
    let mut buf = BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, recs.iter(), &opts)
        .map_err(|_| E::UnknownServerError.code())?;
    let res = append_encoded(part, buf.freeze(), ts).await?;
    Ok(res.base_offset)
}
