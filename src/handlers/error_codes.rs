//! The error codes a response carries, as Kafka's `errorCounts()` counts
//! them for `kafka.network:type=RequestMetrics,name=ErrorsPerSec`: one per
//! code occurrence, NONE included, read where Kafka reads them (the
//! top-level code where the response has one, and the per-topic,
//! per-partition, per-group, per-member or per-resource codes below it).
//! Secondary codes Kafka leaves out of the count (CreateTopics'
//! `topic_config_error_code`, ShareFetch's `acknowledge_error_code`,
//! DeleteAcls' per-binding codes) are left out here too.
//!
//! [`respond`](super::respond) requires the trait of every response it
//! encodes, so a handler's response type cannot go uncounted; responses
//! written without it (Fetch's zero-copy encoder, Produce v0–v2) count
//! their codes where they are built.

use kafka_protocol::messages::*;

/// A response whose error codes are counted in
/// `kafka_network_requestmetrics_errors_total`.
pub trait ErrorCodes {
    /// Calls `each` once per error code occurrence the response carries at
    /// `version` (Kafka's `errorCounts()`; NONE is 0).
    fn error_codes(&self, version: i16, each: &mut dyn FnMut(i16));
}

/// Responses whose only code is the top-level `error_code`.
macro_rules! top_level_code {
    ($($name:ident),* $(,)?) => {
        $(
            impl ErrorCodes for $name {
                fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
                    each(self.error_code);
                }
            }
        )*
    };
}

top_level_code!(
    AddOffsetsToTxnResponse,
    EndTxnResponse,
    InitProducerIdResponse,
    JoinGroupResponse,
    SyncGroupResponse,
    HeartbeatResponse,
    ConsumerGroupHeartbeatResponse,
    ShareGroupHeartbeatResponse,
    ApiVersionsResponse,
    ListGroupsResponse,
    ListTransactionsResponse,
    DescribeClusterResponse,
    DescribeAclsResponse,
    DescribeClientQuotasResponse,
    ListPartitionReassignmentsResponse,
    SaslHandshakeResponse,
    SaslAuthenticateResponse,
    GetTelemetrySubscriptionsResponse,
    PushTelemetryResponse,
    DescribeDelegationTokenResponse,
);

impl ErrorCodes for ProduceResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for t in &r.responses {
            for p in &t.partition_responses {
                each(p.error_code);
            }
        }
    }
}

/// Each topic's and partition's code; Kafka 4.4's `errorCounts()` leaves
/// the top-level code out.
impl ErrorCodes for MetadataResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for t in &r.topics {
            each(t.error_code);
            for p in &t.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for ListOffsetsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for t in &r.topics {
            for p in &t.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for OffsetForLeaderEpochResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for t in &r.topics {
            for p in &t.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for CreateTopicsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for t in &r.topics {
            each(t.error_code);
        }
    }
}

impl ErrorCodes for DeleteTopicsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for t in &r.responses {
            each(t.error_code);
        }
    }
}

impl ErrorCodes for CreatePartitionsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for t in &r.results {
            each(t.error_code);
        }
    }
}

impl ErrorCodes for ElectLeadersResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        each(r.error_code);
        for t in &r.replica_election_results {
            for p in &t.partition_result {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for AlterPartitionReassignmentsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        each(r.error_code);
        for t in &r.responses {
            for p in &t.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for DescribeTopicPartitionsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for t in &r.topics {
            each(t.error_code);
            for p in &t.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for DescribeQuorumResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        each(r.error_code);
        for t in &r.topics {
            for p in &t.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for FindCoordinatorResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        if r.coordinators.is_empty() {
            each(r.error_code);
        }
        for c in &r.coordinators {
            each(c.error_code);
        }
    }
}

impl ErrorCodes for LeaveGroupResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        each(r.error_code);
        for m in &r.members {
            each(m.error_code);
        }
    }
}

impl ErrorCodes for OffsetCommitResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for t in &r.topics {
            for p in &t.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for OffsetFetchResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        if r.groups.is_empty() {
            each(r.error_code);
            for t in &r.topics {
                for p in &t.partitions {
                    each(p.error_code);
                }
            }
        }
        for g in &r.groups {
            each(g.error_code);
            for t in &g.topics {
                for p in &t.partitions {
                    each(p.error_code);
                }
            }
        }
    }
}

impl ErrorCodes for DescribeGroupsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for g in &r.groups {
            each(g.error_code);
        }
    }
}

impl ErrorCodes for ConsumerGroupDescribeResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for g in &r.groups {
            each(g.error_code);
        }
    }
}

impl ErrorCodes for ShareGroupDescribeResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for g in &r.groups {
            each(g.error_code);
        }
    }
}

impl ErrorCodes for DeleteGroupsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for g in &r.results {
            each(g.error_code);
        }
    }
}

impl ErrorCodes for OffsetDeleteResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        each(r.error_code);
        for t in &r.topics {
            for p in &t.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for DescribeConfigsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for x in &r.results {
            each(x.error_code);
        }
    }
}

impl ErrorCodes for AlterConfigsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for x in &r.responses {
            each(x.error_code);
        }
    }
}

impl ErrorCodes for IncrementalAlterConfigsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for x in &r.responses {
            each(x.error_code);
        }
    }
}

impl ErrorCodes for DeleteRecordsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for t in &r.topics {
            for p in &t.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for DescribeLogDirsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        each(r.error_code);
        for x in &r.results {
            each(x.error_code);
        }
    }
}

impl ErrorCodes for DescribeProducersResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for t in &r.topics {
            for p in &t.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for AddPartitionsToTxnResponse {
    fn error_codes(&self, version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        if version >= 4 {
            each(r.error_code);
            for x in &r.results_by_transaction {
                for t in &x.topic_results {
                    for p in &t.results_by_partition {
                        each(p.partition_error_code);
                    }
                }
            }
        } else {
            for t in &r.results_by_topic_v3_and_below {
                for p in &t.results_by_partition {
                    each(p.partition_error_code);
                }
            }
        }
    }
}

impl ErrorCodes for TxnOffsetCommitResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for t in &r.topics {
            for p in &t.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for DescribeTransactionsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for s in &r.transaction_states {
            each(s.error_code);
        }
    }
}

impl ErrorCodes for WriteTxnMarkersResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for m in &r.markers {
            for t in &m.topics {
                for p in &t.partitions {
                    each(p.error_code);
                }
            }
        }
    }
}

impl ErrorCodes for DescribeUserScramCredentialsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        each(r.error_code);
        for x in &r.results {
            each(x.error_code);
        }
    }
}

impl ErrorCodes for AlterUserScramCredentialsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for x in &r.results {
            each(x.error_code);
        }
    }
}

impl ErrorCodes for CreateAclsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for x in &r.results {
            each(x.error_code);
        }
    }
}

impl ErrorCodes for DeleteAclsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for x in &r.filter_results {
            each(x.error_code);
        }
    }
}

impl ErrorCodes for AlterClientQuotasResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for x in &r.entries {
            each(x.error_code);
        }
    }
}

impl ErrorCodes for UpdateFeaturesResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        each(r.error_code);
        for x in &r.results {
            each(x.error_code);
        }
    }
}

impl ErrorCodes for ShareFetchResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        each(r.error_code);
        for t in &r.responses {
            for p in &t.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for ShareAcknowledgeResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        each(r.error_code);
        for t in &r.responses {
            for p in &t.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for InitializeShareGroupStateResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for x in &r.results {
            for p in &x.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for ReadShareGroupStateResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for x in &r.results {
            for p in &x.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for WriteShareGroupStateResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for x in &r.results {
            for p in &x.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for DeleteShareGroupStateResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for x in &r.results {
            for p in &x.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for ReadShareGroupStateSummaryResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for x in &r.results {
            for p in &x.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for DescribeShareGroupOffsetsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        for g in &r.groups {
            each(g.error_code);
            for t in &g.topics {
                for p in &t.partitions {
                    each(p.error_code);
                }
            }
        }
    }
}

impl ErrorCodes for AlterShareGroupOffsetsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        each(r.error_code);
        for t in &r.responses {
            for p in &t.partitions {
                each(p.error_code);
            }
        }
    }
}

impl ErrorCodes for DeleteShareGroupOffsetsResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        each(r.error_code);
        for t in &r.responses {
            each(t.error_code);
        }
    }
}

impl ErrorCodes for FetchResponse {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        let r = self;
        each(r.error_code);
        for t in &r.responses {
            for p in &t.partitions {
                each(p.error_code);
            }
        }
    }
}
