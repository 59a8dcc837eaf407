//! The layering rule of docs/ARCHITECTURE.md ("Layers"), checked on the
//! source: every `crate::X` path (and, inside `storage`, every `super::X`)
//! in non-test code is held against the directions the layers forbid. Test
//! code (from a file's first `#[cfg(test)]` on, and `tests.rs` files) is
//! not checked: tests may reach across layers to set up state.

use std::path::{Path, PathBuf};

/// (from, to): `from` must not use `to`.
const FORBIDDEN: &[(&str, &[&str])] = &[
    // The data path's bottom layers know nothing of the request path.
    (
        "storage",
        &[
            "shard", "handlers", "net", "group", "txn", "cluster", "config", "admin", "boot",
        ],
    ),
    (
        "protocol",
        &[
            "shard", "handlers", "net", "group", "txn", "cluster", "admin", "boot",
        ],
    ),
    (
        "config",
        &[
            "shard", "handlers", "net", "group", "txn", "cluster", "admin", "boot",
        ],
    ),
    // The coordinators, the cluster and the shards answer to handlers, not
    // the other way round.
    ("group", &["handlers", "net", "admin", "boot"]),
    ("txn", &["handlers", "net", "admin", "boot"]),
    ("shard", &["handlers", "net", "admin", "boot"]),
    ("cluster", &["handlers", "net", "shard", "admin", "boot"]),
    ("handlers", &["net", "admin", "boot"]),
];

/// Inside `storage`, from the bottom up: a module must not use one of a
/// later stage (the log is built from segments and recovery; retention and
/// the cleaner work on the log).
const STORAGE_STAGES: &[&[&str]] = &[
    &["cache", "checkpoint", "index", "log_config", "txn_index"],
    &["batch"],
    &["segment", "recompress"],
    &["recovery"],
    &["log"],
    &["retention", "cleaner"],
];

/// Uses that break the rule today, each with why and who removes it
/// (file relative to src/, target module).
const KNOWN: &[(&str, &str)] = &[];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module names that follow `prefix` in `code` (`crate::storage::log`
/// with prefix `crate::` gives `storage`).
fn targets<'a>(code: &'a str, prefix: &str) -> Vec<&'a str> {
    code.match_indices(prefix)
        .filter(|(i, _)| {
            // Not part of a longer path (`self::crate::`, `foo_crate::`).
            code[..*i]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':'))
        })
        .map(|(i, _)| {
            let rest = &code[i + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect()
}

/// Non-test code of every file under src/, as (path relative to src/, code).
fn sources() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(&src)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        if rel.ends_with("tests.rs") || rel == "layering.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        let code = match text.find("#[cfg(test)]") {
            Some(i) => text[..i].to_string(),
            None => text,
        };
        // Comments may name any module.
        let code: String = code
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        out.push((rel, code));
    }
    out
}

fn top_module(rel: &str) -> &str {
    rel.split('/').next().unwrap_or("").trim_end_matches(".rs")
}

#[test]
fn no_use_against_the_layers() {
    let files = sources();
    assert!(files.len() > 50, "found {} files under src/", files.len());
    let mut broken = Vec::new();
    for (rel, code) in &files {
        let from = top_module(rel);
        let Some((_, banned)) = FORBIDDEN.iter().find(|(m, _)| *m == from) else {
            continue;
        };
        for to in targets(code, "crate::") {
            if banned.contains(&to) && !KNOWN.contains(&(rel.as_str(), to)) {
                broken.push(format!("{rel} uses crate::{to}"));
            }
        }
    }
    broken.sort();
    broken.dedup();
    assert!(
        broken.is_empty(),
        "uses against the layers:\n{}",
        broken.join("\n")
    );
}

#[test]
fn known_exceptions_still_exist() {
    let files = sources();
    for (file, to) in KNOWN {
        let found = files
            .iter()
            .any(|(rel, code)| rel == file && targets(code, "crate::").contains(to));
        assert!(
            found,
            "{file} no longer uses crate::{to}: remove it from KNOWN"
        );
    }
}

#[test]
fn storage_stages_only_look_down() {
    let stage = |m: &str| STORAGE_STAGES.iter().position(|s| s.contains(&m));
    let mut broken = Vec::new();
    for (rel, code) in sources() {
        let Some(name) = rel.strip_prefix("storage/") else {
            continue;
        };
        let from = name.trim_end_matches(".rs");
        if from == "mod" {
            continue;
        }
        let Some(own) = stage(from) else {
            broken.push(format!("storage/{from} is in no stage of STORAGE_STAGES"));
            continue;
        };
        let mut uses = targets(&code, "super::");
        uses.extend(targets(&code, "crate::storage::"));
        for to in uses {
            if let Some(theirs) = stage(to) {
                if theirs > own {
                    broken.push(format!("storage/{from} uses {to}"));
                }
            }
        }
    }
    broken.sort();
    broken.dedup();
    assert!(
        broken.is_empty(),
        "storage modules using a later stage:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_scanner_sees_uses() {
    assert_eq!(
        targets(
            "use crate::storage::log;\nx::crate::no; crate::txn::x",
            "crate::"
        ),
        ["storage", "txn"]
    );
}
