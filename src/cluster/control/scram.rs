//! AlterUserScramCredentials on the active controller (KIP-554, Kafka's
//! `ScramControlManager`): each user's deletions and upsertions are
//! checked, and a user with no error gets its records
//! (UserScramCredential / RemoveUserScramCredential); a user with an
//! error gets none of its changes (the answer is per user).

use serde::{Deserialize, Serialize};

use super::super::metadata::MetadataImage;
use super::super::records::MetadataRecord;
use crate::security::scram::{ScramCredential, ScramMechanism, MAX_ITERATIONS, MIN_ITERATIONS};

/// One credential to delete: user and KIP-554 mechanism type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramDeletion {
    /// The user.
    pub name: String,
    /// The mechanism type (1: SCRAM-SHA-256, 2: SCRAM-SHA-512).
    pub mechanism: i8,
}

/// One credential to set, as AlterUserScramCredentials carries it: the
/// client salted the password (PBKDF2); the controller derives the keys.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramUpsertion {
    /// The user.
    pub name: String,
    /// The mechanism type.
    pub mechanism: i8,
    /// PBKDF2 iterations.
    pub iterations: i32,
    /// The salt.
    pub salt: Vec<u8>,
    /// `Hi(password, salt, iterations)`.
    pub salted_password: Vec<u8>,
}

impl std::fmt::Debug for ScramUpsertion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramUpsertion")
            .field("name", &self.name)
            .field("mechanism", &self.mechanism)
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

/// Why a user's credential changes were refused; each maps to its Kafka
/// code in `crate::error`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum ScramAlterError {
    /// UNACCEPTABLE_CREDENTIAL (93): an empty user name, iterations outside
    /// [4096, 16384], an empty salt or salted password.
    #[error("{0}")]
    UnacceptableCredential(String),
    /// UNSUPPORTED_SASL_MECHANISM (33): not SCRAM-SHA-256 or -512.
    #[error("unknown SCRAM mechanism type {0}")]
    UnsupportedMechanism(i8),
    /// RESOURCE_NOT_FOUND (91): deleting a credential that does not exist.
    #[error("attempt to delete a user credential that does not exist")]
    ResourceNotFound,
    /// DUPLICATE_RESOURCE (92): the same user and mechanism twice in the
    /// request.
    #[error("a user credential cannot be altered twice in the same request")]
    DuplicateResource,
}

/// Each user's result, in order of first appearance in the request.
pub type UserResults = Vec<(String, Result<(), ScramAlterError>)>;

/// Checks and applies a request: per user (in order of first appearance)
/// its result, and the records of the users without an error.
pub fn alter(
    image: &MetadataImage,
    deletions: &[ScramDeletion],
    upsertions: &[ScramUpsertion],
) -> (Vec<MetadataRecord>, UserResults) {
    let mut users: Vec<String> = Vec::new();
    for n in deletions
        .iter()
        .map(|d| &d.name)
        .chain(upsertions.iter().map(|u| &u.name))
    {
        if !users.contains(n) {
            users.push(n.clone());
        }
    }
    let mut records = Vec::new();
    let mut results = Vec::new();
    for user in users {
        let dels: Vec<&ScramDeletion> = deletions.iter().filter(|d| d.name == user).collect();
        let ups: Vec<&ScramUpsertion> = upsertions.iter().filter(|u| u.name == user).collect();
        match user_records(image, &user, &dels, &ups) {
            Ok(mut r) => {
                records.append(&mut r);
                results.push((user, Ok(())));
            }
            Err(e) => results.push((user, Err(e))),
        }
    }
    (records, results)
}

fn mechanism(t: i8) -> Result<ScramMechanism, ScramAlterError> {
    ScramMechanism::from_kip554_type(t).ok_or(ScramAlterError::UnsupportedMechanism(t))
}

fn user_records(
    image: &MetadataImage,
    user: &str,
    dels: &[&ScramDeletion],
    ups: &[&ScramUpsertion],
) -> Result<Vec<MetadataRecord>, ScramAlterError> {
    if user.is_empty() {
        return Err(ScramAlterError::UnacceptableCredential(
            "Username must not be empty".into(),
        ));
    }
    let mut seen = Vec::new();
    for t in dels
        .iter()
        .map(|d| d.mechanism)
        .chain(ups.iter().map(|u| u.mechanism))
    {
        if seen.contains(&t) {
            return Err(ScramAlterError::DuplicateResource);
        }
        seen.push(t);
    }
    let mut records = Vec::new();
    for d in dels {
        let m = mechanism(d.mechanism)?;
        let exists = image
            .scram_credentials
            .get(user)
            .is_some_and(|c| c.contains_key(&m));
        if !exists {
            return Err(ScramAlterError::ResourceNotFound);
        }
        records.push(MetadataRecord::RemoveUserScramCredential {
            name: user.to_string(),
            mechanism: m,
        });
    }
    for u in ups {
        let m = mechanism(u.mechanism)?;
        if u.iterations < MIN_ITERATIONS {
            return Err(ScramAlterError::UnacceptableCredential(format!(
                "Too few iterations: {} (at least {MIN_ITERATIONS})",
                u.iterations
            )));
        }
        if u.iterations > MAX_ITERATIONS {
            return Err(ScramAlterError::UnacceptableCredential(format!(
                "Too many iterations: {} (at most {MAX_ITERATIONS})",
                u.iterations
            )));
        }
        if u.salt.is_empty() {
            return Err(ScramAlterError::UnacceptableCredential(
                "Salt must not be empty".into(),
            ));
        }
        if u.salted_password.is_empty() {
            return Err(ScramAlterError::UnacceptableCredential(
                "Salted password must not be empty".into(),
            ));
        }
        records.push(MetadataRecord::UserScramCredential {
            name: user.to_string(),
            mechanism: m,
            credential: ScramCredential::from_salted(
                m,
                u.salt.clone(),
                &u.salted_password,
                u.iterations,
            ),
        });
    }
    Ok(records)
}

/// The records of the bootstrap credentials whose user has no credential
/// of that mechanism in `image` (a later change through the API wins).
pub fn bootstrap(
    image: &MetadataImage,
    credentials: &[crate::cluster::bootstrap_scram::BootstrapCredential],
) -> Vec<MetadataRecord> {
    credentials
        .iter()
        .filter(|c| {
            !image
                .scram_credentials
                .get(&c.name)
                .is_some_and(|m| m.contains_key(&c.mechanism))
        })
        .map(|c| MetadataRecord::UserScramCredential {
            name: c.name.clone(),
            mechanism: c.mechanism,
            credential: c.credential.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn up(name: &str, mech: i8, iterations: i32) -> ScramUpsertion {
        ScramUpsertion {
            name: name.into(),
            mechanism: mech,
            iterations,
            salt: b"salt".to_vec(),
            salted_password: b"salted".to_vec(),
        }
    }

    #[test]
    fn kip_554_errors_per_user() {
        let image = MetadataImage::empty("c".into());
        let (records, results) = alter(
            &image,
            &[ScramDeletion {
                name: "gone".into(),
                mechanism: 1,
            }],
            &[
                up("alice", 1, 4096),
                up("alice", 2, 8192),
                up("", 1, 4096),
                up("few", 1, 4095),
                up("many", 1, 16385),
                up("dup", 1, 4096),
                up("dup", 1, 4096),
                up("odd", 3, 4096),
            ],
        );
        let r: Vec<(&str, Result<(), ScramAlterError>)> = results
            .iter()
            .map(|(u, r)| (u.as_str(), r.clone()))
            .collect();
        assert_eq!(r[0], ("gone", Err(ScramAlterError::ResourceNotFound)));
        assert_eq!(r[1], ("alice", Ok(())));
        assert!(matches!(
            r[2].1,
            Err(ScramAlterError::UnacceptableCredential(_))
        ));
        assert!(matches!(
            r[3].1,
            Err(ScramAlterError::UnacceptableCredential(_))
        ));
        assert!(matches!(
            r[4].1,
            Err(ScramAlterError::UnacceptableCredential(_))
        ));
        assert_eq!(r[5].1, Err(ScramAlterError::DuplicateResource));
        assert_eq!(r[6].1, Err(ScramAlterError::UnsupportedMechanism(3)));
        // Only alice's two credentials.
        assert_eq!(records.len(), 2);
        let image = image.apply(1, &records);
        assert_eq!(image.scram_credentials["alice"].len(), 2);
        // Now alice's SCRAM-SHA-256 can be deleted.
        let (records, results) = alter(
            &image,
            &[ScramDeletion {
                name: "alice".into(),
                mechanism: 1,
            }],
            &[],
        );
        assert_eq!(results, vec![("alice".to_string(), Ok(()))]);
        let image = image.apply(2, &records);
        assert_eq!(image.scram_credentials["alice"].len(), 1);
    }
}
