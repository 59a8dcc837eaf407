//! The first SCRAM credentials of a cluster, as `kafka-storage.sh format
//! --add-scram` gives them (KIP-900): `fjord format --add-scram
//! 'SCRAM-SHA-512=[name=admin,password=admin-secret]'` writes them (salted
//! keys, never the password) to `__cluster_metadata/bootstrap-scram.json`
//! in the data directory.
//!
//! A node reads the file at start: its controller listener accepts them
//! before the metadata log holds any (the nodes of a SASL controller
//! listener must authenticate to each other before a controller is
//! elected), and once this node's broker is registered the active
//! controller writes them into the metadata log for every user that has
//! no credential of that mechanism there yet (`ControllerRequest::
//! BootstrapScram`), so a password changed later through
//! AlterUserScramCredentials is never overwritten.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::controller::{write_atomic, METADATA_DIR};
use crate::security::scram::{ScramCredential, ScramMechanism, MAX_ITERATIONS, MIN_ITERATIONS};

/// The file's name, in the metadata directory.
pub const FILE: &str = "bootstrap-scram.json";

/// One credential of the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootstrapCredential {
    /// The user.
    pub name: String,
    /// The mechanism.
    pub mechanism: ScramMechanism,
    /// The credential (salted keys).
    pub credential: ScramCredential,
}

/// Why an `--add-scram` value is refused (the message never holds the
/// password).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddScramError {
    /// Not `MECHANISM=[key=value,…]`.
    #[error("--add-scram expects MECHANISM=[name=...,password=...], as kafka-storage.sh format")]
    Syntax,
    /// Not SCRAM-SHA-256 or SCRAM-SHA-512.
    #[error("--add-scram: unknown SCRAM mechanism {0} (SCRAM-SHA-256 or SCRAM-SHA-512)")]
    Mechanism(String),
    /// No `name=` or no `password=`.
    #[error("--add-scram: {0} is missing")]
    Missing(&'static str),
    /// `iterations=` outside [4096, 16384].
    #[error("--add-scram: iterations must be in [{MIN_ITERATIONS}, {MAX_ITERATIONS}]")]
    Iterations,
}

/// Parses one `--add-scram` value into a credential (runs PBKDF2): the
/// salt is `salt=` (base64) when given, else random; `iterations=` defaults
/// to 4096; values may be quoted with `"`.
pub fn parse_add_scram(value: &str) -> Result<BootstrapCredential, AddScramError> {
    let (mech, rest) = value.split_once('=').ok_or(AddScramError::Syntax)?;
    let mechanism = ScramMechanism::from_name(mech.trim())
        .ok_or_else(|| AddScramError::Mechanism(mech.trim().to_string()))?;
    let body = rest
        .trim()
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .ok_or(AddScramError::Syntax)?;
    let mut fields = BTreeMap::new();
    for item in body.split(',') {
        let (k, v) = item.split_once('=').ok_or(AddScramError::Syntax)?;
        let v = v.trim();
        let v = v
            .strip_prefix('"')
            .and_then(|x| x.strip_suffix('"'))
            .unwrap_or(v);
        fields.insert(k.trim().to_string(), v.to_string());
    }
    let name = fields.get("name").ok_or(AddScramError::Missing("name"))?;
    let password = fields
        .get("password")
        .ok_or(AddScramError::Missing("password"))?;
    let iterations: i32 = match fields.get("iterations") {
        Some(i) => i.parse().map_err(|_| AddScramError::Iterations)?,
        None => MIN_ITERATIONS,
    };
    if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
        return Err(AddScramError::Iterations);
    }
    let salt = match fields.get("salt") {
        Some(s) => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|_| AddScramError::Syntax)?
        }
        None => {
            let mut s = uuid::Uuid::new_v4().as_bytes().to_vec();
            s.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
            s
        }
    };
    Ok(BootstrapCredential {
        name: name.clone(),
        mechanism,
        credential: ScramCredential::from_password(mechanism, password, salt, iterations),
    })
}

fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(METADATA_DIR).join(FILE)
}

/// Writes `creds` to the data directory's bootstrap file (replacing it).
pub fn write(data_dir: &Path, creds: &[BootstrapCredential]) -> std::io::Result<()> {
    let dir = data_dir.join(METADATA_DIR);
    std::fs::create_dir_all(&dir)?;
    let text = serde_json::to_vec_pretty(creds).map_err(std::io::Error::other)?;
    write_atomic(&path(data_dir), &text)
}

/// The bootstrap credentials of the data directory (none without the
/// file). Errors when the file exists but cannot be read.
pub fn read(data_dir: &Path) -> std::io::Result<Vec<BootstrapCredential>> {
    match std::fs::read(path(data_dir)) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_syntax_and_round_trip() {
        let c = parse_add_scram("SCRAM-SHA-512=[name=admin,password=\"admin-secret\"]").unwrap();
        assert_eq!(
            (c.name.as_str(), c.mechanism),
            ("admin", ScramMechanism::Sha512)
        );
        assert!(c
            .credential
            .verifies(ScramMechanism::Sha512, "admin-secret"));
        let c2 =
            parse_add_scram("SCRAM-SHA-256=[name=bob,password=pw,iterations=8192,salt=c2FsdA==]")
                .unwrap();
        assert_eq!(c2.credential.iterations, 8192);
        assert_eq!(c2.credential.salt, b"salt");
        for bad in [
            "SCRAM-SHA-1=[name=a,password=b]",
            "SCRAM-SHA-256=name=a,password=b",
            "SCRAM-SHA-256=[password=b]",
            "SCRAM-SHA-256=[name=a]",
            "SCRAM-SHA-256=[name=a,password=b,iterations=100]",
        ] {
            let e = parse_add_scram(bad).unwrap_err();
            assert!(!e.to_string().contains("=b"), "{e}");
        }
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap().is_empty());
        write(dir.path(), &[c.clone(), c2.clone()]).unwrap();
        assert_eq!(read(dir.path()).unwrap(), vec![c, c2]);
    }
}
