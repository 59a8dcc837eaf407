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
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    let args = match cli.command {
        Some(Command::Serve(a)) => a,
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
        Err(e) => {
            eprintln!("fjord: {e}");
            ExitCode::from(1)
        }
    }
}
