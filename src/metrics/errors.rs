//! Kafka's error names (`org.apache.kafka.common.protocol.Errors`), as the
//! `error` label of `kafka_network_requestmetrics_errors_total` gives them,
//! and the slot each error code is counted in.
//!
//! The table is Kafka's protocol guide's error code table (codes -1 to
//! 133); `names_follow_the_protocol_crate` holds it against the protocol
//! crate's `ResponseError`. A code outside the table (none is sent by
//! Fjord) is counted as `UNKNOWN_SERVER_ERROR`, as Kafka's
//! `Errors.forCode` reads an unknown code.

/// Kafka's error names by code + 1 (slot 0: `UNKNOWN_SERVER_ERROR`, -1;
/// slot 1: `NONE`, 0; …).
pub const ERROR_NAMES: [&str; 135] = [
    "UNKNOWN_SERVER_ERROR",                  // -1
    "NONE",                                  // 0
    "OFFSET_OUT_OF_RANGE",                   // 1
    "CORRUPT_MESSAGE",                       // 2
    "UNKNOWN_TOPIC_OR_PARTITION",            // 3
    "INVALID_FETCH_SIZE",                    // 4
    "LEADER_NOT_AVAILABLE",                  // 5
    "NOT_LEADER_OR_FOLLOWER",                // 6
    "REQUEST_TIMED_OUT",                     // 7
    "BROKER_NOT_AVAILABLE",                  // 8
    "REPLICA_NOT_AVAILABLE",                 // 9
    "MESSAGE_TOO_LARGE",                     // 10
    "STALE_CONTROLLER_EPOCH",                // 11
    "OFFSET_METADATA_TOO_LARGE",             // 12
    "NETWORK_EXCEPTION",                     // 13
    "COORDINATOR_LOAD_IN_PROGRESS",          // 14
    "COORDINATOR_NOT_AVAILABLE",             // 15
    "NOT_COORDINATOR",                       // 16
    "INVALID_TOPIC_EXCEPTION",               // 17
    "RECORD_LIST_TOO_LARGE",                 // 18
    "NOT_ENOUGH_REPLICAS",                   // 19
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND",      // 20
    "INVALID_REQUIRED_ACKS",                 // 21
    "ILLEGAL_GENERATION",                    // 22
    "INCONSISTENT_GROUP_PROTOCOL",           // 23
    "INVALID_GROUP_ID",                      // 24
    "UNKNOWN_MEMBER_ID",                     // 25
    "INVALID_SESSION_TIMEOUT",               // 26
    "REBALANCE_IN_PROGRESS",                 // 27
    "INVALID_COMMIT_OFFSET_SIZE",            // 28
    "TOPIC_AUTHORIZATION_FAILED",            // 29
    "GROUP_AUTHORIZATION_FAILED",            // 30
    "CLUSTER_AUTHORIZATION_FAILED",          // 31
    "INVALID_TIMESTAMP",                     // 32
    "UNSUPPORTED_SASL_MECHANISM",            // 33
    "ILLEGAL_SASL_STATE",                    // 34
    "UNSUPPORTED_VERSION",                   // 35
    "TOPIC_ALREADY_EXISTS",                  // 36
    "INVALID_PARTITIONS",                    // 37
    "INVALID_REPLICATION_FACTOR",            // 38
    "INVALID_REPLICA_ASSIGNMENT",            // 39
    "INVALID_CONFIG",                        // 40
    "NOT_CONTROLLER",                        // 41
    "INVALID_REQUEST",                       // 42
    "UNSUPPORTED_FOR_MESSAGE_FORMAT",        // 43
    "POLICY_VIOLATION",                      // 44
    "OUT_OF_ORDER_SEQUENCE_NUMBER",          // 45
    "DUPLICATE_SEQUENCE_NUMBER",             // 46
    "INVALID_PRODUCER_EPOCH",                // 47
    "INVALID_TXN_STATE",                     // 48
    "INVALID_PRODUCER_ID_MAPPING",           // 49
    "INVALID_TRANSACTION_TIMEOUT",           // 50
    "CONCURRENT_TRANSACTIONS",               // 51
    "TRANSACTION_COORDINATOR_FENCED",        // 52
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", // 53
    "SECURITY_DISABLED",                     // 54
    "OPERATION_NOT_ATTEMPTED",               // 55
    "KAFKA_STORAGE_ERROR",                   // 56
    "LOG_DIR_NOT_FOUND",                     // 57
    "SASL_AUTHENTICATION_FAILED",            // 58
    "UNKNOWN_PRODUCER_ID",                   // 59
    "REASSIGNMENT_IN_PROGRESS",              // 60
    "DELEGATION_TOKEN_AUTH_DISABLED",        // 61
    "DELEGATION_TOKEN_NOT_FOUND",            // 62
    "DELEGATION_TOKEN_OWNER_MISMATCH",       // 63
    "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",  // 64
    "DELEGATION_TOKEN_AUTHORIZATION_FAILED", // 65
    "DELEGATION_TOKEN_EXPIRED",              // 66
    "INVALID_PRINCIPAL_TYPE",                // 67
    "NON_EMPTY_GROUP",                       // 68
    "GROUP_ID_NOT_FOUND",                    // 69
    "FETCH_SESSION_ID_NOT_FOUND",            // 70
    "INVALID_FETCH_SESSION_EPOCH",           // 71
    "LISTENER_NOT_FOUND",                    // 72
    "TOPIC_DELETION_DISABLED",               // 73
    "FENCED_LEADER_EPOCH",                   // 74
    "UNKNOWN_LEADER_EPOCH",                  // 75
    "UNSUPPORTED_COMPRESSION_TYPE",          // 76
    "STALE_BROKER_EPOCH",                    // 77
    "OFFSET_NOT_AVAILABLE",                  // 78
    "MEMBER_ID_REQUIRED",                    // 79
    "PREFERRED_LEADER_NOT_AVAILABLE",        // 80
    "GROUP_MAX_SIZE_REACHED",                // 81
    "FENCED_INSTANCE_ID",                    // 82
    "ELIGIBLE_LEADERS_NOT_AVAILABLE",        // 83
    "ELECTION_NOT_NEEDED",                   // 84
    "NO_REASSIGNMENT_IN_PROGRESS",           // 85
    "GROUP_SUBSCRIBED_TO_TOPIC",             // 86
    "INVALID_RECORD",                        // 87
    "UNSTABLE_OFFSET_COMMIT",                // 88
    "THROTTLING_QUOTA_EXCEEDED",             // 89
    "PRODUCER_FENCED",                       // 90
    "RESOURCE_NOT_FOUND",                    // 91
    "DUPLICATE_RESOURCE",                    // 92
    "UNACCEPTABLE_CREDENTIAL",               // 93
    "INCONSISTENT_VOTER_SET",                // 94
    "INVALID_UPDATE_VERSION",                // 95
    "FEATURE_UPDATE_FAILED",                 // 96
    "PRINCIPAL_DESERIALIZATION_FAILURE",     // 97
    "SNAPSHOT_NOT_FOUND",                    // 98
    "POSITION_OUT_OF_RANGE",                 // 99
    "UNKNOWN_TOPIC_ID",                      // 100
    "DUPLICATE_BROKER_REGISTRATION",         // 101
    "BROKER_ID_NOT_REGISTERED",              // 102
    "INCONSISTENT_TOPIC_ID",                 // 103
    "INCONSISTENT_CLUSTER_ID",               // 104
    "TRANSACTIONAL_ID_NOT_FOUND",            // 105
    "FETCH_SESSION_TOPIC_ID_ERROR",          // 106
    "INELIGIBLE_REPLICA",                    // 107
    "NEW_LEADER_ELECTED",                    // 108
    "OFFSET_MOVED_TO_TIERED_STORAGE",        // 109
    "FENCED_MEMBER_EPOCH",                   // 110
    "UNRELEASED_INSTANCE_ID",                // 111
    "UNSUPPORTED_ASSIGNOR",                  // 112
    "STALE_MEMBER_EPOCH",                    // 113
    "MISMATCHED_ENDPOINT_TYPE",              // 114
    "UNSUPPORTED_ENDPOINT_TYPE",             // 115
    "UNKNOWN_CONTROLLER_ID",                 // 116
    "UNKNOWN_SUBSCRIPTION_ID",               // 117
    "TELEMETRY_TOO_LARGE",                   // 118
    "INVALID_REGISTRATION",                  // 119
    "TRANSACTION_ABORTABLE",                 // 120
    "INVALID_RECORD_STATE",                  // 121
    "SHARE_SESSION_NOT_FOUND",               // 122
    "INVALID_SHARE_SESSION_EPOCH",           // 123
    "FENCED_STATE_EPOCH",                    // 124
    "INVALID_VOTER_KEY",                     // 125
    "DUPLICATE_VOTER",                       // 126
    "VOTER_NOT_FOUND",                       // 127
    "INVALID_REGULAR_EXPRESSION",            // 128
    "REBOOTSTRAP_REQUIRED",                  // 129
    "STREAMS_INVALID_TOPOLOGY",              // 130
    "STREAMS_INVALID_TOPOLOGY_EPOCH",        // 131
    "STREAMS_TOPOLOGY_FENCED",               // 132
    "SHARE_SESSION_LIMIT_REACHED",           // 133
];

/// Error slots counted per API: one per code of [`ERROR_NAMES`].
pub const ERROR_SLOTS: usize = ERROR_NAMES.len();

/// Takes a Kafka error code; gives its slot in [`ERROR_NAMES`] (an unknown
/// code: the slot of `UNKNOWN_SERVER_ERROR`).
pub fn slot(code: i16) -> usize {
    usize::try_from(i32::from(code) + 1)
        .ok()
        .filter(|s| *s < ERROR_SLOTS)
        .unwrap_or(0)
}

/// Takes a slot; gives Kafka's name of its error (`NONE`,
/// `UNKNOWN_TOPIC_OR_PARTITION`, …).
pub fn name(slot: usize) -> &'static str {
    ERROR_NAMES
        .get(slot)
        .copied()
        .unwrap_or("UNKNOWN_SERVER_ERROR")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code's name is the protocol crate's variant in Kafka's
    /// spelling, and every code the crate knows has its own slot.
    #[test]
    fn names_follow_the_protocol_crate() {
        assert_eq!(name(slot(0)), "NONE");
        for code in -1..=133_i16 {
            if code == 0 {
                continue;
            }
            let e = kafka_protocol::ResponseError::try_from_code(code).unwrap();
            assert!(
                !matches!(e, kafka_protocol::ResponseError::Unknown(_)),
                "{code}"
            );
            assert_eq!(
                name(slot(code)),
                crate::admin::client::error_name(&e),
                "{code}"
            );
        }
        assert_eq!(name(slot(3)), "UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(name(slot(6)), "NOT_LEADER_OR_FOLLOWER");
        assert_eq!(slot(-2), 0);
        assert_eq!(slot(i16::MAX), 0);
    }
}
