//! The one table of supported (API key, min version, max version). Dispatch
//! (`handlers::dispatch`) and the ApiVersions response both read it, so they
//! cannot disagree.

use kafka_protocol::messages::ApiKey;

/// (API, min version, max version) this broker serves. Ranges are within what
/// the `kafka-protocol` crate can decode and encode (Kafka 4.x removed the
/// older versions: Produce starts at v3, ListOffsets at v1, CreateTopics at v2).
pub const SUPPORTED_APIS: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 11),
    (ApiKey::Fetch, 4, 18),
    (ApiKey::ListOffsets, 1, 8),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::DescribeCluster, 0, 1),
    (ApiKey::FindCoordinator, 0, 4),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::DescribeLogDirs, 1, 4),
    (ApiKey::InitProducerId, 0, 4),
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::AddPartitionsToTxn, 0, 3),
    (ApiKey::AddOffsetsToTxn, 0, 3),
    (ApiKey::EndTxn, 0, 3),
    (ApiKey::TxnOffsetCommit, 0, 4),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 1),
    (ApiKey::WriteTxnMarkers, 1, 1),
];

/// The supported version range of `key`, or `None` when the API is not served.
pub fn supported_range(key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED_APIS
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|&(_, lo, hi)| (lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_within_crate_ranges() {
        for &(k, lo, hi) in SUPPORTED_APIS {
            let r = k.valid_versions();
            assert!(
                lo >= r.min && hi <= r.max && lo <= hi,
                "{k:?} {lo}..{hi} vs {r}"
            );
        }
    }
}
