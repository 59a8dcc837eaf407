//! The command-line surface of `fjord groups list | describe |
//! reset-offsets | delete` (clap arguments and output), over the operations
//! in [`super::groups`].

use clap::Subcommand;

/// `fjord groups` arguments.
#[derive(clap::Args, Debug)]
pub struct GroupsArgs {
    /// Broker to contact (host:port).
    #[arg(
        long = "bootstrap-server",
        default_value = "127.0.0.1:9092",
        global = true
    )]
    bootstrap: String,
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

/// Takes `fjord groups` arguments; runs the command and prints its result.
pub fn run_groups(args: GroupsArgs) -> Result<(), String> {
    use super::groups::{Cluster, ResetTarget};
    let mut c = Cluster::connect(&args.bootstrap).map_err(|e| e.to_string())?;
    match args.command {
        GroupsCommand::List => {
            let groups = c.list_groups().map_err(|e| e.to_string())?;
            println!("{:<40} {:<22} PROTOCOL-TYPE", "GROUP", "STATE");
            for (g, state, ptype) in groups {
                println!("{g:<40} {state:<22} {ptype}");
            }
        }
        GroupsCommand::Describe { group } => {
            let (desc, rows) = c.lag(&group).map_err(|e| e.to_string())?;
            if desc.state == "Dead" && rows.is_empty() {
                // DescribeGroups answers Dead for a group of another kind
                // too (a share group, KIP-932): ListGroups names its type.
                match share_group_state(&mut c, &group)? {
                    Some(state) => println!(
                        "group {group} is a share group (state {state}): describe it with \
                         kafka-share-groups.sh --describe --group {group} --members or --state"
                    ),
                    None => println!("group {group} does not exist"),
                }
                return Ok(());
            }
            println!(
                "group {group}: state {}, protocol {}, {} member(s)",
                desc.state,
                if desc.protocol.is_empty() {
                    "-"
                } else {
                    desc.protocol.as_str()
                },
                desc.members.len()
            );
            for m in &desc.members {
                let parts = m
                    .assignment
                    .iter()
                    .map(|(t, ps)| {
                        format!(
                            "{t}:{}",
                            ps.iter()
                                .map(|p| p.to_string())
                                .collect::<Vec<_>>()
                                .join(",")
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(" ");
                println!(
                    "  member {} client {} host {} assigned [{parts}]",
                    m.member_id, m.client_id, m.client_host
                );
            }
            println!(
                "{:<30} {:>9} {:>16} {:>16} {:>10}  MEMBER",
                "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"
            );
            for r in rows {
                let committed = if r.committed >= 0 {
                    r.committed.to_string()
                } else {
                    "-".into()
                };
                let lag = r.lag.map(|l| l.to_string()).unwrap_or_else(|| "-".into());
                println!(
                    "{:<30} {:>9} {:>16} {:>16} {:>10}  {}",
                    r.topic,
                    r.partition,
                    committed,
                    r.log_end_offset,
                    lag,
                    r.member.unwrap_or_else(|| "-".into())
                );
            }
        }
        GroupsCommand::ResetOffsets {
            group,
            topic,
            to_earliest,
            to_latest,
            to_offset,
            to_datetime,
            execute,
        } => {
            // A share group (KIP-932) has no committed offsets: its start
            // offsets are reset with AlterShareGroupOffsets.
            if let Some(state) = share_group_state(&mut c, &group)? {
                return Err(format!(
                    "group {group} is a share group (state {state}): reset its start offsets \
                     with kafka-share-groups.sh --reset-offsets --group {group} --topic T \
                     --to-earliest|--to-latest --execute"
                ));
            }
            let target = if to_earliest {
                ResetTarget::Earliest
            } else if to_latest {
                ResetTarget::Latest
            } else if let Some(o) = to_offset {
                ResetTarget::Offset(o)
            } else if let Some(dt) = to_datetime {
                let t = humantime::parse_rfc3339_weak(&dt)
                    .map_err(|e| format!("--to-datetime {dt:?}: {e}"))?;
                let ms = t
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_err(|e| format!("--to-datetime {dt:?}: {e}"))?
                    .as_millis() as i64;
                ResetTarget::Timestamp(ms)
            } else {
                return Err(
                    "choose one of --to-earliest, --to-latest, --to-offset, --to-datetime".into(),
                );
            };
            let mut partitions = Vec::new();
            for spec in topic {
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
                        c.partitions_of(&spec).map_err(|e| e.to_string())?,
                    ),
                };
                partitions.extend(ps.into_iter().map(|p| (t.clone(), p)));
            }
            if execute {
                // Refuse before printing a plan that will not be applied.
                c.ensure_inactive(&group).map_err(|e| e.to_string())?;
            }
            let plan = c
                .plan_reset(&partitions, target)
                .map_err(|e| e.to_string())?;
            println!("{:<30} {:>9} {:>12}", "TOPIC", "PARTITION", "NEW-OFFSET");
            for ((t, p), o) in &plan {
                println!("{t:<30} {p:>9} {o:>12}");
            }
            if execute {
                c.commit_reset(&group, &plan).map_err(|e| e.to_string())?;
                println!("offsets of group {group} reset");
            } else {
                println!("(dry run: add --execute to commit these offsets)");
            }
        }
        GroupsCommand::Delete { groups } => {
            let mut failed = false;
            for (g, r) in c.delete_groups(&groups).map_err(|e| e.to_string())? {
                match r {
                    Ok(()) => println!("deleted group {g}"),
                    Err(e) => {
                        failed = true;
                        eprintln!("group {g}: {e}");
                    }
                }
            }
            if failed {
                return Err("some groups were not deleted".into());
            }
        }
    }
    Ok(())
}
