//! DescribeLogDirs (key 35), v1–v4: the data directory with each partition's
//! size in bytes (v4: the file system's total and usable bytes).

use std::rc::Rc;
use std::sync::Arc;

use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType, CLUSTER_NAME};
use crate::error::KafkaCode;
use crate::protocol::RequestFrame;
use crate::shard::Shard;

fn fs_bytes(path: &std::path::Path) -> (i64, i64) {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return (-1, -1);
    };
    // SAFETY: statvfs writes into a zeroed struct; the path is NUL-terminated.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return (-1, -1);
        }
        let bs = st.f_frsize as i64;
        (st.f_blocks as i64 * bs, st.f_bavail as i64 * bs)
    }
}

/// Answers DescribeLogDirs.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: DescribeLogDirsRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let image = shard.metadata();
    // Kafka: DESCRIBE on the cluster; refused, no results and (v3+)
    // CLUSTER_AUTHORIZATION_FAILED at the top.
    if let Err(d) =
        Access::of(shard, frame).check(Operation::Describe, ResourceType::Cluster, CLUSTER_NAME)
    {
        let mut resp = DescribeLogDirsResponse::default();
        if version >= 3 {
            resp.error_code = d.code();
        }
        return Ok(respond(frame, &resp));
    }
    // (topic, partition) pairs asked for; None = all.
    let wanted: Vec<(Arc<str>, i32)> = match &req.topics {
        Some(ts) => ts
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(move |p| (Arc::from(t.topic.0.as_str()), *p))
            })
            .collect(),
        None => image
            .topics
            .values()
            .flat_map(|t| (0..t.partitions).map(move |p| (t.name.clone(), p)))
            .collect(),
    };
    let mut sizes: Vec<(Arc<str>, i32, i64)> = Vec::new();
    for (topic, p) in wanted {
        if !image
            .topic(&topic)
            .is_some_and(|m| (0..m.partitions).contains(&p))
        {
            continue;
        }
        let t = topic.clone();
        let size = shard
            .invoke_on(shard.owner(&topic, p), move |s| async move {
                s.partition(&t, p).map(|part| part.size_bytes() as i64)
            })
            .await
            .ok()
            .flatten();
        if let Some(size) = size {
            sizes.push((topic, p, size));
        }
    }
    let dir = shard.config.data_dir();
    let mut result = DescribeLogDirsResult::default();
    result.log_dir = StrBytes::from_string(
        std::fs::canonicalize(&dir)
            .unwrap_or(dir.clone())
            .display()
            .to_string(),
    );
    if version >= 4 {
        let (total, usable) = fs_bytes(&dir);
        result.total_bytes = total;
        result.usable_bytes = usable;
    }
    for (topic, p, size) in sizes {
        let pos = result
            .topics
            .iter()
            .position(|t| t.name.0.as_str() == &*topic);
        let idx = match pos {
            Some(i) => i,
            None => {
                let mut t = DescribeLogDirsTopic::default();
                t.name = TopicName(StrBytes::from_string(topic.to_string()));
                result.topics.push(t);
                result.topics.len() - 1
            }
        };
        let mut rp = DescribeLogDirsPartition::default();
        rp.partition_index = p;
        rp.partition_size = size;
        result.topics[idx].partitions.push(rp);
    }
    let mut resp = DescribeLogDirsResponse::default();
    resp.results.push(result);
    Ok(respond(frame, &resp))
}
