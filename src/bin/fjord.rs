//! The `fjord` binary: CLI → config → boot. No broker logic lives here.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use fjord::config::{read_properties, Config};

#[global_allocator]
static GLOBAL: fjord::alloc::WireSafeAlloc = fjord::alloc::WireSafeAlloc;

#[derive(Parser, Debug)]
#[command(
    name = "fjord",
    version,
    about = "A Kafka-wire-compatible broker, thread-per-core on io_uring"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::Args, Debug, Default)]
struct ServeArgs {
    /// A server.properties-style file with Kafka's key names.
    #[arg(long)]
    config: Option<PathBuf>,
    /// `listeners`, e.g. PLAINTEXT://127.0.0.1:9092 (port 0 picks a free port).
    #[arg(long)]
    listeners: Option<String>,
    /// `log.dirs`: the data directory.
    #[arg(long = "log-dirs")]
    log_dirs: Option<String>,
    /// Number of shards (pinned cores); default: every CPU the process may use.
    #[arg(long)]
    shards: Option<usize>,
    /// Any Kafka config as key=value; repeatable; wins over the file.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the broker (the default when no command is given).
    Serve(ServeArgs),
    /// Consumer-group operations against any Kafka-compatible broker.
    Groups(fjord::admin::groups_cli::GroupsArgs),
    /// Topics: list, describe, create, alter, delete (as kafka-topics.sh).
    Topics(fjord::admin::cli::TopicsArgs),
    /// Topic, broker and group configs; user and client quotas (as
    /// kafka-configs.sh).
    Configs(fjord::admin::cli::ConfigsArgs),
    /// ACLs: list, create, delete (as kafka-acls.sh).
    Acls(fjord::admin::cli::AclsArgs),
    /// SCRAM credentials: describe, upsert, delete (as kafka-configs.sh
    /// --entity-type users).
    Users(fjord::admin::cli::UsersArgs),
    /// Cluster id, brokers, controller and the metadata quorum (as
    /// kafka-cluster.sh and kafka-metadata-quorum.sh).
    Cluster(fjord::admin::cli::ClusterArgs),
    /// Print the batches (and records) of .log segments and the entries of
    /// .index / .timeindex files (as kafka-dump-log.sh).
    DumpLog(fjord::admin::dump_log::DumpLogArgs),
    /// Register partition directories copied into a stopped broker's data
    /// directory from another broker (Apache Kafka, or a Fjord data
    /// directory that lost its topic registry). See docs/migrating-from-kafka.md.
    ImportLogs(ImportArgs),
    /// Prepare the data directory (the first of log.dirs) of a node, as
    /// kafka-storage.sh format: write meta.properties with the cluster id
    /// and the node.id of the configuration.
    Format(FormatArgs),
    /// Print a new random cluster id (a Kafka UUID: 22 base64url
    /// characters), as kafka-storage.sh random-uuid.
    RandomUuid,
    /// Fetch and print a running broker's metrics (its `metrics.listener`
    /// endpoint, Prometheus text: Kafka's families under the JMX exporter's
    /// names, consumer lag and Fjord's own; docs/metrics.md).
    Metrics(MetricsArgs),
}

#[derive(clap::Args, Debug)]
struct FormatArgs {
    /// The node's server.properties (Kafka's key names).
    #[arg(long, short = 'c')]
    config: PathBuf,
    /// The cluster id: a Kafka UUID (see `fjord random-uuid`).
    #[arg(long = "cluster-id", short = 't')]
    cluster_id: String,
    /// Leave an already formatted directory as it is instead of failing.
    #[arg(long = "ignore-formatted", short = 'g')]
    ignore_formatted: bool,
    /// A first SCRAM user, as kafka-storage.sh format (KIP-900):
    /// 'SCRAM-SHA-512=[name=admin,password=admin-secret]' (optional
    /// iterations=, salt=); repeatable. Written as salted keys, never the
    /// password.
    #[arg(
        long = "add-scram",
        short = 'S',
        value_name = "MECHANISM=[name=...,password=...]"
    )]
    add_scram: Vec<String>,
    /// A finalized feature level of the new cluster, as kafka-storage.sh
    /// format --feature: name=level (e.g. transaction.version=0);
    /// repeatable. Unset features take Kafka 4.4's defaults capped at what
    /// Fjord serves (docs/decisions/finalized-features.md).
    #[arg(long = "feature", short = 'f', value_name = "NAME=LEVEL")]
    features: Vec<String>,
    /// Any Kafka config as key=value; repeatable; wins over the file.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
}

fn run_format(args: FormatArgs) -> Result<(), String> {
    use fjord::cluster::format::{format_data_dir, Formatted};
    let config = build_config(&ServeArgs {
        config: Some(args.config.clone()),
        overrides: args.overrides.clone(),
        ..ServeArgs::default()
    })?;
    config.validate().map_err(|e| e.to_string())?;
    let scram = args
        .add_scram
        .iter()
        .map(|v| fjord::cluster::bootstrap_scram::parse_add_scram(v))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let levels =
        fjord::cluster::features::bootstrap_levels(&args.features).map_err(|e| e.to_string())?;
    let dir = config.data_dir();
    let formatted = format_data_dir(
        &dir,
        config.node_id,
        &args.cluster_id,
        config.cluster_id.as_deref(),
        args.ignore_formatted,
    )
    .map_err(|e| e.to_string())?;
    if !scram.is_empty() && matches!(formatted, Formatted::Written { .. }) {
        fjord::cluster::bootstrap_scram::write(&dir, &scram).map_err(|e| {
            format!(
                "cannot write {}: {e}",
                fjord::cluster::bootstrap_scram::FILE
            )
        })?;
        for c in &scram {
            println!(
                "Added SCRAM credential of {} ({}) to the bootstrap metadata",
                c.name,
                c.mechanism.name()
            );
        }
    }
    if matches!(formatted, Formatted::Written { .. }) {
        fjord::cluster::features::write(&dir, &levels)
            .map_err(|e| format!("cannot write {}: {e}", fjord::cluster::features::FILE))?;
    }
    match formatted {
        Formatted::Written { directory_id } => println!(
            "Formatted data directory {} for cluster {} (node.id={}, directory.id={directory_id})",
            dir.display(),
            args.cluster_id,
            config.node_id
        ),
        Formatted::AlreadyFormatted => println!(
            "All of the log directories are already formatted ({} left as it is).",
            dir.display()
        ),
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
struct MetricsArgs {
    /// The broker's `metrics.listener` address (host:port or http://host:port).
    #[arg(long, default_value = "127.0.0.1:9644")]
    address: String,
}

fn run_metrics(args: MetricsArgs) -> Result<(), String> {
    let (status, body) = fjord::metrics::fetch(&args.address, "/metrics")
        .map_err(|e| format!("{}: {e}", args.address))?;
    if status != 200 {
        return Err(format!("{}: HTTP {status}: {}", args.address, body.trim()));
    }
    // A reader that stops early (`| head`) is not an error.
    use std::io::Write as _;
    match std::io::stdout().lock().write_all(body.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("stdout: {e}")),
        _ => Ok(()),
    }
}

#[derive(clap::Args, Debug)]
struct ImportArgs {
    /// `log.dirs`: the (stopped) broker's data directory.
    #[arg(long = "log-dirs", default_value = "./data")]
    log_dirs: PathBuf,
    /// A topic config override for an imported topic, as TOPIC:KEY=VALUE
    /// (e.g. orders:cleanup.policy=compact); repeatable. Kafka keeps topic
    /// configs in its metadata log, not in the partition directories.
    #[arg(long = "topic-config", value_name = "TOPIC:KEY=VALUE")]
    topic_configs: Vec<String>,
    /// Only print what would be registered.
    #[arg(long)]
    dry_run: bool,
}

fn run_import(args: ImportArgs) -> Result<(), String> {
    use std::collections::BTreeMap;
    let mut configs: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for tc in &args.topic_configs {
        let (topic, kv) = tc
            .split_once(':')
            .ok_or_else(|| format!("--topic-config expects TOPIC:KEY=VALUE, got {tc:?}"))?;
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("--topic-config expects TOPIC:KEY=VALUE, got {tc:?}"))?;
        configs
            .entry(topic.to_string())
            .or_default()
            .insert(k.trim().to_string(), v.trim().to_string());
    }
    if !args.log_dirs.is_dir() {
        return Err(format!("{} is not a directory", args.log_dirs.display()));
    }
    let _lock = fjord::boot::lock_data_dir(&args.log_dirs).map_err(|e| e.to_string())?;
    let found = fjord::cluster::import::import(&args.log_dirs, &configs, args.dry_run)
        .map_err(|e| e.to_string())?;
    if found.is_empty() {
        println!(
            "no unregistered partition directories in {}",
            args.log_dirs.display()
        );
    }
    for f in &found {
        let id = fjord::cluster::import::topic_id_to_kafka(&f.id);
        let origin = if f.id_from_disk {
            "from partition.metadata"
        } else {
            "new"
        };
        let cfg = configs
            .get(&f.name)
            .map(|c| {
                c.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default();
        println!(
            "{} topic {} with {} partition(s), topic id {id} ({origin}){}",
            if args.dry_run {
                "would register"
            } else {
                "registered"
            },
            f.name,
            f.partitions,
            if cfg.is_empty() {
                String::new()
            } else {
                format!(", configs {cfg}")
            }
        );
    }
    Ok(())
}

fn build_config(args: &ServeArgs) -> Result<Config, String> {
    let mut config = Config::default();
    if let Some(path) = &args.config {
        let pairs = read_properties(path).map_err(|e| e.to_string())?;
        config
            .apply(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .map_err(|e| e.to_string())?;
    }
    if let Some(l) = &args.listeners {
        config.set("listeners", l).map_err(|e| e.to_string())?;
    }
    if let Some(d) = &args.log_dirs {
        config.set("log.dirs", d).map_err(|e| e.to_string())?;
    }
    if let Some(n) = args.shards {
        config
            .set("fjord.shards", &n.to_string())
            .map_err(|e| e.to_string())?;
    }
    for o in &args.overrides {
        let (k, v) = o
            .split_once('=')
            .ok_or_else(|| format!("--override expects key=value, got {o:?}"))?;
        config.set(k.trim(), v.trim()).map_err(|e| e.to_string())?;
    }
    Ok(config)
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(
        env_logger::Env::default()
            .default_filter_or("info,openraft=warn,openraft::core::heartbeat=error"),
    )
    .init();
    let cli = Cli::parse();
    let args = match cli.command {
        Some(Command::Serve(a)) => a,
        Some(Command::Groups(g)) => {
            return command_exit("groups", fjord::admin::groups_cli::run_groups(g));
        }
        Some(Command::Topics(a)) => {
            return command_exit("topics", fjord::admin::cli::run_topics(a));
        }
        Some(Command::Configs(a)) => {
            return command_exit("configs", fjord::admin::cli::run_configs(a));
        }
        Some(Command::Acls(a)) => {
            return command_exit("acls", fjord::admin::cli::run_acls(a));
        }
        Some(Command::Users(a)) => {
            return command_exit("users", fjord::admin::cli::run_users(a));
        }
        Some(Command::Cluster(a)) => {
            return command_exit("cluster", fjord::admin::cli::run_cluster(a));
        }
        Some(Command::DumpLog(a)) => {
            return command_exit("dump-log", fjord::admin::dump_log::run(a));
        }
        Some(Command::ImportLogs(a)) => {
            return command_exit("import-logs", run_import(a));
        }
        Some(Command::Format(a)) => {
            return command_exit("format", run_format(a));
        }
        Some(Command::RandomUuid) => {
            println!("{}", fjord::cluster::format::random_kafka_uuid());
            return ExitCode::SUCCESS;
        }
        Some(Command::Metrics(a)) => {
            return command_exit("metrics", run_metrics(a));
        }
        None => ServeArgs::default(),
    };
    let config = match build_config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("fjord: configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    match fjord::boot::run(config) {
        Ok(()) => ExitCode::SUCCESS,
        // Settings that contradict each other: the same exit code as a bad
        // value (Config::validate runs in boot, before anything on disk).
        Err(e @ fjord::boot::BootError::Config(_)) => {
            eprintln!("fjord: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("fjord: {e}");
            ExitCode::from(1)
        }
    }
}

/// The exit of a tool subcommand: 0, or 1 with `fjord CMD: error` on stderr.
fn command_exit(cmd: &str, result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fjord {cmd}: {e}");
            ExitCode::from(1)
        }
    }
}
