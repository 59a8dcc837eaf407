//! The small lexer of the layering check: comments and literals blanked,
//! brackets matched, items and identifiers found by byte offset.

pub(super) fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `text` with comments and string, raw-string, byte-string and char
/// literals replaced by spaces (newlines kept, and as many bytes as they
/// had, so byte offsets stay those of `text`). Lifetimes (`'a`) are kept.
pub(super) fn blank_literals(text: &str) -> String {
    let s: Vec<char> = text.chars().collect();
    let n = s.len();
    let mut blank = vec![false; n];
    let mut i = 0;
    while i < n {
        let c = s[i];
        let at = |k: usize| s.get(k).copied();
        let end = if c == '/' && at(i + 1) == Some('/') {
            s[i..].iter().position(|&c| c == '\n').map_or(n, |p| i + p)
        } else if c == '/' && at(i + 1) == Some('*') {
            let (mut depth, mut j) = (0usize, i);
            while j < n {
                if s[j] == '/' && at(j + 1) == Some('*') {
                    depth += 1;
                    j += 2;
                } else if s[j] == '*' && at(j + 1) == Some('/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            j
        } else if c == '"' {
            let mut j = i + 1;
            while j < n && s[j] != '"' {
                j += if s[j] == '\\' { 2 } else { 1 };
            }
            j + 1
        } else if c == 'r'
            && (i == 0
                || !is_ident(s[i - 1])
                || (matches!(s[i - 1], 'b' | 'c') && (i < 2 || !is_ident(s[i - 2]))))
            && matches!(at(i + 1), Some('"' | '#'))
        {
            let mut j = i + 1;
            let mut hashes = 0;
            while at(j) == Some('#') {
                hashes += 1;
                j += 1;
            }
            if at(j) != Some('"') {
                // A raw identifier (`r#type`).
                i += 1;
                continue;
            }
            j += 1;
            while j < n && !(s[j] == '"' && (1..=hashes).all(|k| at(j + k) == Some('#'))) {
                j += 1;
            }
            j + 1 + hashes
        } else if c == '\'' && at(i + 1) == Some('\\') {
            // '\n', '\'', '\u{7b}'
            let mut j = i + 3;
            while j < n && s[j] != '\'' {
                j += 1;
            }
            j + 1
        } else if c == '\'' && at(i + 2) == Some('\'') {
            i + 3
        } else {
            i += 1;
            continue;
        };
        let end = end.min(n);
        blank[i..end].iter_mut().for_each(|b| *b = true);
        i = end.max(i + 1);
    }
    let mut out = String::with_capacity(text.len());
    for (c, b) in s.iter().zip(&blank) {
        if *b && *c != '\n' {
            out.extend(std::iter::repeat_n(' ', c.len_utf8()));
        } else {
            out.push(*c);
        }
    }
    out
}

/// The index of the bracket that closes the one at `open` (any of `([{`),
/// or the end of `b`.
pub(super) fn closing(b: &[u8], open: usize) -> usize {
    let mut depth = 0i32;
    for (k, c) in b.iter().enumerate().skip(open) {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    b.len()
}

/// From the end of an attribute at `i`: (start of the item after any
/// further attributes, end of that item) — its `;` at bracket depth 0 or
/// the brace that closes its first block.
pub(super) fn item_after(b: &[u8], mut i: usize) -> (usize, usize) {
    loop {
        while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
            i += 1;
        }
        if b[i.min(b.len())..].starts_with(b"#[") {
            i = closing(b, i + 1) + 1;
        } else {
            break;
        }
    }
    let start = i;
    let mut depth = 0i32;
    while i < b.len() {
        match b[i] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b';' if depth == 0 => return (start, i + 1),
            b'{' if depth == 0 => return (start, (closing(b, i) + 1).min(b.len())),
            _ => {}
        }
        i += 1;
    }
    (start, b.len())
}

/// The identifier that starts at `i` (empty if none), and where it ends.
pub(super) fn ident_at(b: &[u8], i: usize) -> (&str, usize) {
    let end = (i..b.len())
        .find(|&k| !(b[k].is_ascii_alphanumeric() || b[k] == b'_'))
        .unwrap_or(b.len());
    (std::str::from_utf8(&b[i.min(end)..end]).unwrap_or(""), end)
}

pub(super) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
        i += 1;
    }
    i
}
