package org.apache.kafka.common.utils;

/**
 * The FileStream connectors are published up to 4.3.1 (connect-file); their
 * version() calls org.apache.kafka.common.utils.AppInfoParser.getVersion(),
 * which Kafka 4.4 moved to org.apache.kafka.common.utils.internals. This
 * class, put after Kafka's jars on the Connect worker's class path by
 * scripts/compat/connect.sh, forwards the two lookups to the moved class.
 */
public final class AppInfoParser {
    private AppInfoParser() {}

    public static String getVersion() {
        return org.apache.kafka.common.utils.internals.AppInfoParser.getVersion();
    }

    public static String getCommitId() {
        return org.apache.kafka.common.utils.internals.AppInfoParser.getCommitId();
    }
}
