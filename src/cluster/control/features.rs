//! UpdateFeatures on the active controller (Kafka's
//! `FeatureControlManager.updateFeatures`, KIP-584/KIP-778): each update is
//! checked against the image's finalized levels and Fjord's supported
//! ranges ([`crate::cluster::features::SUPPORTED`]); the first refused one
//! fails the whole request and nothing is written (Kafka writes the
//! records of one request atomically or not at all). Accepted levels are
//! FeatureLevel records. The bootstrap levels of a new cluster go the same
//! way ([`bootstrap`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::super::features::{self, METADATA_VERSION};
use super::super::metadata::MetadataImage;
use super::super::records::MetadataRecord;
use super::{ControllerReply, Decision};

/// How a level may move (UpdateFeatures v1+ `upgrade_type`; v0's
/// `allow_downgrade` true is [`UpgradeType::SafeDowngrade`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum UpgradeType {
    /// 1: the level may only rise (or stay).
    Upgrade,
    /// 2: a lossless downgrade.
    SafeDowngrade,
    /// 3: a lossy downgrade.
    UnsafeDowngrade,
    /// Any other code: refused.
    Unknown(i8),
}

impl UpgradeType {
    /// From the wire code of v1+.
    pub fn from_code(code: i8) -> UpgradeType {
        match code {
            1 => UpgradeType::Upgrade,
            2 => UpgradeType::SafeDowngrade,
            3 => UpgradeType::UnsafeDowngrade,
            other => UpgradeType::Unknown(other),
        }
    }
}

/// One asked change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureUpdate {
    /// The feature.
    pub feature: String,
    /// The new level (0 removes the feature).
    pub level: i16,
    /// How it may move.
    pub upgrade_type: UpgradeType,
}

/// Why an update is refused: INVALID_UPDATE_VERSION (95) with Kafka's
/// text, `Invalid update version {level} for feature {feature}. {reason}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum FeatureUpdateError {
    /// The level, the feature, the reason as Kafka words it.
    #[error("Invalid update version {level} for feature {feature}. {reason}")]
    InvalidUpdateVersion {
        /// The feature.
        feature: String,
        /// The level asked for.
        level: i16,
        /// Why.
        reason: String,
    },
}

fn refuse(u: &FeatureUpdate, reason: String) -> FeatureUpdateError {
    FeatureUpdateError::InvalidUpdateVersion {
        feature: u.feature.clone(),
        level: u.level,
        reason,
    }
}

/// Checks one update against the levels finalized so far and gives its
/// record; `controller_id` names the controller in Kafka's texts.
fn check(
    finalized: &BTreeMap<String, i16>,
    u: &FeatureUpdate,
    controller_id: i32,
) -> Result<MetadataRecord, FeatureUpdateError> {
    if let UpgradeType::Unknown(_) = u.upgrade_type {
        return Err(refuse(
            u,
            "The controller does not support the given upgrade type.".into(),
        ));
    }
    if u.level < 0 {
        return Err(refuse(u, "A feature version cannot be less than 0.".into()));
    }
    let range = features::supported(&u.feature);
    match range {
        None if u.level > 0 => {
            return Err(refuse(
                u,
                format!("Local controller {controller_id} does not support this feature."),
            ))
        }
        Some(r) if !r.contains(u.level) => {
            return Err(refuse(
                u,
                format!("Local controller {controller_id} only supports versions {r}"),
            ))
        }
        _ => {}
    }
    let current = finalized.get(&u.feature).copied().unwrap_or(0);
    if u.level < current && u.upgrade_type == UpgradeType::Upgrade {
        return Err(refuse(
            u,
            "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.".into(),
        ));
    }
    if u.level > current && u.upgrade_type != UpgradeType::Upgrade {
        return Err(refuse(u, "Can't downgrade to a newer version.".into()));
    }
    if range.is_none() {
        return Err(refuse(u, format!("Feature {} not found.", u.feature)));
    }
    if u.feature == METADATA_VERSION && u.level < current {
        // Unreachable while Fjord serves one metadata.version level; kept
        // as Kafka refuses it.
        return Err(refuse(
            u,
            "Unsafe metadata.version downgrades are not supported.".into(),
        ));
    }
    Ok(MetadataRecord::FeatureLevel {
        name: u.feature.clone(),
        level: u.level,
    })
}

/// The records of an UpdateFeatures, or the first refusal (then nothing is
/// written). `validate_only` checks without records.
pub fn update(
    image: &MetadataImage,
    updates: &[FeatureUpdate],
    validate_only: bool,
    controller_id: i32,
) -> Result<Vec<MetadataRecord>, FeatureUpdateError> {
    let mut finalized = image.finalized_features.clone();
    let mut records = Vec::new();
    for u in updates {
        let r = check(&finalized, u, controller_id)?;
        finalized.insert(u.feature.clone(), u.level);
        records.push(r);
    }
    Ok(if validate_only { Vec::new() } else { records })
}

/// The records that finalize a new cluster's levels (the bootstrap file of
/// `fjord format`, or the defaults): written only while the image has no
/// `metadata.version`, which every bootstrapped cluster has, so a cluster
/// keeps the levels it has once set.
pub fn bootstrap(image: &MetadataImage, levels: &BTreeMap<String, i16>) -> Vec<MetadataRecord> {
    if image.finalized_features.contains_key(METADATA_VERSION) {
        return Vec::new();
    }
    levels
        .iter()
        .filter(|(n, l)| features::supported(n).is_some_and(|r| r.contains(**l)))
        .map(|(n, l)| MetadataRecord::FeatureLevel {
            name: n.clone(),
            level: *l,
        })
        .collect()
}

/// [`update`] as the controller's decision: the records and the outcome.
pub fn decide_update(
    image: &MetadataImage,
    updates: &[FeatureUpdate],
    validate_only: bool,
    controller_id: i32,
) -> Decision {
    match update(image, updates, validate_only, controller_id) {
        Ok(records) => Decision {
            records,
            reply: ControllerReply::UpdateFeatures(Ok(())),
        },
        Err(e) => Decision {
            records: Vec::new(),
            reply: ControllerReply::UpdateFeatures(Err(e)),
        },
    }
}

/// [`bootstrap`] as the controller's decision: the records and how many.
pub fn decide_bootstrap(image: &MetadataImage, levels: &BTreeMap<String, i16>) -> Decision {
    let records = bootstrap(image, levels);
    Decision {
        reply: ControllerReply::BootstrapFeatures(records.len()),
        records,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::features::{ELR_VERSION, GROUP_VERSION, METADATA_VERSION_LEVEL};

    fn up(f: &str, level: i16, t: UpgradeType) -> FeatureUpdate {
        FeatureUpdate {
            feature: f.into(),
            level,
            upgrade_type: t,
        }
    }

    fn reason(r: Result<Vec<MetadataRecord>, FeatureUpdateError>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn checks_as_kafka() {
        let image = MetadataImage::empty("c".into());
        let records = bootstrap(&image, &features::defaults());
        assert_eq!(records.len(), 5);
        let image = image.apply(1, &records);
        assert!(bootstrap(&image, &features::defaults()).is_empty());
        use UpgradeType::*;
        assert_eq!(
            reason(update(&image, &[up("foo.version", 1, Upgrade)], false, 1)),
            "Invalid update version 1 for feature foo.version. Local controller 1 does not support this feature."
        );
        assert_eq!(
            reason(update(
                &image,
                &[up("foo.version", 0, SafeDowngrade)],
                false,
                1
            )),
            "Invalid update version 0 for feature foo.version. Feature foo.version not found."
        );
        assert_eq!(
            reason(update(&image, &[up(GROUP_VERSION, 2, Upgrade)], false, 1)),
            "Invalid update version 2 for feature group.version. Local controller 1 only supports versions 0-1"
        );
        assert!(
            reason(update(&image, &[up(ELR_VERSION, 0, Upgrade)], false, 1))
                .ends_with("only supports versions 1")
        );
        assert!(
            reason(update(&image, &[up(GROUP_VERSION, -1, Upgrade)], false, 1))
                .ends_with("A feature version cannot be less than 0.")
        );
        assert!(reason(update(
            &image,
            &[up(GROUP_VERSION, 0, Unknown(7))],
            false,
            1
        ))
        .ends_with("The controller does not support the given upgrade type."));
        // All or nothing: a good update beside a refused one writes nothing.
        assert!(update(
            &image,
            &[
                up(METADATA_VERSION, METADATA_VERSION_LEVEL, Upgrade),
                up("foo.version", 3, Upgrade)
            ],
            false,
            1
        )
        .is_err());
        let ok = update(&image, &[up(GROUP_VERSION, 0, SafeDowngrade)], false, 1).unwrap();
        assert_eq!(ok.len(), 1);
        assert!(
            update(&image, &[up(GROUP_VERSION, 0, SafeDowngrade)], true, 1)
                .unwrap()
                .is_empty()
        );
    }
}
