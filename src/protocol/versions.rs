//! The one table of supported (API key, min version, max version). Dispatch
//! (`handlers::dispatch`) and the ApiVersions response both read it, so they
//! cannot disagree. The one exception is written next to it:
//! [`ADVERTISED_PRODUCE_MIN`], the lower bound ApiVersions lists for Produce.

use kafka_protocol::messages::ApiKey;

/// (API, min version, max version) this broker serves. Ranges are within what
/// the `kafka-protocol` crate can decode and encode (Kafka 4.x removed the
/// older versions: Produce starts at v3, ListOffsets at v1, CreateTopics at
/// v2), and reach at least Kafka 4.0's maxima (Produce to Kafka 4.4's v13,
/// topics named by id).
pub const SUPPORTED_APIS: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 13),
    (ApiKey::Fetch, 4, 18),
    (ApiKey::ListOffsets, 1, 10),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::Metadata, 0, 13),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::ElectLeaders, 0, 2),
    (ApiKey::AlterPartitionReassignments, 0, 1),
    (ApiKey::ListPartitionReassignments, 0, 0),
    (ApiKey::DescribeCluster, 0, 1),
    (ApiKey::DescribeTopicPartitions, 0, 0),
    (ApiKey::DescribeQuorum, 0, 2),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DescribeGroups, 0, 6),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
    (ApiKey::ShareGroupHeartbeat, 1, 1),
    (ApiKey::ShareGroupDescribe, 1, 1),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::DescribeLogDirs, 1, 4),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::AddPartitionsToTxn, 0, 5),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    (ApiKey::EndTxn, 0, 5),
    (ApiKey::TxnOffsetCommit, 0, 5),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 1),
    (ApiKey::WriteTxnMarkers, 1, 1),
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    (ApiKey::CreateAcls, 1, 3),
    (ApiKey::DescribeAcls, 1, 3),
    (ApiKey::DeleteAcls, 1, 3),
    (ApiKey::DescribeClientQuotas, 0, 1),
    (ApiKey::AlterClientQuotas, 0, 1),
    (ApiKey::UpdateFeatures, 0, 2),
    // KIP-932: listed whatever `share.version` is, as Kafka 4.4 lists
    // them; answered UNSUPPORTED_VERSION while it is below 1.
    (ApiKey::ShareFetch, 1, 1),
    (ApiKey::ShareAcknowledge, 1, 1),
    (ApiKey::InitializeShareGroupState, 0, 0),
    (ApiKey::ReadShareGroupState, 0, 0),
    (ApiKey::WriteShareGroupState, 0, 0),
    (ApiKey::DeleteShareGroupState, 0, 0),
    (ApiKey::ReadShareGroupStateSummary, 0, 0),
    // The share group offsets APIs (Kafka 4.4: Describe v0–v1; the
    // protocol crate has v0 of each).
    (ApiKey::DescribeShareGroupOffsets, 0, 0),
    (ApiKey::AlterShareGroupOffsets, 0, 0),
    (ApiKey::DeleteShareGroupOffsets, 0, 0),
];

/// Kafka's name of a served API (e.g. `"Produce"`), for logs and the
/// reactor-stall label (`shard::stall`); `"Unserved"` for an API outside
/// [`SUPPORTED_APIS`].
pub fn api_name(key: ApiKey) -> &'static str {
    match key {
        ApiKey::Produce => "Produce",
        ApiKey::Fetch => "Fetch",
        ApiKey::ListOffsets => "ListOffsets",
        ApiKey::OffsetForLeaderEpoch => "OffsetForLeaderEpoch",
        ApiKey::Metadata => "Metadata",
        ApiKey::ApiVersions => "ApiVersions",
        ApiKey::CreateTopics => "CreateTopics",
        ApiKey::DeleteTopics => "DeleteTopics",
        ApiKey::CreatePartitions => "CreatePartitions",
        ApiKey::DescribeCluster => "DescribeCluster",
        ApiKey::DescribeTopicPartitions => "DescribeTopicPartitions",
        ApiKey::DescribeQuorum => "DescribeQuorum",
        ApiKey::ElectLeaders => "ElectLeaders",
        ApiKey::AlterPartitionReassignments => "AlterPartitionReassignments",
        ApiKey::ListPartitionReassignments => "ListPartitionReassignments",
        ApiKey::FindCoordinator => "FindCoordinator",
        ApiKey::JoinGroup => "JoinGroup",
        ApiKey::SyncGroup => "SyncGroup",
        ApiKey::Heartbeat => "Heartbeat",
        ApiKey::ConsumerGroupHeartbeat => "ConsumerGroupHeartbeat",
        ApiKey::ConsumerGroupDescribe => "ConsumerGroupDescribe",
        ApiKey::ShareGroupHeartbeat => "ShareGroupHeartbeat",
        ApiKey::ShareGroupDescribe => "ShareGroupDescribe",
        ApiKey::LeaveGroup => "LeaveGroup",
        ApiKey::OffsetCommit => "OffsetCommit",
        ApiKey::OffsetFetch => "OffsetFetch",
        ApiKey::ListGroups => "ListGroups",
        ApiKey::DescribeGroups => "DescribeGroups",
        ApiKey::DeleteGroups => "DeleteGroups",
        ApiKey::OffsetDelete => "OffsetDelete",
        ApiKey::DescribeConfigs => "DescribeConfigs",
        ApiKey::AlterConfigs => "AlterConfigs",
        ApiKey::IncrementalAlterConfigs => "IncrementalAlterConfigs",
        ApiKey::DeleteRecords => "DeleteRecords",
        ApiKey::DescribeLogDirs => "DescribeLogDirs",
        ApiKey::InitProducerId => "InitProducerId",
        ApiKey::DescribeProducers => "DescribeProducers",
        ApiKey::AddPartitionsToTxn => "AddPartitionsToTxn",
        ApiKey::AddOffsetsToTxn => "AddOffsetsToTxn",
        ApiKey::EndTxn => "EndTxn",
        ApiKey::TxnOffsetCommit => "TxnOffsetCommit",
        ApiKey::DescribeTransactions => "DescribeTransactions",
        ApiKey::ListTransactions => "ListTransactions",
        ApiKey::WriteTxnMarkers => "WriteTxnMarkers",
        ApiKey::SaslHandshake => "SaslHandshake",
        ApiKey::SaslAuthenticate => "SaslAuthenticate",
        ApiKey::DescribeUserScramCredentials => "DescribeUserScramCredentials",
        ApiKey::AlterUserScramCredentials => "AlterUserScramCredentials",
        ApiKey::CreateAcls => "CreateAcls",
        ApiKey::DescribeAcls => "DescribeAcls",
        ApiKey::DeleteAcls => "DeleteAcls",
        ApiKey::DescribeClientQuotas => "DescribeClientQuotas",
        ApiKey::AlterClientQuotas => "AlterClientQuotas",
        ApiKey::UpdateFeatures => "UpdateFeatures",
        ApiKey::ShareFetch => "ShareFetch",
        ApiKey::ShareAcknowledge => "ShareAcknowledge",
        ApiKey::InitializeShareGroupState => "InitializeShareGroupState",
        ApiKey::ReadShareGroupState => "ReadShareGroupState",
        ApiKey::WriteShareGroupState => "WriteShareGroupState",
        ApiKey::DeleteShareGroupState => "DeleteShareGroupState",
        ApiKey::ReadShareGroupStateSummary => "ReadShareGroupStateSummary",
        ApiKey::DescribeShareGroupOffsets => "DescribeShareGroupOffsets",
        ApiKey::AlterShareGroupOffsets => "AlterShareGroupOffsets",
        ApiKey::DeleteShareGroupOffsets => "DeleteShareGroupOffsets",
        _ => "Unserved",
    }
}

/// The lowest Produce version ApiVersions lists, below the lowest one served
/// (v3). Kafka 4.0 removed Produce v0–v2 but still lists Produce from v0
/// (KAFKA-18659): librdkafka before 2.10 decides from the Produce range
/// whether the broker supports gzip, snappy and lz4, and sends those codecs
/// uncompressed when v0–v2 are missing. A v0–v2 request is answered with
/// UNSUPPORTED_VERSION (`handlers::produce_legacy`).
pub const ADVERTISED_PRODUCE_MIN: i16 = 0;

/// The range ApiVersions lists for `key`: the served range, except
/// Produce's lower bound ([`ADVERTISED_PRODUCE_MIN`]).
pub fn advertised_range(key: ApiKey) -> Option<(i16, i16)> {
    supported_range(key).map(|(lo, hi)| match key {
        ApiKey::Produce => (ADVERTISED_PRODUCE_MIN, hi),
        _ => (lo, hi),
    })
}

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
    fn every_served_api_has_its_name() {
        for (key, _, _) in SUPPORTED_APIS {
            assert_eq!(api_name(*key), format!("{key:?}"));
        }
        assert_eq!(api_name(ApiKey::Vote), "Unserved");
    }

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

    #[test]
    fn produce_is_listed_from_v0_and_served_from_v3() {
        assert_eq!(advertised_range(ApiKey::Produce), Some((0, 13)));
        assert_eq!(supported_range(ApiKey::Produce), Some((3, 13)));
        assert_eq!(
            advertised_range(ApiKey::Fetch),
            supported_range(ApiKey::Fetch)
        );
    }
}
