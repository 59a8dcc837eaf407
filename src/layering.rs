//! The layering rule of docs/ARCHITECTURE.md ("Layers"), checked on the
//! source: every path that starts at `crate::`, `super::` or `self::`
//! (grouped imports `use crate::{a, b::{c}}` expanded, `super::` chains
//! resolved against the file's module path and its inline `mod` blocks) in
//! non-test code is held against the directions the layers forbid. The
//! layers below the handlers (`group`, `txn`, `shard`, `storage`) are also
//! held to the protocol crate's records codec: any other path from
//! `kafka_protocol::`, and any `ResponseError`, fails.
//!
//! A small lexer blanks comments, string, raw-string and char literals
//! first, so braces and paths inside them are not seen. Test code is not
//! checked (tests may reach across layers to set up state): the item that
//! follows a `#[cfg(test)]` attribute (a `mod name;`, a `mod name { … }`
//! block, a fn or impl found by brace matching) is blanked, and the files
//! of a `#[cfg(test)] mod name;` (or its `#[path]`) and everything below
//! them are skipped.

use std::path::{Path, PathBuf};

mod lexer;

use lexer::{blank_literals, closing, ident_at, is_ident, item_after, skip_ws};

/// Every layer a pure-state module (no I/O, no other layer) must not use.
const PURE_STATE: &[&str] = &[
    "shard",
    "handlers",
    "net",
    "group",
    "txn",
    "cluster",
    "config",
    "admin",
    "boot",
    "replication",
    "storage",
    "security",
    "transport",
    "protocol",
];

/// (from, to): `from` must not use `to`.
const FORBIDDEN: &[(&str, &[&str])] = &[
    // The data path's bottom layers know nothing of the request path.
    (
        "storage",
        &[
            "shard",
            "handlers",
            "net",
            "group",
            "txn",
            "cluster",
            "config",
            "admin",
            "boot",
            "replication",
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
    // Per-partition producer state sits between the log and the shard.
    (
        "producer_state",
        &[
            "shard",
            "handlers",
            "net",
            "group",
            "txn",
            "cluster",
            "config",
            "admin",
            "boot",
            "replication",
        ],
    ),
    // The coordinators, the cluster and the shards answer to handlers, not
    // the other way round.
    (
        "group",
        &["handlers", "net", "admin", "boot", "replication"],
    ),
    ("txn", &["handlers", "net", "admin", "boot", "replication"]),
    (
        "share_coordinator",
        &["handlers", "net", "admin", "boot", "replication"],
    ),
    // The coordinators are above the shard: they register as its
    // leadership listeners; the shard never names them.
    (
        "shard",
        &[
            "handlers",
            "net",
            "admin",
            "boot",
            "replication",
            "group",
            "txn",
        ],
    ),
    // Replication uses the shards' partitions and the controller; the
    // request path does not come back into it except to propose ISR changes.
    ("replication", &["handlers", "net", "admin", "boot"]),
    (
        "cluster",
        &["handlers", "net", "shard", "admin", "boot", "replication"],
    ),
    // Handlers decode, route and encode: partitions are read and written
    // through the owner's operations (`shard::owner`), never the log.
    ("handlers", &["net", "admin", "boot", "storage"]),
    // Security's settings and exchanges do no I/O and know no layer above
    // the configuration; the byte stream knows only them.
    (
        "security",
        &[
            "shard",
            "handlers",
            "net",
            "group",
            "txn",
            "cluster",
            "admin",
            "boot",
            "replication",
            "storage",
            "transport",
        ],
    ),
    // A share-partition's window is pure state: it knows no other layer.
    ("share", PURE_STATE),
    // The ACL model and StandardAuthorizer's rules are pure: they know no
    // other layer (the image holds their bindings; handlers check with
    // them).
    ("acl", PURE_STATE),
    (
        "transport",
        &[
            "shard",
            "handlers",
            "net",
            "group",
            "txn",
            "cluster",
            "admin",
            "boot",
            "replication",
            "storage",
        ],
    ),
    // The mesh's error, carried by every layer, uses nothing of Fjord's.
    (
        "mesh",
        &[
            "shard",
            "handlers",
            "net",
            "group",
            "txn",
            "cluster",
            "config",
            "admin",
            "boot",
            "storage",
            "protocol",
            "error",
            "replication",
            "stall",
        ],
    ),
    // The task timer every layer spawns through uses nothing of Fjord's.
    (
        "stall",
        &[
            "shard", "handlers", "net", "group", "txn", "cluster", "config", "admin", "boot",
            "storage", "protocol", "error",
        ],
    ),
];

/// The only layers that may use `crate::error`, the edge that turns every
/// layer's typed errors into Kafka error codes: the request path (handlers,
/// and net for the frame errors) and replication, which reads the codes of
/// a leader's answers. Everything below keeps its own typed errors, so
/// nothing the edge imports comes back to it (no circle through the edge).
const ERROR_EDGE_USERS: &[&str] = &["handlers", "net", "replication", "error"];

/// Inside `storage`, from the bottom up: a module must not use one of a
/// later stage (the log is built from segments and recovery; retention and
/// the cleaner work on the log).
const STORAGE_STAGES: &[&[&str]] = &[
    &[
        "cache",
        "checkpoint",
        "epoch_cache",
        "index",
        "log_config",
        "txn_index",
    ],
    &["batch"],
    &["segment", "recompress", "records"],
    &["recovery", "file_jobs"],
    &["log"],
    &["retention", "cleaner"],
];

/// Uses that break the rule today, each with why and who removes it
/// (file relative to src/, target module).
const KNOWN: &[(&str, &str)] = &[];

/// The layers below the handlers speak no Kafka protocol: of the protocol
/// crate their non-test code uses only the record batch codec
/// ([`PROTOCOL_ALLOWED`]), and it never names `ResponseError`: Kafka error
/// codes are decided in `src/error.rs` from their typed errors.
const NO_PROTOCOL: &[&str] = &["group", "txn", "shard", "storage", "producer_state"];

/// The modules of `kafka_protocol` that [`NO_PROTOCOL`] layers may use.
const PROTOCOL_ALLOWED: &[&str] = &["records"];

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

/// Every file under src/, as (path relative to src/, text).
fn read_src() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    files
        .iter()
        .map(|f| {
            let rel = f
                .strip_prefix(&src)
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            (rel, std::fs::read_to_string(f).unwrap_or_default())
        })
        .collect()
}

/// A source file's non-test code, ready to scan.
struct Source {
    /// Path relative to src/.
    rel: String,
    /// Its module path (`group/membership.rs` is `["group", "membership"]`).
    module: Vec<String>,
    /// The code with literals, comments and `#[cfg(test)]` items blanked.
    code: String,
}

fn module_of(rel: &str) -> Vec<String> {
    let mut m: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if m.last().is_some_and(|l| l == "mod" || l == "lib") {
        m.pop();
    }
    m
}

/// Blanks the `#[cfg(test)]` items of `code` (`text` is the original, for
/// `#[path]` values); gives the files of its test-only `mod name;` items,
/// relative to src/ (a `.rs` file, or a directory ending in `/`).
fn blank_test_items(rel: &str, text: &str, code: &mut String) -> Vec<String> {
    const ATTR: &str = "#[cfg(test)]";
    let dir = rel.rfind('/').map_or("", |k| &rel[..=k]);
    let own = if rel.ends_with("mod.rs") || rel == "lib.rs" {
        dir.to_string()
    } else {
        format!("{}/", rel.trim_end_matches(".rs"))
    };
    let mut test_files = Vec::new();
    let mut from = 0;
    while let Some(k) = code[from..].find(ATTR).map(|k| k + from) {
        let b = code.as_bytes();
        let (start, end) = item_after(b, k + ATTR.len());
        let item: Vec<&str> = code[start..end]
            .split(|c: char| !is_ident(c) && c != ';')
            .filter(|w| !w.is_empty())
            .collect();
        if let Some(p) = item.iter().position(|w| *w == "mod") {
            if code[start..end].trim_end().ends_with(';') {
                let name = item.get(p + 1).map_or("", |w| w.trim_end_matches(';'));
                let attrs = &text[k..start];
                match attrs.find("#[path").and_then(|a| {
                    let q = a + attrs[a..].find('"')? + 1;
                    Some(&attrs[q..q + attrs[q..].find('"')?])
                }) {
                    Some(path) => {
                        test_files.push(format!("{dir}{path}"));
                        test_files.push(format!("{dir}{}/", path.trim_end_matches(".rs")));
                    }
                    None => {
                        test_files.push(format!("{own}{name}.rs"));
                        test_files.push(format!("{own}{name}/"));
                    }
                }
            }
        }
        let blanked: String = code[k..end]
            .chars()
            .map(|c| if c == '\n' { c } else { ' ' })
            .collect();
        code.replace_range(k..end, &blanked);
        from = end;
    }
    test_files
}

/// The non-test sources among `files` ((path relative to src/, text)).
fn scan(files: &[(String, String)]) -> Vec<Source> {
    let mut test_files = Vec::new();
    let mut out = Vec::new();
    for (rel, text) in files {
        let mut code = blank_literals(text);
        if code.contains("#![cfg(test)]") {
            test_files.push(rel.clone());
            continue;
        }
        test_files.extend(blank_test_items(rel, text, &mut code));
        out.push(Source {
            rel: rel.clone(),
            module: module_of(rel),
            code,
        });
    }
    out.retain(|s| {
        !test_files
            .iter()
            .any(|t| s.rel == *t || (t.ends_with('/') && s.rel.starts_with(t.as_str())))
    });
    out
}

/// Parses the path (or use tree) at `i`, with `prefix` already read; adds
/// each full path to `out` and gives where it ended.
fn use_tree(b: &[u8], mut i: usize, mut path: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    loop {
        i = skip_ws(b, i);
        if b.get(i) == Some(&b'{') {
            i += 1;
            loop {
                i = skip_ws(b, i);
                match b.get(i) {
                    None => return i,
                    Some(b'}') => return i + 1,
                    Some(b',') => i += 1,
                    Some(_) => {
                        let next = use_tree(b, i, path.clone(), out);
                        if next == i {
                            return i;
                        }
                        i = next;
                    }
                }
            }
        }
        if b.get(i) == Some(&b'*') {
            out.push(path);
            return i + 1;
        }
        let (id, end) = ident_at(b, i);
        if id.is_empty() {
            out.push(path);
            return i;
        }
        // `self` inside a group names the prefix itself.
        if id != "self" || path.is_empty() {
            path.push(id.to_string());
        }
        i = skip_ws(b, end);
        if b[i.min(b.len())..].starts_with(b"::") {
            i += 2;
            continue;
        }
        if ident_at(b, i).0 == "as" {
            i = ident_at(b, skip_ws(b, ident_at(b, i).1)).1;
        }
        out.push(path);
        return i;
    }
}

/// The inline `mod name { … }` blocks of `code`: (name, open, close).
fn inline_mods(code: &str) -> Vec<(String, usize, usize)> {
    let b = code.as_bytes();
    let mut mods = Vec::new();
    for (k, _) in code.match_indices("mod") {
        if k > 0 && (b[k - 1].is_ascii_alphanumeric() || b[k - 1] == b'_') {
            continue;
        }
        let (kw, end) = ident_at(b, k);
        if kw != "mod" {
            continue;
        }
        let (name, end) = ident_at(b, skip_ws(b, end));
        let open = skip_ws(b, end);
        if !name.is_empty() && b.get(open) == Some(&b'{') {
            mods.push((name.to_string(), open, closing(b, open)));
        }
    }
    mods
}

/// Every path of `src` that starts at `crate::`, `super::` or `self::`,
/// resolved to a path from the crate root.
fn uses(src: &Source) -> Vec<Vec<String>> {
    let b = src.code.as_bytes();
    let mods = inline_mods(&src.code);
    let mut out = Vec::new();
    let mut k = 0;
    while k < b.len() {
        let (id, end) = ident_at(b, k);
        if id.is_empty() {
            k += 1;
            continue;
        }
        let starts_path = matches!(id, "crate" | "super" | "self")
            && (k == 0 || !(is_ident(b[k - 1] as char) || b[k - 1] == b':'))
            && b[end..].starts_with(b"::");
        if starts_path {
            let mut module = src.module.clone();
            module.extend(
                mods.iter()
                    .filter(|(_, open, close)| *open < k && k < *close)
                    .map(|(name, _, _)| name.clone()),
            );
            let mut raw = Vec::new();
            use_tree(b, k, Vec::new(), &mut raw);
            out.extend(raw.iter().filter_map(|p| resolve(&module, p)));
        }
        k = end;
    }
    out
}

/// `raw` (starting with `crate`, `self` or `super`s) from the crate root,
/// as seen from `module`; None if it climbs above the root.
fn resolve(module: &[String], raw: &[String]) -> Option<Vec<String>> {
    let (first, rest) = raw.split_first()?;
    let mut abs = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => module[..module.len().checked_sub(1)?].to_vec(),
        _ => return None,
    };
    let mut rest = rest.iter().peekable();
    while rest.peek().is_some_and(|s| *s == "super") {
        rest.next();
        abs.pop()?;
    }
    abs.extend(rest.cloned());
    Some(abs)
}

/// Uses against FORBIDDEN in `sources`, as "file uses crate::to".
fn layer_violations(sources: &[Source]) -> Vec<String> {
    let mut broken = Vec::new();
    for src in sources {
        let Some(from) = src.module.first() else {
            continue;
        };
        let banned = FORBIDDEN
            .iter()
            .find(|(m, _)| m == from)
            .map_or(&[][..], |(_, b)| *b);
        let edge_banned = !ERROR_EDGE_USERS.contains(&from.as_str());
        for path in uses(src) {
            let Some(to) = path.first() else { continue };
            let against = banned.contains(&to.as_str()) || (edge_banned && to == "error");
            if against && !KNOWN.contains(&(src.rel.as_str(), to.as_str())) {
                broken.push(format!("{} uses crate::{to}", src.rel));
            }
        }
    }
    broken.sort();
    broken.dedup();
    broken
}

/// Uses of a later storage stage in `sources`, as "storage/from uses to".
fn stage_violations(sources: &[Source]) -> Vec<String> {
    let stage = |m: &str| STORAGE_STAGES.iter().position(|s| s.contains(&m));
    let mut broken = Vec::new();
    for src in sources {
        let [top, from] = src.module.as_slice() else {
            continue;
        };
        if top != "storage" {
            continue;
        }
        let Some(own) = stage(from) else {
            broken.push(format!("storage/{from} is in no stage of STORAGE_STAGES"));
            continue;
        };
        for path in uses(src) {
            let [top, to, ..] = path.as_slice() else {
                continue;
            };
            if top == "storage" && stage(to).is_some_and(|theirs| theirs > own) {
                broken.push(format!("storage/{from} uses {to}"));
            }
        }
    }
    broken.sort();
    broken.dedup();
    broken
}

/// Every path of `src` that starts at the protocol crate
/// (`kafka_protocol::…`, `::kafka_protocol::…`), grouped imports expanded.
fn protocol_paths(src: &Source) -> Vec<Vec<String>> {
    const CRATE: &str = "kafka_protocol";
    let b = src.code.as_bytes();
    let mut out = Vec::new();
    let mut k = 0;
    while k < b.len() {
        let (id, end) = ident_at(b, k);
        if id.is_empty() {
            k += 1;
            continue;
        }
        let after_ident = k > 0 && is_ident(b[k - 1] as char);
        // `x::kafka_protocol` is some other path; `::kafka_protocol` is the
        // crate's.
        let after_path = k > 2 && &b[k - 2..k] == b"::" && is_ident(b[k - 3] as char);
        if id == CRATE && !after_ident && !after_path {
            use_tree(b, k, Vec::new(), &mut out);
        }
        k = end;
    }
    out
}

/// Uses of the protocol crate beyond [`PROTOCOL_ALLOWED`], and any
/// `ResponseError`, in the non-test code of the [`NO_PROTOCOL`] layers of
/// `sources`.
fn protocol_violations(sources: &[Source]) -> Vec<String> {
    let mut broken = Vec::new();
    for src in sources {
        if !src
            .module
            .first()
            .is_some_and(|m| NO_PROTOCOL.contains(&m.as_str()))
        {
            continue;
        }
        for path in protocol_paths(src) {
            let module = path.get(1).map_or("", String::as_str);
            if !PROTOCOL_ALLOWED.contains(&module) {
                let shown = path[..path.len().min(2)].join("::");
                broken.push(format!("{} uses {shown}", src.rel));
            }
        }
        let b = src.code.as_bytes();
        let mut k = 0;
        while k < b.len() {
            let (id, end) = ident_at(b, k);
            if id.is_empty() {
                k += 1;
                continue;
            }
            if id == "ResponseError" && !(k > 0 && is_ident(b[k - 1] as char)) {
                broken.push(format!("{} names ResponseError", src.rel));
            }
            k = end;
        }
    }
    broken.sort();
    broken.dedup();
    broken
}

#[test]
fn no_use_against_the_layers() {
    let sources = scan(&read_src());
    assert!(
        sources.len() > 50,
        "found {} files under src/",
        sources.len()
    );
    let broken = layer_violations(&sources);
    assert!(
        broken.is_empty(),
        "uses against the layers:\n{}",
        broken.join("\n")
    );
}

#[test]
fn known_exceptions_still_exist() {
    let sources = scan(&read_src());
    for (file, to) in KNOWN {
        let found = sources
            .iter()
            .any(|s| s.rel == *file && uses(s).iter().any(|p| p.first().is_some_and(|t| t == to)));
        assert!(
            found,
            "{file} no longer uses crate::{to}: remove it from KNOWN"
        );
    }
}

#[test]
fn lower_layers_use_only_the_records_codec_of_the_protocol() {
    let sources = scan(&read_src());
    assert!(
        sources
            .iter()
            .any(|s| s.rel.starts_with("storage/") && !protocol_paths(s).is_empty()),
        "the scanner sees no use of kafka_protocol::records in storage"
    );
    let broken = protocol_violations(&sources);
    assert!(
        broken.is_empty(),
        "uses of the protocol beyond its records codec below the handlers:\n{}",
        broken.join("\n")
    );
}

/// The only file whose non-test code may name the protocol crate's record
/// decoder: every decode of record bytes goes through its record walk
/// first (`storage::records`), so no count the crate sizes memory from is
/// one the bytes cannot hold.
const RECORD_DECODER_DOOR: &str = "storage/records.rs";

/// Files of `sources` other than [`RECORD_DECODER_DOOR`] whose non-test
/// code names `RecordBatchDecoder`.
fn decoder_violations(sources: &[Source]) -> Vec<String> {
    let mut broken: Vec<String> = sources
        .iter()
        .filter(|s| s.rel != RECORD_DECODER_DOOR && s.code.contains("RecordBatchDecoder"))
        .map(|s| format!("{} names RecordBatchDecoder", s.rel))
        .collect();
    broken.sort();
    broken
}

#[test]
fn record_bytes_are_decoded_only_through_the_record_walk() {
    let sources = scan(&read_src());
    assert!(
        sources
            .iter()
            .any(|s| s.rel == RECORD_DECODER_DOOR && s.code.contains("RecordBatchDecoder")),
        "the scanner sees no RecordBatchDecoder in {RECORD_DECODER_DOOR}"
    );
    let broken = decoder_violations(&sources);
    assert!(
        broken.is_empty(),
        "record bytes decoded past the record walk (use storage::records):\n{}",
        broken.join("\n")
    );
    let seen = decoder_violations(&scan(&[(
        "shard/a.rs".to_string(),
        "fn f(b: &mut Bytes) { let _ = RecordBatchDecoder::decode(b); }".to_string(),
    )]));
    assert_eq!(seen, ["shard/a.rs names RecordBatchDecoder"]);
}

#[test]
fn storage_stages_only_look_down() {
    let broken = stage_violations(&scan(&read_src()));
    assert!(
        broken.is_empty(),
        "storage modules using a later stage:\n{}",
        broken.join("\n")
    );
}

/// `files` ((path relative to src/, text)) scanned for both rules.
fn violations(files: &[(&str, &str)]) -> Vec<String> {
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(r, t)| (r.to_string(), t.to_string()))
        .collect();
    let sources = scan(&files);
    let mut v = layer_violations(&sources);
    v.extend(stage_violations(&sources));
    v
}

#[test]
fn the_scanner_sees_uses() {
    assert_eq!(
        violations(&[(
            "group/a.rs",
            "use crate::storage::log;\nx::crate::net::no; fn f() { crate::handlers::x(); }"
        )]),
        ["group/a.rs uses crate::handlers"]
    );
}

#[test]
fn only_the_edge_layers_use_the_error_codes() {
    assert_eq!(
        violations(&[
            ("cluster/a.rs", "use crate::error::KafkaCode;"),
            ("config.rs", "fn f() -> crate::error::X { todo!() }"),
            ("handlers/a.rs", "use crate::error::KafkaCode;"),
            ("replication/a.rs", "use crate::error::codes;"),
            ("mesh.rs", "use crate::shard::Shard;"),
        ]),
        [
            "cluster/a.rs uses crate::error",
            "config.rs uses crate::error",
            "mesh.rs uses crate::shard",
        ]
    );
}

#[test]
fn a_use_after_a_test_only_fn_is_seen() {
    let text = r##"
#[cfg(test)]
fn helper() -> &'static str {
    let _c = '}';
    let _q = '\'';
    let _u = '\u{7d}';
    let _s = "}}\"}";
    let _r = r#"}"}"#;
    /* } /* nested } */ */
    // }
    let _ = crate::net::x;
    "{"
}
use crate::handlers::produce;
"##;
    assert_eq!(
        violations(&[("group/a.rs", text)]),
        ["group/a.rs uses crate::handlers"]
    );
}

#[test]
fn only_the_item_after_cfg_test_is_skipped() {
    let text = "#[cfg(test)]\nmod core_tests;\n#[cfg(test)]\n#[path = \"x_tests.rs\"]\nmod x;\n\
                #[cfg(test)]\nmod inline { use crate::net::a; }\n\
                impl S {\n    #[cfg(test)]\n    pub fn t(&self) -> [u8; 2] { crate::boot::x() }\n\
                    fn real(&self) { crate::admin::y() }\n}\n";
    assert_eq!(
        violations(&[
            ("shard/mod.rs", text),
            ("shard/core_tests/mod.rs", "use crate::handlers::a;"),
            ("shard/core_tests/table.rs", "use crate::handlers::b;"),
            ("shard/x_tests.rs", "use crate::net::c;"),
            (
                "shard/y.rs",
                "const S: &str = \"crate::net::z\"; // crate::net"
            ),
        ]),
        ["shard/mod.rs uses crate::admin"]
    );
}

#[test]
fn grouped_imports_are_expanded() {
    assert_eq!(
        violations(&[
            ("txn/a.rs", "use crate::{\n    config::X,\n    storage::{log, Batch},\n    handlers::{self},\n};"),
            ("cluster/b.rs", "use crate::{error::E, shard::{x::{y, z as w}}};"),
            ("group/c.rs", "use crate::{config, storage::*};"),
        ]),
        [
            "cluster/b.rs uses crate::error",
            "cluster/b.rs uses crate::shard",
            "txn/a.rs uses crate::handlers"
        ]
    );
}

#[test]
fn super_chains_resolve_from_the_module() {
    assert_eq!(
        violations(&[
            (
                "group/mod.rs",
                "use super::handlers::x;\nmod inner { use super::super::net::y; }"
            ),
            (
                "group/a/b.rs",
                "use super::super::super::boot::z;\nuse super::super::membership;"
            ),
            ("group/c.rs", "use super::{membership, super::admin::w};"),
        ]),
        [
            "group/a/b.rs uses crate::boot",
            "group/c.rs uses crate::admin",
            "group/mod.rs uses crate::handlers",
            "group/mod.rs uses crate::net",
        ]
    );
}

#[test]
fn storage_stages_see_grouped_and_crate_paths() {
    assert_eq!(
        violations(&[
            ("storage/segment.rs", "use super::{batch::B, log::Log};"),
            (
                "storage/batch.rs",
                "use crate::storage::{index, recovery::R};"
            ),
        ]),
        ["storage/batch uses recovery", "storage/segment uses log"]
    );
}

/// `files` ((path relative to src/, text)) scanned for the protocol rule.
fn protocol_uses(files: &[(&str, &str)]) -> Vec<String> {
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(r, t)| (r.to_string(), t.to_string()))
        .collect();
    protocol_violations(&scan(&files))
}

#[test]
fn the_protocol_scanner_sees_uses_beyond_records() {
    let group = "use kafka_protocol::records::Record;\n\
                 use kafka_protocol::{records::Compression, messages::ApiKey};\n\
                 fn f() -> i16 { kafka_protocol::ResponseError::InvalidRequest.code() }\n\
                 fn g() { let _ = ::kafka_protocol::protocol::StrBytes::new(); }\n";
    assert_eq!(
        protocol_uses(&[
            ("group/a.rs", group),
            ("handlers/a.rs", group),
            (
                "storage/b.rs",
                "use kafka_protocol::records::{self, RecordBatchDecoder};\n\
                 const S: &str = \"kafka_protocol::messages\"; // ResponseError\n\
                 #[cfg(test)]\nmod tests { use kafka_protocol::ResponseError; }\n"
            ),
            ("shard/c.rs", "use kafka_protocol as kp;"),
            (
                "txn/d.rs",
                "use crate::error::codes; type E = ResponseError;"
            ),
            (
                "txn/e.rs",
                "fn h() { my_kafka_protocol::messages::x(); other::kafka_protocol::messages::y(); \
                 let _ = MyResponseError; }"
            ),
        ]),
        [
            "group/a.rs names ResponseError",
            "group/a.rs uses kafka_protocol::ResponseError",
            "group/a.rs uses kafka_protocol::messages",
            "group/a.rs uses kafka_protocol::protocol",
            "shard/c.rs uses kafka_protocol",
            "txn/d.rs names ResponseError",
        ]
    );
}
