//! The group config scenarios of `tests/consumer_group_admin.rs` (KIP-848,
//! the GROUP config resource): DescribeConfigs, IncrementalAlterConfigs
//! and AlterConfigs answers, `kafka-configs --entity-type groups`, the
//! coordinator giving a group's heartbeat interval and session timeout to
//! its members, on Fjord and Kafka 4.4; the overrides surviving a restart
//! (Fjord).

use super::*;

/// DescribeConfigs v4 of group `group` (resource type 32), all keys with
/// documentation off: each config's name, value, source, read-only flag
/// and synonyms.
fn describe_group_configs(c: &mut RawConn, group: &str, keys: Option<&[&str]>) -> Vec<String> {
    let r = c.call(
        4,
        &kp::DescribeConfigsRequest::default()
            .with_include_synonyms(true)
            .with_resources(vec![
                kp::describe_configs_request::DescribeConfigsResource::default()
                    .with_resource_type(32)
                    .with_resource_name(s(group))
                    .with_configuration_keys(keys.map(|k| k.iter().map(|x| s(x)).collect())),
            ]),
    );
    let res = &r.results[0];
    let mut out = vec![format!(
        "DescribeConfigs: {} {:?}",
        res.error_code,
        res.error_message.as_ref().map(|m| m.to_string())
    )];
    for cfg in &res.configs {
        out.push(format!(
            "{}={:?} source {} ro {} sensitive {} type {} synonyms {:?}",
            cfg.name,
            cfg.value.as_ref().map(|v| v.to_string()),
            cfg.config_source,
            cfg.read_only,
            cfg.is_sensitive,
            cfg.config_type,
            cfg.synonyms
                .iter()
                .map(|y| format!(
                    "{}={:?}/{}",
                    y.name,
                    y.value.as_ref().map(|v| v.to_string()),
                    y.source
                ))
                .collect::<Vec<_>>()
        ));
    }
    out
}

/// IncrementalAlterConfigs v1 of group `group`: (key, op, value) each;
/// gives the code and message.
fn alter_group_configs(c: &mut RawConn, group: &str, ops: &[(&str, i8, Option<&str>)]) -> String {
    let r = c.call(
        1,
        &kp::IncrementalAlterConfigsRequest::default().with_resources(vec![
            kp::incremental_alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(32)
                .with_resource_name(s(group))
                .with_configs(
                    ops.iter()
                        .map(|(k, op, v)| {
                            kp::incremental_alter_configs_request::AlterableConfig::default()
                                .with_name(s(k))
                                .with_config_operation(*op)
                                .with_value(v.map(s))
                        })
                        .collect(),
                ),
        ]),
    );
    let res = &r.responses[0];
    format!(
        "IncrementalAlterConfigs {ops:?}: {} {:?}",
        res.error_code,
        res.error_message.as_ref().map(|m| m.to_string())
    )
}

/// The group configs served (Kafka 4.4 also lists share and streams group
/// keys and `consumer.assignment.interval.ms`, which Fjord does not serve:
/// left out of the comparison).
fn served(lines: Vec<String>) -> Vec<String> {
    let mut head: Vec<String> = Vec::new();
    let mut configs: Vec<String> = Vec::new();
    for l in lines {
        if l.starts_with("DescribeConfigs") {
            head.push(l);
        } else if l.starts_with("consumer.session.") || l.starts_with("consumer.heartbeat.") {
            configs.push(l);
        }
    }
    configs.sort();
    head.extend(configs);
    head
}

/// [`describe_group_configs`] repeated until every line of `want` is among
/// its lines (an accepted alter reaches the configs a broker describes
/// through the metadata log, on Kafka as on Fjord); gives the last answer,
/// served lines only.
fn described_once(
    c: &mut RawConn,
    group: &str,
    keys: Option<&[&str]>,
    want: &[&str],
) -> Vec<String> {
    let deadline = Instant::now() + SETTLE;
    loop {
        let lines = served(describe_group_configs(c, group, keys));
        let settled = want.iter().all(|w| lines.iter().any(|l| l.starts_with(w)));
        if settled || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Kafka's `kafka-configs` for groups with `args` against `addr`.
fn configs_tool(addr: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/peers/kafka"),
    )
    .args([
        "tool",
        "kafka-configs",
        "--bootstrap-server",
        addr,
        "--entity-type",
        "groups",
    ])
    .args(args)
    .output()
    .expect("run scripts/peers/kafka tool");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("WARN") && !l.starts_with('\t'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .map(|l| l.replace(addr, "BROKER"))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Heartbeats of `member` (at `epoch`) until the answer's heartbeat
/// interval is `want` (a config change reaches the coordinator through the
/// metadata log); gives it.
fn interval_becomes(c: &mut RawConn, group: &str, member: &str, epoch: i32, want: i32) -> i32 {
    let deadline = Instant::now() + SETTLE;
    loop {
        let r = c.call(
            1,
            &kp::ConsumerGroupHeartbeatRequest::default()
                .with_group_id(s(group).into())
                .with_member_id(s(member))
                .with_member_epoch(epoch)
                .with_rebalance_timeout_ms(-1),
        );
        assert_eq!(r.error_code, 0, "heartbeat: {r:?}");
        if r.heartbeat_interval_ms == want || Instant::now() > deadline {
            return r.heartbeat_interval_ms;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// AlterConfigs v2 (the whole set) of group `group` with `key`=`value`:
/// the code and message.
fn legacy_alter(c: &mut RawConn, group: &str, key: &str, value: &str) -> String {
    let r = c.call(
        2,
        &kp::AlterConfigsRequest::default().with_resources(vec![
            kp::alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(32)
                .with_resource_name(s(group))
                .with_configs(vec![kp::alter_configs_request::AlterableConfig::default()
                    .with_name(s(key))
                    .with_value(Some(s(value)))]),
        ]),
    );
    let res = &r.responses[0];
    format!(
        "AlterConfigs {key}={value}: {} {:?}",
        res.error_code,
        res.error_message.as_ref().map(|m| m.to_string())
    )
}

/// Group configs: the keys and defaults, overrides, validation, the
/// heartbeat answer following an override, and `kafka-configs`.
fn group_configs(addr: &str) -> Vec<String> {
    let group = "cga-cfg-group";
    let member = "m-c-cccccccccccccccccccc";
    let mut c = RawConn::new(addr);
    let mut out = Vec::new();
    out.extend(served(describe_group_configs(&mut c, group, None)));
    for (k, v) in [
        ("consumer.heartbeat.interval.ms", "2000"),
        ("consumer.heartbeat.interval.ms", "500"),
        ("consumer.heartbeat.interval.ms", "100000"),
        ("consumer.session.timeout.ms", "30000"),
        ("consumer.session.timeout.ms", "700000"),
        ("consumer.session.timeout.ms", "abc"),
        ("consumer.session.timeout.ms", "50000"),
        ("no.such.key", "1"),
    ] {
        out.push(alter_group_configs(&mut c, group, &[(k, 0, Some(v))]));
    }
    out.push(alter_group_configs(
        &mut c,
        group,
        &[("consumer.session.timeout.ms", 2, Some("1"))],
    ));
    out.push(alter_group_configs(
        &mut c,
        group,
        &[("consumer.session.timeout.ms", 3, Some("1"))],
    ));
    out.extend(described_once(
        &mut c,
        group,
        None,
        &[
            r#"consumer.heartbeat.interval.ms=Some("2000") source 8"#,
            r#"consumer.session.timeout.ms=Some("50000") source 8"#,
        ],
    ));
    out.extend(served(describe_group_configs(
        &mut c,
        group,
        Some(&["consumer.heartbeat.interval.ms"]),
    )));
    out.push(alter_group_configs(
        &mut c,
        "",
        &[("consumer.heartbeat.interval.ms", 0, Some("2000"))],
    ));
    out.push(legacy_alter(
        &mut c,
        group,
        "consumer.heartbeat.interval.ms",
        "2000",
    ));
    out.push(legacy_alter(
        &mut c,
        group,
        "consumer.heartbeat.interval.ms",
        "20",
    ));
    out.extend(described_once(
        &mut c,
        group,
        None,
        &[r#"consumer.session.timeout.ms=Some("45000") source 5"#],
    ));
    // The coordinator gives the group's interval to its members.
    create_topic(&mut c, "cga-cfg", 1);
    find_coordinator(&mut c, group);
    let epoch = join(&mut c, group, member, "cga-cfg");
    out.push(format!(
        "interval with the override: {}",
        interval_becomes(&mut c, group, member, epoch, 2000)
    ));
    out.push(alter_group_configs(
        &mut c,
        group,
        &[("consumer.heartbeat.interval.ms", 0, Some("3000"))],
    ));
    out.push(format!(
        "interval after a change: {}",
        interval_becomes(&mut c, group, member, epoch, 3000)
    ));
    out.push(alter_group_configs(
        &mut c,
        group,
        &[("consumer.heartbeat.interval.ms", 1, None)],
    ));
    out.push(format!(
        "interval without it: {}",
        interval_becomes(&mut c, group, member, epoch, 1000)
    ));
    out.extend(described_once(
        &mut c,
        group,
        Some(&["consumer.heartbeat.interval.ms"]),
        &[r#"consumer.heartbeat.interval.ms=Some("1000") source 4"#],
    ));
    // Kafka's tool; after an accepted change the next describe waits until
    // the broker describes it.
    let settled_after: [&[&str]; 5] = [
        &[r#"consumer.heartbeat.interval.ms=Some("4000") source 8"#],
        &[],
        &[],
        &[
            r#"consumer.heartbeat.interval.ms=Some("1000") source 4"#,
            r#"consumer.session.timeout.ms=Some("45000") source 5"#,
        ],
        &[],
    ];
    for (args, want) in [
        &[
            "--entity-name",
            group,
            "--alter",
            "--add-config",
            "consumer.heartbeat.interval.ms=4000",
        ][..],
        &["--entity-name", group, "--describe"][..],
        &[
            "--entity-name",
            group,
            "--alter",
            "--add-config",
            "consumer.session.timeout.ms=1",
        ][..],
        &[
            "--entity-name",
            group,
            "--alter",
            "--delete-config",
            "consumer.heartbeat.interval.ms,consumer.session.timeout.ms",
        ][..],
        &["--entity-name", group, "--describe"][..],
    ]
    .into_iter()
    .zip(settled_after)
    {
        out.push(format!(
            "kafka-configs {args:?}: {}",
            configs_tool(addr, args)
        ));
        if !want.is_empty() {
            described_once(&mut c, group, None, want);
        }
    }
    out
}

const EXPECTED_CONFIGS: &[&str] = &[
    r#"DescribeConfigs: 0 Some("")"#,
    r#"consumer.heartbeat.interval.ms=Some("1000") source 4 ro false sensitive false type 3 synonyms ["group.consumer.heartbeat.interval.ms=Some(\"1000\")/4", "group.consumer.heartbeat.interval.ms=Some(\"5000\")/5"]"#,
    r#"consumer.session.timeout.ms=Some("45000") source 5 ro false sensitive false type 3 synonyms ["group.consumer.session.timeout.ms=Some(\"45000\")/5"]"#,
    r#"IncrementalAlterConfigs [("consumer.heartbeat.interval.ms", 0, Some("2000"))]: 0 None"#,
    r#"IncrementalAlterConfigs [("consumer.heartbeat.interval.ms", 0, Some("500"))]: 40 Some("consumer.heartbeat.interval.ms must be in the range 1000 to 15000 inclusive.")"#,
    r#"IncrementalAlterConfigs [("consumer.heartbeat.interval.ms", 0, Some("100000"))]: 40 Some("consumer.heartbeat.interval.ms must be in the range 1000 to 15000 inclusive.")"#,
    r#"IncrementalAlterConfigs [("consumer.session.timeout.ms", 0, Some("30000"))]: 40 Some("consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.")"#,
    r#"IncrementalAlterConfigs [("consumer.session.timeout.ms", 0, Some("700000"))]: 40 Some("consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.")"#,
    r#"IncrementalAlterConfigs [("consumer.session.timeout.ms", 0, Some("abc"))]: 40 Some("Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT")"#,
    r#"IncrementalAlterConfigs [("consumer.session.timeout.ms", 0, Some("50000"))]: 0 None"#,
    r#"IncrementalAlterConfigs [("no.such.key", 0, Some("1"))]: 40 Some("Unknown group config name: no.such.key")"#,
    r#"IncrementalAlterConfigs [("consumer.session.timeout.ms", 2, Some("1"))]: 40 Some("Can't APPEND to key consumer.session.timeout.ms because its type is not LIST.")"#,
    r#"IncrementalAlterConfigs [("consumer.session.timeout.ms", 3, Some("1"))]: 40 Some("Can't SUBTRACT to key consumer.session.timeout.ms because its type is not LIST.")"#,
    r#"DescribeConfigs: 0 Some("")"#,
    r#"consumer.heartbeat.interval.ms=Some("2000") source 8 ro false sensitive false type 3 synonyms ["consumer.heartbeat.interval.ms=Some(\"2000\")/8", "group.consumer.heartbeat.interval.ms=Some(\"1000\")/4", "group.consumer.heartbeat.interval.ms=Some(\"5000\")/5"]"#,
    r#"consumer.session.timeout.ms=Some("50000") source 8 ro false sensitive false type 3 synonyms ["consumer.session.timeout.ms=Some(\"50000\")/8", "group.consumer.session.timeout.ms=Some(\"45000\")/5"]"#,
    r#"DescribeConfigs: 0 Some("")"#,
    r#"consumer.heartbeat.interval.ms=Some("2000") source 8 ro false sensitive false type 3 synonyms ["consumer.heartbeat.interval.ms=Some(\"2000\")/8", "group.consumer.heartbeat.interval.ms=Some(\"1000\")/4", "group.consumer.heartbeat.interval.ms=Some(\"5000\")/5"]"#,
    r#"IncrementalAlterConfigs [("consumer.heartbeat.interval.ms", 0, Some("2000"))]: 42 Some("Default group resources are not allowed.")"#,
    r#"AlterConfigs consumer.heartbeat.interval.ms=2000: 0 None"#,
    r#"AlterConfigs consumer.heartbeat.interval.ms=20: 40 Some("consumer.heartbeat.interval.ms must be in the range 1000 to 15000 inclusive.")"#,
    r#"DescribeConfigs: 0 Some("")"#,
    r#"consumer.heartbeat.interval.ms=Some("2000") source 8 ro false sensitive false type 3 synonyms ["consumer.heartbeat.interval.ms=Some(\"2000\")/8", "group.consumer.heartbeat.interval.ms=Some(\"1000\")/4", "group.consumer.heartbeat.interval.ms=Some(\"5000\")/5"]"#,
    r#"consumer.session.timeout.ms=Some("45000") source 5 ro false sensitive false type 3 synonyms ["group.consumer.session.timeout.ms=Some(\"45000\")/5"]"#,
    r#"interval with the override: 2000"#,
    r#"IncrementalAlterConfigs [("consumer.heartbeat.interval.ms", 0, Some("3000"))]: 0 None"#,
    r#"interval after a change: 3000"#,
    r#"IncrementalAlterConfigs [("consumer.heartbeat.interval.ms", 1, None)]: 0 None"#,
    r#"interval without it: 1000"#,
    r#"DescribeConfigs: 0 Some("")"#,
    r#"consumer.heartbeat.interval.ms=Some("1000") source 4 ro false sensitive false type 3 synonyms ["group.consumer.heartbeat.interval.ms=Some(\"1000\")/4", "group.consumer.heartbeat.interval.ms=Some(\"5000\")/5"]"#,
    r#"kafka-configs ["--entity-name", "cga-cfg-group", "--alter", "--add-config", "consumer.heartbeat.interval.ms=4000"]: Completed updating config for group cga-cfg-group."#,
    r#"kafka-configs ["--entity-name", "cga-cfg-group", "--describe"]: Dynamic configs for group cga-cfg-group are: | consumer.heartbeat.interval.ms=4000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:consumer.heartbeat.interval.ms=4000, STATIC_BROKER_CONFIG:group.consumer.heartbeat.interval.ms=1000, DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000}"#,
    r#"kafka-configs ["--entity-name", "cga-cfg-group", "--alter", "--add-config", "consumer.session.timeout.ms=1"]: Error while executing config command with args '--bootstrap-server BROKER --entity-type groups --entity-name cga-cfg-group --alter --add-config consumer.session.timeout.ms=1' | java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.InvalidConfigurationException: consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive. | Caused by: org.apache.kafka.common.errors.InvalidConfigurationException: consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."#,
    r#"kafka-configs ["--entity-name", "cga-cfg-group", "--alter", "--delete-config", "consumer.heartbeat.interval.ms,consumer.session.timeout.ms"]: Completed updating config for group cga-cfg-group."#,
    r#"kafka-configs ["--entity-name", "cga-cfg-group", "--describe"]: Dynamic configs for group cga-cfg-group are:"#,
];

#[test]
fn group_configs_answer_as_kafka() {
    on_both(group_configs, EXPECTED_CONFIGS);
}

/// A group's configs are ConfigRecords (GROUP resource) of the metadata
/// log: they survive a restart, and the coordinator still gives the
/// group's heartbeat interval to its members afterwards. (Fjord only: the
/// Kafka peer is not restarted by these tests.)
#[test]
fn group_configs_survive_a_restart() {
    let mut broker = Broker::start_with(FAST);
    let group = "cga-cfg-restart";
    let member = "m-r-rrrrrrrrrrrrrrrrrrrr";
    let mut c = RawConn::new(&broker.bootstrap());
    assert_eq!(
        alter_group_configs(
            &mut c,
            group,
            &[
                ("consumer.heartbeat.interval.ms", 0, Some("2500")),
                ("consumer.session.timeout.ms", 0, Some("55000")),
            ]
        ),
        r#"IncrementalAlterConfigs [("consumer.heartbeat.interval.ms", 0, Some("2500")), ("consumer.session.timeout.ms", 0, Some("55000"))]: 0 None"#
    );
    let before = served(describe_group_configs(&mut c, group, None));
    broker.restart();
    let mut c = RawConn::new(&broker.bootstrap());
    let after = served(describe_group_configs(&mut c, group, None));
    assert_eq!(before, after);
    assert!(
        after[1].starts_with(r#"consumer.heartbeat.interval.ms=Some("2500") source 8"#),
        "{after:?}"
    );
    assert!(
        after[2].starts_with(r#"consumer.session.timeout.ms=Some("55000") source 8"#),
        "{after:?}"
    );
    create_topic(&mut c, "cga-cfg-restart", 1);
    find_coordinator(&mut c, group);
    let epoch = join(&mut c, group, member, "cga-cfg-restart");
    assert_eq!(interval_becomes(&mut c, group, member, epoch, 2500), 2500);
}

/// A group's `consumer.session.timeout.ms` fences its silent member: with
/// the broker's 45 s a member that stops heartbeating would stay for the
/// whole wait; with the group's 3 s it is gone within it, on both brokers.
/// A session timeout not above the heartbeat interval is refused first.
fn session_override(addr: &str) -> Vec<String> {
    let group = "cga-session-group";
    let member = "m-s-ssssssssssssssssssss";
    let mut c = RawConn::new(addr);
    let mut out = vec![
        alter_group_configs(
            &mut c,
            group,
            &[
                ("consumer.session.timeout.ms", 0, Some("3000")),
                ("consumer.heartbeat.interval.ms", 0, Some("4000")),
            ],
        ),
        alter_group_configs(
            &mut c,
            group,
            &[("consumer.session.timeout.ms", 0, Some("3000"))],
        ),
    ];
    create_topic(&mut c, "cga-session", 1);
    find_coordinator(&mut c, group);
    // The override reaches the coordinator through the metadata log: the
    // member joins once DescribeConfigs shows it.
    let deadline = Instant::now() + SETTLE;
    while !describe_group_configs(&mut c, group, Some(&["consumer.session.timeout.ms"]))
        .iter()
        .any(|l| l.contains("source 8"))
    {
        assert!(
            Instant::now() < deadline,
            "the override is not described: {out:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    join(&mut c, group, member, "cga-session");
    out.push(format!(
        "members after the join: {}",
        member_ids(&mut c, group).len()
    ));
    let started = Instant::now();
    let deadline = started + Duration::from_secs(30);
    while !member_ids(&mut c, group).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the silent member is still there"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    out.push("the silent member is fenced within 30 s".to_string());
    out
}

const EXPECTED_SESSION: &[&str] = &[
    r#"IncrementalAlterConfigs [("consumer.session.timeout.ms", 0, Some("3000")), ("consumer.heartbeat.interval.ms", 0, Some("4000"))]: 40 Some("consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")"#,
    r#"IncrementalAlterConfigs [("consumer.session.timeout.ms", 0, Some("3000"))]: 0 None"#,
    "members after the join: 1",
    "the silent member is fenced within 30 s",
];

#[test]
fn a_groups_session_timeout_fences_its_members() {
    on_both_with(
        &[
            "group.consumer.min.session.timeout.ms=2000",
            "group.consumer.min.heartbeat.interval.ms=1000",
            "group.consumer.heartbeat.interval.ms=1000",
            "offsets.topic.num.partitions=3",
        ],
        session_override,
        EXPECTED_SESSION,
    );
}

/// After a restart the coordinator arms the sessions of the members it
/// loads with their group's `consumer.session.timeout.ms`: a member silent
/// since before the restart is fenced after the group's 3 s, long before
/// the broker's 45 s. (Fjord only: the Kafka peer is not restarted here.)
#[test]
fn loaded_members_get_their_groups_session_timeout() {
    let mut broker = Broker::start_with(&[
        "group.consumer.min.session.timeout.ms=2000",
        "group.consumer.min.heartbeat.interval.ms=1000",
        "group.consumer.heartbeat.interval.ms=1000",
        "offsets.topic.num.partitions=3",
    ]);
    let group = "cga-load-session";
    let member = "m-l-llllllllllllllllllll";
    let mut c = RawConn::new(&broker.bootstrap());
    create_topic(&mut c, "cga-load-session", 1);
    find_coordinator(&mut c, group);
    join(&mut c, group, member, "cga-load-session");
    assert_eq!(
        alter_group_configs(
            &mut c,
            group,
            &[("consumer.session.timeout.ms", 0, Some("3000"))]
        ),
        r#"IncrementalAlterConfigs [("consumer.session.timeout.ms", 0, Some("3000"))]: 0 None"#
    );
    broker.restart();
    let mut c = RawConn::new(&broker.bootstrap());
    find_coordinator(&mut c, group);
    let loaded = until_served("ConsumerGroupDescribe", || {
        let r = c.call(
            1,
            &kp::ConsumerGroupDescribeRequest::default().with_group_ids(vec![s(group).into()]),
        );
        (r.groups[0].error_code, r.groups[0].members.len())
    });
    assert_eq!(loaded, 1, "the member is loaded");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !member_ids(&mut c, group).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the loaded member is still there after 30 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
