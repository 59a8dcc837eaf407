//! The command-line surface of `fjord groups list | describe |
//! reset-offsets | delete` (clap arguments and output), over the operations
//! in [`super::groups`]. Every command prints a table, or JSON with
//! `--json`.

use clap::Subcommand;
use serde_json::{json, Value};

use super::cli::Common;
use super::output::{print, Report};

/// `fjord groups` arguments.
#[derive(clap::Args, Debug)]
pub struct GroupsArgs {
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    command: GroupsCommand,
}

#[derive(Subcommand, Debug)]
enum GroupsCommand {
    /// List every group with its state.
    List,
    /// Members, assignments, committed offsets, log end offsets and lag.
    Describe {
        /// Group id.
        group: String,
    },
    /// Move an inactive group's committed offsets (dry run unless --execute).
    ResetOffsets {
        /// Group id.
        group: String,
        /// Topic, or topic:p1,p2 for some partitions.
        #[arg(long, required = true)]
        topic: Vec<String>,
        /// To the log start offset.
        #[arg(long, group = "target")]
        to_earliest: bool,
        /// To the log end offset.
        #[arg(long, group = "target")]
        to_latest: bool,
        /// To this offset (clamped to the valid range).
        #[arg(long, group = "target")]
        to_offset: Option<i64>,
        /// To the first offset at or after this time (RFC 3339, e.g. 2026-01-31T12:00:00Z).
        #[arg(long, group = "target")]
        to_datetime: Option<String>,
        /// Commit the new offsets (otherwise only print them).
        #[arg(long)]
        execute: bool,
    },
    /// Delete inactive groups and their committed offsets.
    Delete {
        /// Group ids.
        #[arg(required = true)]
        groups: Vec<String>,
    },
}

/// The state of `group` if ListGroups names it a share group (KIP-932).
fn share_group_state(
    c: &mut super::groups::Cluster,
    group: &str,
) -> Result<Option<String>, String> {
    Ok(c.list_groups()
        .map_err(|e| e.to_string())?
        .into_iter()
        .find(|(g, _, ptype)| g == group && ptype == "share")
        .map(|(_, state, _)| state))
}

/// Takes `fjord groups` arguments; runs the command and prints its result
/// (JSON with `--json`: keys listed in docs/cli.md).
pub fn run_groups(args: GroupsArgs) -> Result<(), String> {
    let json = args.common.json;
    let security = args.common.security()?;
    let mut c = super::groups::Cluster::connect_with(&args.common.bootstrap, security)
        .map_err(|e| e.to_string())?;
    match args.command {
        GroupsCommand::List => print(&list(&mut c)?, json),
        GroupsCommand::Describe { group } => print(&describe(&mut c, &group)?, json),
        GroupsCommand::ResetOffsets {
            group,
            topic,
            to_earliest,
            to_latest,
            to_offset,
            to_datetime,
            execute,
        } => {
            let target = reset_target(to_earliest, to_latest, to_offset, to_datetime)?;
            print(&reset(&mut c, &group, &topic, target, execute)?, json);
        }
        GroupsCommand::Delete { groups } => {
            let results = c.delete_groups(&groups).map_err(|e| e.to_string())?;
            let mut text = String::new();
            let mut deleted = Vec::new();
            let mut errors = Vec::new();
            for (g, r) in results {
                match r {
                    Ok(()) => {
                        text.push_str(&format!("deleted group {g}\n"));
                        deleted.push(json!(g));
                    }
                    Err(e) => {
                        eprintln!("fjord groups: {e}");
                        errors.push(json!({"group": g, "error": e.to_string()}));
                    }
                }
            }
            let failed = !errors.is_empty();
            print(
                &Report::new(json!({"deleted": deleted, "errors": errors}), text),
                json,
            );
            if failed {
                return Err("some groups were not deleted".into());
            }
        }
    }
    Ok(())
}

/// ListGroups: every group with its state and protocol type.
fn list(c: &mut super::groups::Cluster) -> Result<Report, String> {
    let groups = c.list_groups().map_err(|e| e.to_string())?;
    let mut text = format!("{:<40} {:<22} PROTOCOL-TYPE\n", "GROUP", "STATE");
    let mut docs = Vec::new();
    for (g, state, ptype) in groups {
        text.push_str(&format!("{g:<40} {state:<22} {ptype}\n"));
        docs.push(json!({"group": g, "state": state, "protocol_type": ptype}));
    }
    Ok(Report::new(json!({ "groups": docs }), text))
}

/// A group's members, assignments, committed offsets and lag.
fn describe(c: &mut super::groups::Cluster, group: &str) -> Result<Report, String> {
    let (desc, rows) = c.lag(group).map_err(|e| e.to_string())?;
    if desc.state == "Dead" && rows.is_empty() {
        // DescribeGroups answers Dead for a group of another kind
        // too (a share group, KIP-932): ListGroups names its type.
        return Ok(match share_group_state(c, group)? {
            Some(state) => Report::new(
                json!({"group": group, "exists": true, "type": "share", "state": state}),
                format!(
                    "group {group} is a share group (state {state}): describe it with \
                     kafka-share-groups.sh --describe --group {group} --members or --state\n"
                ),
            ),
            None => Report::new(
                json!({"group": group, "exists": false, "state": "Dead"}),
                format!("group {group} does not exist\n"),
            ),
        });
    }
    let mut text = format!(
        "group {group}: state {}, protocol {}, {} member(s)\n",
        desc.state,
        if desc.protocol.is_empty() {
            "-"
        } else {
            desc.protocol.as_str()
        },
        desc.members.len()
    );
    let mut members = Vec::new();
    for m in &desc.members {
        let parts = m
            .assignment
            .iter()
            .map(|(t, ps)| {
                let ps: Vec<String> = ps.iter().map(|p| p.to_string()).collect();
                format!("{t}:{}", ps.join(","))
            })
            .collect::<Vec<_>>()
            .join(" ");
        text.push_str(&format!(
            "  member {} client {} host {} assigned [{parts}]\n",
            m.member_id, m.client_id, m.client_host
        ));
        let assignment: Vec<Value> = m
            .assignment
            .iter()
            .map(|(t, ps)| json!({"topic": t, "partitions": ps}))
            .collect();
        members.push(json!({
            "member_id": m.member_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "assignment": assignment,
        }));
    }
    text.push_str(&format!(
        "{:<30} {:>9} {:>16} {:>16} {:>10}  MEMBER\n",
        "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"
    ));
    let mut offsets = Vec::new();
    for r in rows {
        let committed = (r.committed >= 0).then_some(r.committed);
        text.push_str(&format!(
            "{:<30} {:>9} {:>16} {:>16} {:>10}  {}\n",
            r.topic,
            r.partition,
            committed.map_or_else(|| "-".into(), |c| c.to_string()),
            r.log_end_offset,
            r.lag.map_or_else(|| "-".into(), |l| l.to_string()),
            r.member.as_deref().unwrap_or("-")
        ));
        offsets.push(json!({
            "topic": r.topic,
            "partition": r.partition,
            "current_offset": committed,
            "log_end_offset": r.log_end_offset,
            "lag": r.lag,
            "member": r.member,
        }));
    }
    let doc = json!({
        "group": group,
        "exists": true,
        "state": desc.state,
        "protocol": desc.protocol,
        "members": members,
        "offsets": offsets,
    });
    Ok(Report::new(doc, text))
}

/// Takes the `reset-offsets` target flags; gives the one chosen.
fn reset_target(
    to_earliest: bool,
    to_latest: bool,
    to_offset: Option<i64>,
    to_datetime: Option<String>,
) -> Result<super::groups::ResetTarget, String> {
    use super::groups::ResetTarget;
    if to_earliest {
        Ok(ResetTarget::Earliest)
    } else if to_latest {
        Ok(ResetTarget::Latest)
    } else if let Some(o) = to_offset {
        Ok(ResetTarget::Offset(o))
    } else if let Some(dt) = to_datetime {
        let t =
            humantime::parse_rfc3339_weak(&dt).map_err(|e| format!("--to-datetime {dt:?}: {e}"))?;
        let ms = t
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| format!("--to-datetime {dt:?}: {e}"))?
            .as_millis() as i64;
        Ok(ResetTarget::Timestamp(ms))
    } else {
        Err("choose one of --to-earliest, --to-latest, --to-offset, --to-datetime".into())
    }
}

/// Plans (and with `execute` commits) the new offsets of `group` for the
/// partitions of `topics` (`topic` or `topic:p1,p2`).
fn reset(
    c: &mut super::groups::Cluster,
    group: &str,
    topics: &[String],
    target: super::groups::ResetTarget,
    execute: bool,
) -> Result<Report, String> {
    // A share group (KIP-932) has no committed offsets: its start
    // offsets are reset with AlterShareGroupOffsets.
    if let Some(state) = share_group_state(c, group)? {
        return Err(format!(
            "group {group} is a share group (state {state}): reset its start offsets \
             with kafka-share-groups.sh --reset-offsets --group {group} --topic T \
             --to-earliest|--to-latest --execute"
        ));
    }
    let mut partitions = Vec::new();
    for spec in topics {
        let (t, ps) = match spec.split_once(':') {
            Some((t, list)) => {
                let ps: Result<Vec<i32>, _> =
                    list.split(',').map(|p| p.trim().parse::<i32>()).collect();
                (
                    t.to_string(),
                    ps.map_err(|e| format!("--topic {spec:?}: {e}"))?,
                )
            }
            None => (
                spec.clone(),
                c.partitions_of(spec).map_err(|e| e.to_string())?,
            ),
        };
        partitions.extend(ps.into_iter().map(|p| (t.clone(), p)));
    }
    if execute {
        // Refuse before printing a plan that will not be applied.
        c.ensure_inactive(group).map_err(|e| e.to_string())?;
    }
    let plan = c
        .plan_reset(&partitions, target)
        .map_err(|e| e.to_string())?;
    let mut text = format!("{:<30} {:>9} {:>12}\n", "TOPIC", "PARTITION", "NEW-OFFSET");
    let mut docs = Vec::new();
    for ((t, p), o) in &plan {
        text.push_str(&format!("{t:<30} {p:>9} {o:>12}\n"));
        docs.push(json!({"topic": t, "partition": p, "new_offset": o}));
    }
    if execute {
        c.commit_reset(group, &plan).map_err(|e| e.to_string())?;
        text.push_str(&format!("offsets of group {group} reset\n"));
    } else {
        text.push_str("(dry run: add --execute to commit these offsets)\n");
    }
    Ok(Report::new(
        json!({"group": group, "executed": execute, "offsets": docs}),
        text,
    ))
}
