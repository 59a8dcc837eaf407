//! What an operator command prints: a human table, or JSON with stable keys
//! for scripts (`--json`).

use serde_json::Value;

/// A command's result: the JSON document and the same data as text.
#[derive(Debug, Clone)]
pub struct Report {
    /// The document printed with `--json` (keys are part of the interface).
    pub json: Value,
    /// The text printed without `--json`.
    pub text: String,
}

impl Report {
    /// Takes the JSON document and the text; gives the report.
    pub fn new(json: Value, text: String) -> Report {
        Report { json, text }
    }

    /// Takes whether `--json` was given; gives what to print.
    pub fn render(&self, json: bool) -> String {
        if json {
            serde_json::to_string_pretty(&self.json).unwrap_or_else(|_| "null".into())
        } else {
            self.text.clone()
        }
    }
}

/// Takes a command's report and whether `--json` was given; prints the
/// JSON document or the text, ending in a newline (nothing when empty).
pub fn print(r: &Report, json: bool) {
    let mut out = r.render(json);
    if out.is_empty() {
        return;
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    emit(&out);
}

/// Takes text; writes it to stdout as is. A closed pipe (`| head`) or any
/// other write error ends the output quietly instead of failing the command.
pub fn emit(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

/// Takes a header row and rows of cells; gives them as a left-aligned table,
/// columns separated by two spaces, one line per row.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                let w = widths.get(i).copied().unwrap_or(0);
                s.push_str(&format!("{c:<w$}  "));
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(header.to_vec());
    out.push('\n');
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out
}

/// Takes `key=value` strings (repeatable `--config` options; a value may
/// hold `=`, and several pairs may be given comma-separated as Kafka's
/// tools accept, with `[a,b]` keeping a list value whole); gives the pairs.
pub fn parse_key_values(items: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for item in items {
        for part in split_top_level(item) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("expected key=value, got {part:?}"))?;
            let v = v.trim();
            let v = v
                .strip_prefix('[')
                .and_then(|x| x.strip_suffix(']'))
                .unwrap_or(v);
            out.push((k.trim().to_string(), v.to_string()));
        }
    }
    Ok(out)
}

fn split_top_level(s: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for ch in s.chars() {
        match ch {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                if !cur.trim().is_empty() {
                    parts.push(cur.trim().to_string());
                }
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    if !cur.trim().is_empty() {
        parts.push(cur.trim().to_string());
    }
    parts
}
