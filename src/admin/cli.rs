//! The command-line surface of `fjord topics | configs | acls | users |
//! cluster` (clap arguments) and their dispatch to the operations in the
//! sibling modules. Every command prints a table, or JSON with `--json`.

use clap::{Args, Subcommand};

use super::acls::{self, AclSpec};
use super::client::Connection;
use super::configs::{self, EntityType, ResourceType};
use super::output::{parse_key_values, print, Report};
use super::{cluster, topics, users};

/// Options every admin command takes.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Broker to contact (host:port).
    #[arg(
        long = "bootstrap-server",
        default_value = "localhost:9092",
        global = true
    )]
    pub bootstrap: String,
    /// Print JSON (stable keys) instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
    /// Kafka client properties for the connection, as Kafka's tools take
    /// them: security.protocol, sasl.mechanism, sasl.jaas.config, ssl.*
    /// (PEM truststore/keystore).
    #[arg(long = "command-config", value_name = "FILE", global = true)]
    pub command_config: Option<std::path::PathBuf>,
}

impl Common {
    /// Gives the connection security `--command-config` describes
    /// (PLAINTEXT without it); an unreadable file or a bad key is an error
    /// naming the file and the key.
    pub fn security(&self) -> Result<crate::security::ClientSecurity, String> {
        let Some(path) = &self.command_config else {
            return Ok(crate::security::ClientSecurity::plaintext(""));
        };
        let props = crate::config::read_properties(path).map_err(|e| e.to_string())?;
        crate::security::client_props::client_security(&props)
            .map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// `fjord topics`.
#[derive(Args, Debug)]
pub struct TopicsArgs {
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    command: TopicsCommand,
}

#[derive(Subcommand, Debug)]
enum TopicsCommand {
    /// List topic names.
    List {
        /// Leave internal topics (__consumer_offsets, …) out.
        #[arg(long)]
        exclude_internal: bool,
    },
    /// Partitions (leader, replicas, ISR) and config overrides.
    Describe {
        /// Topics (none: every topic).
        topics: Vec<String>,
    },
    /// Create a topic.
    Create {
        /// Topic name.
        topic: String,
        /// Partition count (default: the broker's num.partitions).
        #[arg(long, default_value_t = -1)]
        partitions: i32,
        /// Replication factor (default: the broker's default.replication.factor).
        #[arg(long = "replication-factor", default_value_t = -1)]
        replication_factor: i16,
        /// A topic config override, key=value; repeatable.
        #[arg(long = "config", value_name = "KEY=VALUE")]
        configs: Vec<String>,
    },
    /// Add partitions, or set and delete config overrides.
    Alter {
        /// Topic name.
        topic: String,
        /// The new partition count (more than today's).
        #[arg(long)]
        partitions: Option<i32>,
        /// A config override to set, key=value; repeatable.
        #[arg(long = "config", value_name = "KEY=VALUE")]
        configs: Vec<String>,
        /// A config override to remove; repeatable.
        #[arg(long = "delete-config", value_name = "KEY")]
        delete_configs: Vec<String>,
    },
    /// Delete topics.
    Delete {
        /// Topic names.
        #[arg(required = true)]
        topics: Vec<String>,
    },
}

/// `fjord configs`.
#[derive(Args, Debug)]
pub struct ConfigsArgs {
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    command: ConfigsCommand,
}

#[derive(Args, Debug, Clone)]
struct Entity {
    /// topics, brokers, groups, users (quotas) or clients (quotas).
    #[arg(long = "entity-type", value_enum)]
    entity_type: EntityType,
    /// Topic, broker id, group, user or client id.
    #[arg(long = "entity-name")]
    entity_name: Option<String>,
    /// The default entity (brokers: cluster-wide; users/clients: the
    /// default quota).
    #[arg(long = "entity-default")]
    entity_default: bool,
}

#[derive(Subcommand, Debug)]
enum ConfigsCommand {
    /// Show dynamic config overrides (or quotas).
    Describe {
        #[command(flatten)]
        entity: Entity,
        /// Every config with its source, not only the overrides.
        #[arg(long)]
        all: bool,
    },
    /// Set and delete configs (or quotas).
    Alter {
        #[command(flatten)]
        entity: Entity,
        /// key=value pairs to set (comma-separated, `[a,b]` for lists); repeatable.
        #[arg(long = "add-config", value_name = "K=V[,K=V]")]
        add: Vec<String>,
        /// Keys to delete (comma-separated); repeatable.
        #[arg(long = "delete-config", value_name = "K[,K]")]
        delete: Vec<String>,
    },
}

/// `fjord acls`.
#[derive(Args, Debug)]
pub struct AclsArgs {
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    command: AclsCommand,
}

#[derive(Subcommand, Debug)]
enum AclsCommand {
    /// List the ACLs matching the options (none: every ACL).
    List(AclSpec),
    /// Create one ACL.
    Create(AclSpec),
    /// Delete the ACLs matching the options; prints what was deleted.
    Delete(AclSpec),
}

/// `fjord users`.
#[derive(Args, Debug)]
pub struct UsersArgs {
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    command: UsersCommand,
}

#[derive(Subcommand, Debug)]
enum UsersCommand {
    /// SCRAM mechanisms and iterations of users (none: every user).
    Describe {
        /// User names.
        users: Vec<String>,
    },
    /// Add or replace a user's SCRAM credential.
    Upsert {
        /// User name.
        user: String,
        /// SCRAM-SHA-256 or SCRAM-SHA-512.
        #[arg(long, default_value = "SCRAM-SHA-512")]
        mechanism: String,
        /// PBKDF2 iterations (at least 4096).
        #[arg(long, default_value_t = 4096)]
        iterations: i32,
        /// The password.
        #[arg(long)]
        password: String,
    },
    /// Delete a user's SCRAM credential.
    Delete {
        /// User name.
        user: String,
        /// SCRAM-SHA-256 or SCRAM-SHA-512.
        #[arg(long, default_value = "SCRAM-SHA-512")]
        mechanism: String,
    },
}

/// `fjord cluster`.
#[derive(Args, Debug)]
pub struct ClusterArgs {
    #[command(flatten)]
    common: Common,
}

fn connect(c: &Common) -> Result<Connection, String> {
    Connection::connect_with(&c.bootstrap, &c.security()?).map_err(|e| e.to_string())
}

fn done(json: bool, doc: serde_json::Value, text: String) {
    print(&Report::new(doc, text), json);
}

/// Takes `fjord topics` arguments; runs the command and prints its result.
pub fn run_topics(a: TopicsArgs) -> Result<(), String> {
    let e = |e: super::client::ClientError| e.to_string();
    let mut c = connect(&a.common)?;
    let json = a.common.json;
    match a.command {
        TopicsCommand::List { exclude_internal } => {
            print(
                &topics::list_report(&topics::list(&mut c, exclude_internal).map_err(e)?),
                json,
            );
        }
        TopicsCommand::Describe { topics: names } => {
            print(
                &topics::describe_report(&topics::describe(&mut c, &names).map_err(e)?),
                json,
            );
        }
        TopicsCommand::Create {
            topic,
            partitions,
            replication_factor,
            configs,
        } => {
            let kv = parse_key_values(&configs)?;
            let id =
                topics::create(&mut c, &topic, partitions, replication_factor, &kv).map_err(e)?;
            done(
                json,
                serde_json::json!({"topic": topic, "topic_id": id, "created": true}),
                format!("Created topic {topic} (topic id {id}).\n"),
            );
        }
        TopicsCommand::Alter {
            topic,
            partitions,
            configs,
            delete_configs,
        } => {
            if partitions.is_none() && configs.is_empty() && delete_configs.is_empty() {
                return Err("alter needs --partitions, --config or --delete-config".into());
            }
            // Configs first (the broker checks every value before it changes
            // any), then partitions: a refused config changes nothing, and
            // a refused partition count says the configs did change.
            let mut text = String::new();
            let kv = parse_key_values(&configs)?;
            if !configs.is_empty() || !delete_configs.is_empty() {
                configs::alter(&mut c, ResourceType::Topic, &topic, &kv, &delete_configs)
                    .map_err(e)?;
                text.push_str(&format!("Configs of topic {topic} updated.\n"));
            }
            if let Some(n) = partitions {
                topics::add_partitions(&mut c, &topic, n).map_err(|err| {
                    if text.is_empty() {
                        e(err)
                    } else {
                        format!(
                            "configs of topic {topic} were updated, partitions not: {}",
                            e(err)
                        )
                    }
                })?;
                text.push_str(&format!("Topic {topic} now has {n} partitions.\n"));
            }
            done(
                json,
                serde_json::json!({"topic": topic, "partitions": partitions, "altered": true}),
                text,
            );
        }
        TopicsCommand::Delete { topics: names } => {
            let results = topics::delete(&mut c, &names).map_err(e)?;
            let mut text = String::new();
            let mut failed = Vec::new();
            let mut deleted = Vec::new();
            for (n, r) in results {
                match r {
                    Ok(()) => {
                        text.push_str(&format!("Deleted topic {n}.\n"));
                        deleted.push(n);
                    }
                    Err(err) => failed.push(err.to_string()),
                }
            }
            done(json, serde_json::json!({"deleted": deleted}), text);
            if !failed.is_empty() {
                return Err(failed.join("; "));
            }
        }
    }
    Ok(())
}

fn split_keys(items: &[String]) -> Vec<String> {
    items
        .iter()
        .flat_map(|s| s.split(','))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn resource(entity: &Entity) -> Result<(ResourceType, String), String> {
    let name = match (&entity.entity_name, entity.entity_default) {
        (Some(n), _) => n.clone(),
        (None, true) if entity.entity_type == EntityType::Brokers => String::new(),
        _ => return Err("--entity-name is needed".into()),
    };
    let rt = match entity.entity_type {
        EntityType::Topics => ResourceType::Topic,
        EntityType::Brokers => ResourceType::Broker,
        EntityType::Groups => ResourceType::Group,
        EntityType::Users | EntityType::Clients => {
            return Err("users and clients have quotas, not configs".into())
        }
    };
    Ok((rt, name))
}

fn entity_label(t: EntityType) -> &'static str {
    match t {
        EntityType::Topics => "topic",
        EntityType::Brokers => "broker",
        EntityType::Groups => "group",
        EntityType::Users => "user",
        EntityType::Clients => "client",
    }
}

/// Takes `fjord configs` arguments; runs the command and prints its result.
pub fn run_configs(a: ConfigsArgs) -> Result<(), String> {
    let e = |e: super::client::ClientError| e.to_string();
    let mut c = connect(&a.common)?;
    let json = a.common.json;
    match a.command {
        ConfigsCommand::Describe { entity, all } => {
            if matches!(entity.entity_type, EntityType::Users | EntityType::Clients) {
                let q = configs::describe_quotas(
                    &mut c,
                    entity.entity_type,
                    entity.entity_name.as_deref(),
                    entity.entity_default,
                )
                .map_err(e)?;
                print(&configs::quotas_report(&q), json);
            } else {
                let (rt, name) = resource(&entity)?;
                let entries = configs::describe(&mut c, rt, &name, all).map_err(e)?;
                print(
                    &configs::configs_report(entity_label(entity.entity_type), &name, &entries),
                    json,
                );
            }
        }
        ConfigsCommand::Alter {
            entity,
            add,
            delete,
        } => {
            let set = parse_key_values(&add)?;
            let del = split_keys(&delete);
            if set.is_empty() && del.is_empty() {
                return Err("alter needs --add-config or --delete-config".into());
            }
            let label = entity_label(entity.entity_type);
            if matches!(entity.entity_type, EntityType::Users | EntityType::Clients) {
                if entity.entity_name.is_none() && !entity.entity_default {
                    return Err("--entity-name or --entity-default is needed".into());
                }
                configs::alter_quotas(
                    &mut c,
                    entity.entity_type,
                    entity.entity_name.as_deref(),
                    &set,
                    &del,
                )
                .map_err(e)?;
            } else {
                let (rt, name) = resource(&entity)?;
                configs::alter(&mut c, rt, &name, &set, &del).map_err(e)?;
            }
            let name = entity
                .entity_name
                .clone()
                .unwrap_or_else(|| "<default>".into());
            done(
                json,
                serde_json::json!({"entity_type": label, "entity_name": entity.entity_name, "altered": true}),
                format!("Completed updating config for {label} {name}.\n"),
            );
        }
    }
    Ok(())
}

/// Takes `fjord acls` arguments; runs the command and prints its result.
pub fn run_acls(a: AclsArgs) -> Result<(), String> {
    let e = |e: super::client::ClientError| e.to_string();
    let mut c = connect(&a.common)?;
    let json = a.common.json;
    match a.command {
        AclsCommand::List(spec) => {
            let f = spec.to_acl(true)?;
            print(&acls::report(&acls::list(&mut c, &f).map_err(e)?), json);
        }
        AclsCommand::Create(spec) => {
            let b = spec.to_acl(false)?;
            acls::create(&mut c, &b).map_err(e)?;
            print(&acls::report(&[b]), json);
        }
        AclsCommand::Delete(spec) => {
            let f = spec.to_acl(true)?;
            print(&acls::report(&acls::delete(&mut c, &f).map_err(e)?), json);
        }
    }
    Ok(())
}

/// Takes `fjord users` arguments; runs the command and prints its result.
pub fn run_users(a: UsersArgs) -> Result<(), String> {
    let e = |e: super::client::ClientError| e.to_string();
    let mut c = connect(&a.common)?;
    let json = a.common.json;
    match a.command {
        UsersCommand::Describe { users: names } => {
            print(
                &users::report(&users::describe(&mut c, &names).map_err(e)?),
                json,
            );
        }
        UsersCommand::Upsert {
            user,
            mechanism,
            iterations,
            password,
        } => {
            // Kafka's bounds (ScramMechanism min/max iterations): checked
            // before the password is salted here, which takes as long as
            // the iterations ask.
            let max = crate::security::scram::MAX_ITERATIONS;
            if !(users::MIN_ITERATIONS..=max).contains(&iterations) {
                return Err(format!(
                    "--iterations must be from {} to {max}",
                    users::MIN_ITERATIONS
                ));
            }
            users::upsert(&mut c, &user, &mechanism, iterations, &password).map_err(e)?;
            done(
                json,
                serde_json::json!({"user": user, "mechanism": mechanism, "iterations": iterations, "upserted": true}),
                format!("Set {mechanism} credential of user {user} ({iterations} iterations).\n"),
            );
        }
        UsersCommand::Delete { user, mechanism } => {
            users::delete(&mut c, &user, &mechanism).map_err(e)?;
            done(
                json,
                serde_json::json!({"user": user, "mechanism": mechanism, "deleted": true}),
                format!("Deleted {mechanism} credential of user {user}.\n"),
            );
        }
    }
    Ok(())
}

/// Takes `fjord cluster` arguments; prints the cluster and its quorum.
pub fn run_cluster(a: ClusterArgs) -> Result<(), String> {
    let mut c = connect(&a.common)?;
    let r = cluster::report(&mut c).map_err(|e| e.to_string())?;
    print(&r, a.common.json);
    Ok(())
}
