//! The group coordinator through its Rust API
//! (`fjord::group::coordinator`), on the shard that coordinates each group,
//! as the group handlers forward to it. Errors are given as their Kafka
//! codes (`KafkaCode`), the codes a client would get.

use bytes::{BufMut, Bytes, BytesMut};
use fjord::group::coordinator;
use fjord::group::{
    CommitPartition, GroupDescription, JoinArgs, JoinResult, LeavingMember, SyncArgs, SyncResult,
    UnknownGroup, OFFSETS_TOPIC,
};

use super::{KafkaCode, Node, Pending};

impl Node {
    /// Creates `__consumer_offsets` as the first FindCoordinator of a group
    /// does, and waits until both shards have loaded their partitions of
    /// it.
    pub fn groups_ready(&self) {
        let n = self.on(0, |s| async move {
            fjord::handlers::find_coordinator::ensure_offsets_topic(&s)
                .await
                .unwrap_or_else(|e| panic!("creating {OFFSETS_TOPIC}: {e}"));
            s.config.group.offsets_topic_partitions
        });
        self.wait_served(OFFSETS_TOPIC, n);
        self.wait_until("the group coordinators loaded", || {
            (0..2).all(|shard| {
                self.on(shard, |_| async {
                    !coordinator::GroupCoordinator::here().any_loading()
                })
            })
        });
    }

    /// The shard coordinating `group`.
    pub fn group_shard(&self, group: &str) -> usize {
        let g = group.to_string();
        self.on(0, move |s| async move {
            fjord::handlers::group_owner(&s, &g).unwrap_or_else(|e| panic!("{g}: {e}"))
        })
    }

    /// The `__consumer_offsets` partition of `group`.
    pub fn offsets_partition(&self, group: &str) -> i32 {
        let g = group.to_string();
        self.on(0, move |s| async move {
            fjord::group::records::partition_for_group(&g, s.config.group.offsets_topic_partitions)
        })
    }

    /// Starts a JoinGroup, which the coordinator may park until the
    /// rebalance completes.
    pub fn join_pending(&self, args: JoinArgs) -> Pending<JoinResult> {
        self.spawn_on(self.group_shard(&args.group_id), move |s| {
            coordinator::join(s, args)
        })
    }

    /// A JoinGroup, waited for.
    pub fn join(&self, args: JoinArgs) -> JoinResult {
        self.join_pending(args).wait(self)
    }

    /// Joins a new member (the MEMBER_ID_REQUIRED round first, KIP-394):
    /// its id and the pending second JoinGroup.
    pub fn join_new(&self, args: JoinArgs) -> (String, Pending<JoinResult>) {
        let first = self.join(args.clone());
        assert_eq!(
            first.error.as_ref().map(|e| e.code()),
            Some(MEMBER_ID_REQUIRED),
            "{first:?}"
        );
        let id = first.member_id.clone();
        let pending = self.join_pending(JoinArgs {
            member_id: id.clone(),
            ..args
        });
        (id, pending)
    }

    /// Starts a SyncGroup (a follower's is parked until the leader's
    /// assignment is stored).
    pub fn sync_pending(&self, args: SyncArgs) -> Pending<SyncResult> {
        self.spawn_on(self.group_shard(&args.group_id), move |s| {
            coordinator::sync(s, args)
        })
    }

    /// A SyncGroup, waited for.
    pub fn sync(&self, args: SyncArgs) -> SyncResult {
        self.sync_pending(args).wait(self)
    }

    /// Heartbeat; 0 or the error code.
    pub fn heartbeat(
        &self,
        group: &str,
        generation: i32,
        member: &str,
        instance: Option<&str>,
    ) -> i16 {
        let (g, m, i) = (
            group.to_string(),
            member.to_string(),
            instance.map(str::to_string),
        );
        self.on(self.group_shard(group), move |s| async move {
            coordinator::heartbeat(&s, &g, generation, &m, &i).map_or_else(|e| e.code(), |()| 0)
        })
    }

    /// LeaveGroup of `members` (member id, instance id): the top-level code
    /// and one code per member.
    pub fn leave(&self, group: &str, members: &[(&str, Option<&str>)]) -> (i16, Vec<i16>) {
        let g = group.to_string();
        let members: Vec<LeavingMember> = members
            .iter()
            .map(|(m, i)| LeavingMember {
                member_id: m.to_string(),
                group_instance_id: i.map(str::to_string),
            })
            .collect();
        self.on(self.group_shard(group), move |s| async move {
            let o = coordinator::leave(&s, &g, members);
            let code = o.error.as_ref().map_or(0, |e| e.code());
            (
                code,
                o.members
                    .iter()
                    .map(|(_, r)| fjord::error::group_code(r))
                    .collect(),
            )
        })
    }

    /// `offsets` ((topic, partition, offset)) as an OffsetCommit carries
    /// them, each checked against the metadata (UNKNOWN_TOPIC_OR_PARTITION).
    pub fn commit_partitions(&self, offsets: &[(&str, i32, i64)]) -> Vec<CommitPartition> {
        let offsets: Vec<(String, i32, i64)> = offsets
            .iter()
            .map(|(t, p, o)| (t.to_string(), *p, *o))
            .collect();
        self.on(0, move |s| async move {
            let image = s.metadata();
            offsets
                .iter()
                .map(|(t, p, o)| CommitPartition::checked(&image, t, *p, *o, -1, None))
                .collect()
        })
    }

    /// OffsetCommit (v8: an unknown group is ILLEGAL_GENERATION) of
    /// `offsets` by `member` of `generation` (-1 and "" for a standalone
    /// commit); one code per partition.
    pub fn commit(
        &self,
        group: &str,
        generation: i32,
        member: &str,
        offsets: &[(&str, i32, i64)],
    ) -> Vec<i16> {
        let parts = self.commit_partitions(offsets);
        let (g, m) = (group.to_string(), member.to_string());
        self.on(self.group_shard(group), move |s| async move {
            coordinator::commit(
                s,
                g,
                generation,
                m,
                None,
                parts,
                UnknownGroup::IllegalGeneration,
            )
            .await
            .iter()
            .map(fjord::error::group_code)
            .collect()
        })
    }

    /// OffsetFetch of `group`: (topic, partition, offset) of `wanted` (every
    /// committed partition when None), -1 where nothing is committed.
    pub fn committed(
        &self,
        group: &str,
        wanted: Option<&[(&str, i32)]>,
    ) -> Vec<(String, i32, i64)> {
        let g = group.to_string();
        let wanted: Option<Vec<(String, i32)>> =
            wanted.map(|w| w.iter().map(|(t, p)| (t.to_string(), *p)).collect());
        let got = self.on(self.group_shard(group), move |s| async move {
            coordinator::fetch_offsets(&s, &g, wanted, true, None)
                .map(|v| {
                    let mut v: Vec<(String, i32, i64)> = v
                        .into_iter()
                        .map(|o| (o.topic, o.partition, o.offset))
                        .collect();
                    v.sort();
                    v
                })
                .map_err(|e| e.code())
        });
        got.unwrap_or_else(|c| panic!("OffsetFetch {group}: error {c}"))
    }

    /// OffsetDelete of `partitions`: the group's code and one code per
    /// partition.
    pub fn delete_offsets(&self, group: &str, partitions: &[(&str, i32)]) -> (i16, Vec<i16>) {
        let g = group.to_string();
        let parts: Vec<(String, i32)> = partitions
            .iter()
            .map(|(t, p)| (t.to_string(), *p))
            .collect();
        self.on(self.group_shard(group), move |s| async move {
            match coordinator::delete_offsets(s, g, parts).await {
                Ok(results) => (0, results.iter().map(fjord::error::group_code).collect()),
                Err(e) => (e.code(), Vec::new()),
            }
        })
    }

    /// DescribeGroups of `group` (state "Dead" when there is none).
    pub fn describe_group(&self, group: &str) -> GroupDescription {
        let g = group.to_string();
        self.on(self.group_shard(group), move |s| async move {
            coordinator::describe(&s, &g).map_err(|e| e.code())
        })
        .unwrap_or_else(|c| panic!("DescribeGroups {group}: error {c}"))
    }

    /// ListGroups over both shards with a state filter (KIP-518, all when
    /// empty): (group id, protocol type, state), sorted.
    pub fn list_groups(&self, states: &[&str]) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        for shard in 0..2 {
            let states: Vec<String> = states.iter().map(|s| s.to_string()).collect();
            let listed = self.on(shard, move |_| async move {
                coordinator::list(&states, &[])
                    .map(|l| {
                        l.into_iter()
                            .map(|g| (g.group_id, g.protocol_type, g.state))
                            .collect::<Vec<_>>()
                    })
                    .map_err(|e| e.code())
            });
            out.extend(listed.unwrap_or_else(|c| panic!("ListGroups: error {c}")));
        }
        out.sort();
        out
    }

    /// DeleteGroups of `group`; 0 or the error code.
    pub fn delete_group(&self, group: &str) -> i16 {
        let g = group.to_string();
        self.on(self.group_shard(group), move |s| async move {
            coordinator::delete_group(s, g)
                .await
                .map_or_else(|e| e.code(), |()| 0)
        })
    }
}

/// MEMBER_ID_REQUIRED (79).
pub const MEMBER_ID_REQUIRED: i16 = 79;

/// A JoinGroup (v4+) of `member` ("" for a new one) in `group`: a
/// `consumer` with the `range` protocol subscribed to `topic`, session and
/// rebalance timeouts of 30 s.
pub fn join_args(group: &str, member: &str, topic: &str) -> JoinArgs {
    JoinArgs {
        group_id: group.to_string(),
        member_id: member.to_string(),
        group_instance_id: None,
        client_id: "fjord-it".to_string(),
        client_host: "/127.0.0.1".to_string(),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".to_string(),
        protocols: vec![("range".to_string(), subscription(&[topic]))],
        require_known_member_id: true,
    }
}

/// A SyncGroup of `member` in `generation`; the leader gives
/// `assignments` (member id, assignment).
pub fn sync_args(
    group: &str,
    generation: i32,
    member: &str,
    assignments: Vec<(String, Bytes)>,
) -> SyncArgs {
    SyncArgs {
        group_id: group.to_string(),
        generation_id: generation,
        member_id: member.to_string(),
        group_instance_id: None,
        protocol_type: None,
        protocol_name: None,
        assignments,
    }
}

/// ConsumerProtocolSubscription v0 for `topics`, version-prefixed.
pub fn subscription(topics: &[&str]) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(0);
    b.put_i32(topics.len() as i32);
    for t in topics {
        b.put_i16(t.len() as i16);
        b.put_slice(t.as_bytes());
    }
    b.put_i32(-1);
    b.freeze()
}

/// ConsumerProtocolAssignment v0 for `partitions` of `topic`,
/// version-prefixed.
pub fn assignment(topic: &str, partitions: &[i32]) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(0);
    b.put_i32(1);
    b.put_i16(topic.len() as i16);
    b.put_slice(topic.as_bytes());
    b.put_i32(partitions.len() as i32);
    for p in partitions {
        b.put_i32(*p);
    }
    b.put_i32(-1);
    b.freeze()
}
