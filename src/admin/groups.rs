//! `fjord groups list | describe | reset-offsets | delete`, the operations of
//! Kafka's `kafka-consumer-groups.sh`, against any Kafka-compatible broker.

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::client::{ClientError, Connection};
use crate::security::ClientSecurity;

/// The outcome for one group of a multi-group operation.
pub type GroupResult = Result<(), ClientError>;

/// Connections to a cluster: the bootstrap broker, and the others on demand.
pub struct Cluster {
    bootstrap: String,
    brokers: HashMap<i32, String>,
    conns: HashMap<String, Connection>,
    security: ClientSecurity,
}

/// Where to reset a group's offsets (`reset-offsets --to-…`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ResetTarget {
    /// The log start offset.
    Earliest,
    /// The log end offset.
    Latest,
    /// A given offset, clamped to [earliest, latest] as Kafka's tool does.
    Offset(i64),
    /// The first offset at or after a time (ms since the epoch); latest when none.
    Timestamp(i64),
}

/// One partition of a group as `describe` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionLag {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Committed offset, -1 when none.
    pub committed: i64,
    /// Log end offset (high watermark).
    pub log_end_offset: i64,
    /// Lag (log end − committed), or None without a commit.
    pub lag: Option<i64>,
    /// Member consuming it, if assigned.
    pub member: Option<String>,
}

/// A group as `describe` shows it, whichever protocol it uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupView {
    /// The group's state as its coordinator names it (Stable, Empty, …;
    /// Dead for an unknown group).
    pub state: String,
    /// "consumer" for a KIP-848 consumer group; the classic group's
    /// protocol type and assignor ("consumer range", …) otherwise.
    pub protocol: String,
    /// The members with their assigned partitions.
    pub members: Vec<MemberView>,
}

/// One member of a [`GroupView`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemberView {
    /// Member id.
    pub member_id: String,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Assigned partitions by topic.
    pub assignment: Vec<(String, Vec<i32>)>,
}

impl Cluster {
    /// Connects to the bootstrap broker over PLAINTEXT and learns the
    /// brokers.
    pub fn connect(bootstrap: &str) -> Result<Cluster, ClientError> {
        Cluster::connect_with(bootstrap, ClientSecurity::plaintext(""))
    }

    /// Connects to the bootstrap broker secured as `security` says (every
    /// later connection too) and learns the brokers.
    pub fn connect_with(bootstrap: &str, security: ClientSecurity) -> Result<Cluster, ClientError> {
        let mut c = Cluster {
            bootstrap: bootstrap.to_string(),
            brokers: HashMap::new(),
            conns: HashMap::new(),
            security,
        };
        let conn = Connection::connect_with(bootstrap, &c.security)?;
        c.conns.insert(bootstrap.to_string(), conn);
        let md = c.metadata(Some(Vec::new()))?;
        for b in md.brokers {
            c.brokers
                .insert(b.node_id.0, format!("{}:{}", b.host, b.port));
        }
        Ok(c)
    }

    fn conn(&mut self, addr: &str) -> Result<&mut Connection, ClientError> {
        if !self.conns.contains_key(addr) {
            let c = Connection::connect_with(addr, &self.security)?;
            self.conns.insert(addr.to_string(), c);
        }
        self.conns
            .get_mut(addr)
            .ok_or_else(|| ClientError::Protocol("connection vanished".into()))
    }

    fn boot(&mut self) -> Result<&mut Connection, ClientError> {
        let b = self.bootstrap.clone();
        self.conn(&b)
    }

    fn metadata(&mut self, topics: Option<Vec<String>>) -> Result<MetadataResponse, ClientError> {
        let c = self.boot()?;
        let v = c.version(ApiKey::Metadata, 9)?;
        let mut req = MetadataRequest::default();
        req.topics = topics.map(|ts| {
            ts.into_iter()
                .map(|t| {
                    let mut r = metadata_request::MetadataRequestTopic::default();
                    r.name = Some(TopicName(StrBytes::from_string(t)));
                    r
                })
                .collect()
        });
        req.allow_auto_topic_creation = false;
        c.send(ApiKey::Metadata, v, &req)
    }

    fn coordinator(&mut self, group: &str) -> Result<&mut Connection, ClientError> {
        let c = self.boot()?;
        let v = c.version(ApiKey::FindCoordinator, 3)?;
        let mut req = FindCoordinatorRequest::default();
        req.key = StrBytes::from_string(group.to_string());
        let resp: FindCoordinatorResponse = c.send(ApiKey::FindCoordinator, v, &req)?;
        if resp.error_code != 0 {
            return Err(ClientError::kafka(
                format!("FindCoordinator({group})"),
                resp.error_code,
            ));
        }
        let addr = format!("{}:{}", resp.host, resp.port);
        self.conn(&addr)
    }

    /// Every group on every broker: (group id, state, protocol type).
    pub fn list_groups(&mut self) -> Result<Vec<(String, String, String)>, ClientError> {
        let mut addrs: Vec<String> = self.brokers.values().cloned().collect();
        if addrs.is_empty() {
            addrs.push(self.bootstrap.clone());
        }
        let mut out = Vec::new();
        for addr in addrs {
            let c = self.conn(&addr)?;
            let v = c.version(ApiKey::ListGroups, 4)?;
            let resp: ListGroupsResponse =
                c.send(ApiKey::ListGroups, v, &ListGroupsRequest::default())?;
            if resp.error_code != 0 {
                return Err(ClientError::kafka("ListGroups", resp.error_code));
            }
            for g in resp.groups {
                out.push((
                    g.group_id.0.to_string(),
                    g.group_state.to_string(),
                    g.protocol_type.to_string(),
                ));
            }
        }
        out.sort();
        Ok(out)
    }

    /// DescribeGroups for one group.
    pub fn describe_group(
        &mut self,
        group: &str,
    ) -> Result<describe_groups_response::DescribedGroup, ClientError> {
        let c = self.coordinator(group)?;
        let v = c.version(ApiKey::DescribeGroups, 5)?;
        let mut req = DescribeGroupsRequest::default();
        req.groups = vec![GroupId(StrBytes::from_string(group.to_string()))];
        let resp: DescribeGroupsResponse = c.send(ApiKey::DescribeGroups, v, &req)?;
        let g = resp
            .groups
            .into_iter()
            .next()
            .ok_or_else(|| ClientError::Protocol("empty DescribeGroups".into()))?;
        if g.error_code != 0 {
            return Err(ClientError::kafka(
                format!("DescribeGroups({group})"),
                g.error_code,
            ));
        }
        Ok(g)
    }

    /// The group as ConsumerGroupDescribe (KIP-848) describes it when the
    /// coordinator serves that API and knows it as a consumer group, else as
    /// DescribeGroups describes a classic group (as Kafka's
    /// `kafka-consumer-groups.sh` asks).
    pub fn view(&mut self, group: &str) -> Result<GroupView, ClientError> {
        if let Some(v) = self.consumer_group_view(group)? {
            return Ok(v);
        }
        let desc = self.describe_group(group)?;
        let consumer = desc.protocol_type.as_str() == "consumer";
        Ok(GroupView {
            state: desc.group_state.to_string(),
            protocol: [desc.protocol_type.as_str(), desc.protocol_data.as_str()]
                .into_iter()
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
                .join(" "),
            members: desc
                .members
                .iter()
                .map(|m| MemberView {
                    member_id: m.member_id.to_string(),
                    client_id: m.client_id.to_string(),
                    client_host: m.client_host.to_string(),
                    assignment: if consumer {
                        parse_assignment(&m.member_assignment)
                    } else {
                        Vec::new()
                    },
                })
                .collect(),
        })
    }

    /// ConsumerGroupDescribe of `group`; None when the coordinator does not
    /// serve it or does not know `group` as a consumer group
    /// (GROUP_ID_NOT_FOUND).
    fn consumer_group_view(&mut self, group: &str) -> Result<Option<GroupView>, ClientError> {
        const GROUP_ID_NOT_FOUND: i16 = 69;
        let c = self.coordinator(group)?;
        let Ok(v) = c.version(ApiKey::ConsumerGroupDescribe, 0) else {
            return Ok(None);
        };
        let mut req = ConsumerGroupDescribeRequest::default();
        req.group_ids = vec![GroupId(StrBytes::from_string(group.to_string()))];
        let resp: ConsumerGroupDescribeResponse = c.send(ApiKey::ConsumerGroupDescribe, v, &req)?;
        let Some(g) = resp.groups.into_iter().next() else {
            return Ok(None);
        };
        if g.error_code == GROUP_ID_NOT_FOUND {
            return Ok(None);
        }
        if g.error_code != 0 {
            return Err(ClientError::kafka(
                format!("ConsumerGroupDescribe({group})"),
                g.error_code,
            ));
        }
        Ok(Some(GroupView {
            state: g.group_state.to_string(),
            protocol: "consumer".into(),
            members: g
                .members
                .iter()
                .map(|m| MemberView {
                    member_id: m.member_id.to_string(),
                    client_id: m.client_id.to_string(),
                    client_host: m.client_host.to_string(),
                    assignment: m
                        .assignment
                        .topic_partitions
                        .iter()
                        .map(|t| (t.topic_name.to_string(), t.partitions.clone()))
                        .collect(),
                })
                .collect(),
        }))
    }

    /// Committed offsets of a group: (topic, partition) → offset.
    pub fn committed(&mut self, group: &str) -> Result<BTreeMap<(String, i32), i64>, ClientError> {
        let c = self.coordinator(group)?;
        let v = c.version(ApiKey::OffsetFetch, 7)?;
        let mut req = OffsetFetchRequest::default();
        req.group_id = GroupId(StrBytes::from_string(group.to_string()));
        req.topics = None;
        let resp: OffsetFetchResponse = c.send(ApiKey::OffsetFetch, v, &req)?;
        if resp.error_code != 0 {
            return Err(ClientError::kafka(
                format!("OffsetFetch({group})"),
                resp.error_code,
            ));
        }
        let mut out = BTreeMap::new();
        for t in resp.topics {
            for p in t.partitions {
                if p.committed_offset >= 0 {
                    out.insert(
                        (t.name.0.to_string(), p.partition_index),
                        p.committed_offset,
                    );
                }
            }
        }
        Ok(out)
    }

    /// ListOffsets for `partitions` at `timestamp` (-1 latest, -2 earliest),
    /// each asked of its leader. Gives (topic, partition) → offset.
    pub fn list_offsets(
        &mut self,
        partitions: &[(String, i32)],
        timestamp: i64,
    ) -> Result<BTreeMap<(String, i32), i64>, ClientError> {
        let topics: Vec<String> = {
            let mut t: Vec<String> = partitions.iter().map(|(t, _)| t.clone()).collect();
            t.sort();
            t.dedup();
            t
        };
        let md = self.metadata(Some(topics))?;
        let mut leader: HashMap<(String, i32), i32> = HashMap::new();
        for t in &md.topics {
            let name = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
            for p in &t.partitions {
                leader.insert((name.clone(), p.partition_index), p.leader_id.0);
            }
        }
        let mut by_leader: HashMap<i32, Vec<(String, i32)>> = HashMap::new();
        for tp in partitions {
            let l = leader
                .get(tp)
                .copied()
                .ok_or_else(|| ClientError::kafka(format!("{}-{}", tp.0, tp.1), 3))?;
            by_leader.entry(l).or_default().push(tp.clone());
        }
        let mut out = BTreeMap::new();
        for (node, tps) in by_leader {
            let addr = self
                .brokers
                .get(&node)
                .cloned()
                .unwrap_or_else(|| self.bootstrap.clone());
            let c = self.conn(&addr)?;
            let v = c.version(ApiKey::ListOffsets, 5)?;
            let mut req = ListOffsetsRequest::default();
            req.replica_id = BrokerId(-1);
            let mut grouped: BTreeMap<String, Vec<i32>> = BTreeMap::new();
            for (t, p) in tps {
                grouped.entry(t).or_default().push(p);
            }
            req.topics = grouped
                .into_iter()
                .map(|(t, ps)| {
                    let mut lt = ListOffsetsTopic::default();
                    lt.name = TopicName(StrBytes::from_string(t));
                    lt.partitions = ps
                        .into_iter()
                        .map(|p| {
                            let mut lp = ListOffsetsPartition::default();
                            lp.partition_index = p;
                            lp.timestamp = timestamp;
                            lp
                        })
                        .collect();
                    lt
                })
                .collect();
            let resp: ListOffsetsResponse = c.send(ApiKey::ListOffsets, v, &req)?;
            for t in resp.topics {
                for p in t.partitions {
                    if p.error_code != 0 {
                        return Err(ClientError::kafka(
                            format!("ListOffsets({}-{})", t.name.0, p.partition_index),
                            p.error_code,
                        ));
                    }
                    out.insert((t.name.0.to_string(), p.partition_index), p.offset);
                }
            }
        }
        Ok(out)
    }

    /// All partitions of `topic`.
    pub fn partitions_of(&mut self, topic: &str) -> Result<Vec<i32>, ClientError> {
        let md = self.metadata(Some(vec![topic.to_string()]))?;
        let t = md
            .topics
            .into_iter()
            .next()
            .ok_or_else(|| ClientError::unknown_topic(topic))?;
        if t.error_code == 3 {
            return Err(ClientError::unknown_topic(topic));
        }
        if t.error_code != 0 {
            return Err(ClientError::kafka(topic, t.error_code));
        }
        let mut ps: Vec<i32> = t.partitions.iter().map(|p| p.partition_index).collect();
        ps.sort();
        Ok(ps)
    }

    /// Partitions with committed offset, log end offset and lag, plus the
    /// member each is assigned to (from the members' `consumer` assignments).
    pub fn lag(&mut self, group: &str) -> Result<(GroupView, Vec<PartitionLag>), ClientError> {
        let desc = self.view(group)?;
        let mut owner: HashMap<(String, i32), String> = HashMap::new();
        for m in &desc.members {
            for (t, ps) in &m.assignment {
                for p in ps {
                    owner.insert((t.clone(), *p), m.member_id.clone());
                }
            }
        }
        let committed = self.committed(group)?;
        let mut tps: Vec<(String, i32)> = committed.keys().cloned().collect();
        for k in owner.keys() {
            if !committed.contains_key(k) {
                tps.push(k.clone());
            }
        }
        tps.sort();
        let ends = if tps.is_empty() {
            BTreeMap::new()
        } else {
            self.list_offsets(&tps, -1)?
        };
        let rows = tps
            .into_iter()
            .map(|tp| {
                let c = committed.get(&tp).copied().unwrap_or(-1);
                let end = ends.get(&tp).copied().unwrap_or(-1);
                PartitionLag {
                    member: owner.get(&tp).cloned(),
                    lag: (c >= 0 && end >= 0).then(|| (end - c).max(0)),
                    topic: tp.0,
                    partition: tp.1,
                    committed: c,
                    log_end_offset: end,
                }
            })
            .collect();
        Ok((desc, rows))
    }

    /// Computes the offsets `reset-offsets` would commit for `partitions`.
    pub fn plan_reset(
        &mut self,
        partitions: &[(String, i32)],
        target: ResetTarget,
    ) -> Result<BTreeMap<(String, i32), i64>, ClientError> {
        let earliest = self.list_offsets(partitions, -2)?;
        let latest = self.list_offsets(partitions, -1)?;
        let chosen = match target {
            ResetTarget::Earliest => earliest.clone(),
            ResetTarget::Latest => latest.clone(),
            ResetTarget::Offset(o) => partitions.iter().map(|tp| (tp.clone(), o)).collect(),
            ResetTarget::Timestamp(ts) => self.list_offsets(partitions, ts)?,
        };
        let by_time = matches!(target, ResetTarget::Timestamp(_));
        Ok(chosen
            .into_iter()
            .map(|(tp, o)| {
                let lo = earliest.get(&tp).copied().unwrap_or(0);
                let hi = latest.get(&tp).copied().unwrap_or(o);
                // A time past the last record finds nothing (-1): the end.
                let o = if by_time && o < 0 {
                    hi
                } else {
                    o.clamp(lo, hi)
                };
                (tp, o)
            })
            .collect())
    }

    /// Errors unless the group has no active members (Empty or unknown), as
    /// Kafka's tool requires before resetting offsets.
    pub fn ensure_inactive(&mut self, group: &str) -> Result<(), ClientError> {
        let state = self.view(group)?.state;
        if state != "Empty" && state != "Dead" {
            return Err(ClientError::Invalid(format!(
                "group {group} is {state}; offsets can only be reset when it has no active members (stop its consumers first)"
            )));
        }
        Ok(())
    }

    /// Commits `offsets` for an inactive group (generation -1, as Kafka's
    /// tool does). Errors unless the group is Empty or unknown.
    pub fn commit_reset(
        &mut self,
        group: &str,
        offsets: &BTreeMap<(String, i32), i64>,
    ) -> Result<(), ClientError> {
        self.ensure_inactive(group)?;
        let c = self.coordinator(group)?;
        let v = c.version(ApiKey::OffsetCommit, 7)?;
        let mut req = OffsetCommitRequest::default();
        req.group_id = GroupId(StrBytes::from_string(group.to_string()));
        req.generation_id_or_member_epoch = -1;
        let mut grouped: BTreeMap<&str, Vec<(i32, i64)>> = BTreeMap::new();
        for ((t, p), o) in offsets {
            grouped.entry(t.as_str()).or_default().push((*p, *o));
        }
        req.topics = grouped
            .into_iter()
            .map(|(t, ps)| {
                let mut rt = OffsetCommitRequestTopic::default();
                rt.name = TopicName(StrBytes::from_string(t.to_string()));
                rt.partitions = ps
                    .into_iter()
                    .map(|(p, o)| {
                        let mut rp = OffsetCommitRequestPartition::default();
                        rp.partition_index = p;
                        rp.committed_offset = o;
                        rp.committed_metadata = Some(StrBytes::default());
                        rp
                    })
                    .collect();
                rt
            })
            .collect();
        let resp: OffsetCommitResponse = c.send(ApiKey::OffsetCommit, v, &req)?;
        for t in resp.topics {
            for p in t.partitions {
                if p.error_code != 0 {
                    return Err(ClientError::kafka(
                        format!("OffsetCommit({}-{})", t.name.0, p.partition_index),
                        p.error_code,
                    ));
                }
            }
        }
        Ok(())
    }

    /// DeleteGroups; gives each group's result.
    pub fn delete_groups(
        &mut self,
        groups: &[String],
    ) -> Result<Vec<(String, GroupResult)>, ClientError> {
        let mut out = Vec::new();
        for g in groups {
            let c = self.coordinator(g)?;
            let v = c.version(ApiKey::DeleteGroups, 2)?;
            let mut req = DeleteGroupsRequest::default();
            req.groups_names = vec![GroupId(StrBytes::from_string(g.clone()))];
            let resp: DeleteGroupsResponse = c.send(ApiKey::DeleteGroups, v, &req)?;
            let code = resp.results.first().map(|r| r.error_code).unwrap_or(0);
            out.push((
                g.clone(),
                if code == 0 {
                    Ok(())
                } else {
                    Err(ClientError::kafka(format!("group {g}"), code))
                },
            ));
        }
        Ok(out)
    }
}

/// Parses a `consumer` protocol assignment (ConsumerProtocolAssignment:
/// version i16, [topic string, [partition i32]], user data) into
/// (topic, partitions). Malformed input gives what could be read.
pub fn parse_assignment(b: &[u8]) -> Vec<(String, Vec<i32>)> {
    let mut out = Vec::new();
    let rd_i16 = |pos: usize| {
        b.get(pos..pos + 2)
            .map(|x| i16::from_be_bytes([x[0], x[1]]))
    };
    let rd_i32 = |pos: usize| {
        b.get(pos..pos + 4)
            .map(|x| i32::from_be_bytes([x[0], x[1], x[2], x[3]]))
    };
    let mut pos = 2;
    let Some(n) = rd_i32(pos) else { return out };
    pos += 4;
    for _ in 0..n.max(0) {
        let Some(len) = rd_i16(pos) else { break };
        pos += 2;
        let Some(name) = b.get(pos..pos + len.max(0) as usize) else {
            break;
        };
        pos += len.max(0) as usize;
        let Some(np) = rd_i32(pos) else { break };
        pos += 4;
        let mut ps = Vec::new();
        for _ in 0..np.max(0) {
            let Some(p) = rd_i32(pos) else { break };
            pos += 4;
            ps.push(p);
        }
        out.push((String::from_utf8_lossy(name).into_owned(), ps));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignment_parses() {
        let mut b = vec![
            0u8, 0, 0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 5,
        ];
        b.extend([0xff, 0xff, 0xff, 0xff]);
        assert_eq!(parse_assignment(&b), vec![("t".to_string(), vec![3, 5])]);
        assert!(parse_assignment(&[0, 0, 0]).is_empty());
    }
}
