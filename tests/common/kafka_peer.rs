//! Apache Kafka 4.4 (one node, combined mode) from `scripts/peers/kafka`,
//! started beside Fjord so a test can run the same requests on both.

use std::path::PathBuf;
use std::process::Command;

use super::ports::free_port;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Whether Kafka's jars are installed (`scripts/peers/kafka install`, which
/// the test command runs). Not installed with `FJORD_REQUIRE_KAFKA_PEER`
/// set (as the test command sets it) fails the test: a comparison must
/// not be left out silently there.
pub fn kafka_installed() -> bool {
    let installed = std::fs::read_dir(repo().join("target/peers"))
        .map(|d| {
            d.flatten()
                .any(|e| e.path().join("libs/.complete").exists())
        })
        .unwrap_or(false);
    if !installed {
        assert!(
            std::env::var("FJORD_REQUIRE_KAFKA_PEER").is_err(),
            "FJORD_REQUIRE_KAFKA_PEER is set but Kafka's jars are not installed (scripts/peers/kafka install)"
        );
        eprintln!("Apache Kafka is not installed: its comparison is left out");
    }
    installed
}

/// A running Kafka node, killed when dropped.
pub struct KafkaPeer {
    home: tempfile::TempDir,
    /// `host:port` of its PLAINTEXT listener.
    pub addr: String,
}

impl KafkaPeer {
    /// The instance directory (`KAFKA_PEER_HOME`): `data/` holds its logs.
    pub fn home(&self) -> &std::path::Path {
        self.home.path()
    }

    /// Kafka with the peer script's defaults plus `settings`
    /// (`server.properties` lines); None when it is not installed.
    pub fn start(settings: &[&str]) -> Option<KafkaPeer> {
        KafkaPeer::start_with(|_, _| settings.iter().map(|s| s.to_string()).collect())
    }

    /// Kafka with the settings `make` gives for its PLAINTEXT and
    /// controller ports (free ones, chosen here); None when it is not
    /// installed. A setting of `listeners` replaces the script's.
    pub fn start_with(make: impl FnOnce(u16, u16) -> Vec<String>) -> Option<KafkaPeer> {
        if !kafka_installed() {
            return None;
        }
        let home = tempfile::Builder::new()
            .prefix("kafka-peer-")
            .tempdir()
            .expect("a temporary directory");
        let (plain, controller) = (free_port(), free_port());
        let out = Command::new(repo().join("scripts/peers/kafka"))
            .arg("start")
            .args(make(plain, controller))
            .env("KAFKA_PEER_HOME", home.path())
            .env("KAFKA_PEER_PORT", plain.to_string())
            .env("KAFKA_PEER_CONTROLLER_PORT", controller.to_string())
            .output()
            .expect("run scripts/peers/kafka");
        assert!(
            out.status.success(),
            "Kafka did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(KafkaPeer {
            home,
            addr: format!("127.0.0.1:{plain}"),
        })
    }
}

impl Drop for KafkaPeer {
    fn drop(&mut self) {
        let _ = Command::new(repo().join("scripts/peers/kafka"))
            .arg("kill")
            .env("KAFKA_PEER_HOME", self.home.path())
            .output();
    }
}
