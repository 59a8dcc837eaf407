//! Who a connection is: Kafka's `KafkaPrincipal` (`User:<name>`), and how
//! a client certificate's subject becomes one (the default principal
//! builder of Kafka: the subject in Java's RFC 2253 form, then
//! `ssl.principal.mapping.rules`).
//!
//! * PLAINTEXT and SSL without a client certificate: `User:ANONYMOUS`.
//! * SSL with a client certificate: `User:<DN after the mapping rules>`,
//!   the DN as `X500Principal.getName()` writes it: the RDNs from the last
//!   to the first, no spaces, `CN=alice,OU=eng,O=Test`.
//! * SASL: `User:<authenticated user name>`.

use std::fmt;

use regex::Regex;

/// A principal as Kafka names it: a type (`User`) and a name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KafkaPrincipal {
    /// The principal type; `User` for every principal Fjord builds.
    pub kind: String,
    /// The name (a user name, a certificate's mapped DN, `ANONYMOUS`).
    pub name: String,
}

impl KafkaPrincipal {
    /// `User:<name>`.
    pub fn user(name: impl Into<String>) -> KafkaPrincipal {
        KafkaPrincipal {
            kind: "User".to_string(),
            name: name.into(),
        }
    }

    /// `User:ANONYMOUS`: a connection that did not authenticate.
    pub fn anonymous() -> KafkaPrincipal {
        KafkaPrincipal::user("ANONYMOUS")
    }

    /// Parses `Type:name` (as in `super.users`); None without a colon.
    pub fn parse(s: &str) -> Option<KafkaPrincipal> {
        let (kind, name) = s.split_once(':')?;
        Some(KafkaPrincipal {
            kind: kind.to_string(),
            name: name.to_string(),
        })
    }
}

impl fmt::Display for KafkaPrincipal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.name)
    }
}

/// Why `ssl.principal.mapping.rules` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// An item is neither `DEFAULT` nor `RULE:pattern/replacement/[LU]`.
    #[error("invalid rule {0:?}: expected DEFAULT or RULE:pattern/replacement/[LU]")]
    Syntax(String),
    /// A rule's pattern is not a regular expression this broker reads (no
    /// look-around or back-references: Rust's `regex`, not Java's).
    #[error("invalid pattern in rule {rule:?}: {reason}")]
    Pattern {
        /// The rule as written.
        rule: String,
        /// What the regex parser said.
        reason: String,
    },
}

/// One mapping rule.
#[derive(Debug, Clone)]
enum Rule {
    /// The DN itself.
    Default,
    /// A DN matching `whole` (the pattern anchored at both ends) becomes
    /// `pattern` replaced by `replacement`, then lower- or upper-cased.
    Map {
        whole: Regex,
        pattern: Regex,
        replacement: String,
        case: Case,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

/// `ssl.principal.mapping.rules` (Kafka's `SslPrincipalMapper`): rules
/// tried in order, the first that matches maps the DN; `DEFAULT` keeps it;
/// no match keeps it too (as Kafka's mapper falls back to the DN).
#[derive(Debug, Clone)]
pub struct PrincipalRules {
    rules: Vec<Rule>,
}

impl Default for PrincipalRules {
    /// `DEFAULT` (Kafka's default value).
    fn default() -> PrincipalRules {
        PrincipalRules {
            rules: vec![Rule::Default],
        }
    }
}

impl PrincipalRules {
    /// Parses the key's value: a comma-separated list of `DEFAULT` and
    /// `RULE:pattern/replacement/[LU]` items, where a comma, `/` or `\`
    /// inside a pattern or replacement is escaped with `\` (as Kafka's
    /// parser reads them). Errors name the item.
    pub fn parse(value: &str) -> Result<PrincipalRules, RuleError> {
        let chars: Vec<char> = value.chars().collect();
        let mut i = 0;
        let mut rules = Vec::new();
        let rest = |i: usize| chars[i.min(chars.len())..].iter().collect::<String>();
        loop {
            while i < chars.len() && (chars[i] == ',' || chars[i].is_whitespace()) {
                i += 1;
            }
            if i >= chars.len() {
                break;
            }
            let tail = rest(i);
            if tail.starts_with("DEFAULT") {
                rules.push(Rule::Default);
                i += "DEFAULT".len();
            } else if tail.starts_with("RULE:") {
                let start = i;
                i += "RULE:".len();
                let pattern = read_part(&chars, &mut i);
                let replacement = read_part(&chars, &mut i);
                let (Some(pattern), Some(replacement)) = (pattern, replacement) else {
                    return Err(RuleError::Syntax(rest(start)));
                };
                let case = match chars.get(i) {
                    Some('L') => {
                        i += 1;
                        Case::Lower
                    }
                    Some('U') => {
                        i += 1;
                        Case::Upper
                    }
                    _ => Case::Keep,
                };
                let item: String = chars[start..i].iter().collect();
                let bad = |e: regex::Error| RuleError::Pattern {
                    rule: item.clone(),
                    reason: e.to_string(),
                };
                rules.push(Rule::Map {
                    whole: Regex::new(&format!("^(?:{pattern})$")).map_err(bad)?,
                    pattern: Regex::new(&pattern).map_err(bad)?,
                    replacement: java_replacement(&replacement),
                    case,
                });
            } else {
                let item: String = tail.split(',').next().unwrap_or_default().to_string();
                return Err(RuleError::Syntax(item));
            }
            // Each item ends at a comma or the end.
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            match chars.get(i) {
                None | Some(',') => {}
                Some(_) => return Err(RuleError::Syntax(rest(i))),
            }
        }
        if rules.is_empty() {
            rules.push(Rule::Default);
        }
        Ok(PrincipalRules { rules })
    }

    /// The principal name of a certificate whose subject is `dn` (RFC 2253
    /// form, see [`rfc2253`]).
    pub fn map(&self, dn: &str) -> String {
        for rule in &self.rules {
            match rule {
                Rule::Default => return dn.to_string(),
                Rule::Map {
                    whole,
                    pattern,
                    replacement,
                    case,
                } => {
                    if !whole.is_match(dn) {
                        continue;
                    }
                    let mapped = pattern.replace_all(dn, replacement.as_str()).to_string();
                    return match case {
                        Case::Keep => mapped,
                        Case::Lower => mapped.to_lowercase(),
                        Case::Upper => mapped.to_uppercase(),
                    };
                }
            }
        }
        dn.to_string()
    }
}

/// Reads a rule's pattern or replacement from `chars[*i..]` up to the next
/// unescaped `/` (consumed); `\/` and `\,` lose their backslash, other
/// escapes stay (they are the regex's). None when no `/` ends it.
fn read_part(chars: &[char], i: &mut usize) -> Option<String> {
    let mut out = String::new();
    while let Some(&c) = chars.get(*i) {
        *i += 1;
        match c {
            '\\' => match chars.get(*i) {
                Some(&n) if n == '/' || n == ',' => {
                    out.push(n);
                    *i += 1;
                }
                Some(&n) => {
                    out.push('\\');
                    out.push(n);
                    *i += 1;
                }
                None => return None,
            },
            '/' => return Some(out),
            _ => out.push(c),
        }
    }
    None
}

/// A Java replacement string (`$1`, `\$`) in Rust regex's syntax (`${1}`,
/// `$$`).
fn java_replacement(r: &str) -> String {
    let mut out = String::new();
    let mut chars = r.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('$') => out.push_str("$$"),
                Some(n) => out.push(n),
                None => {}
            },
            '$' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                if digits.is_empty() {
                    out.push_str("$$");
                } else {
                    out.push_str(&format!("${{{digits}}}"));
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The subject of a DER certificate in the form of Java's
/// `X500Principal.getName()` (RFC 2253): RDNs from the last to the first,
/// joined by `,`, attributes of one RDN by `+`, known attribute types by
/// their keyword (CN, C, L, ST, O, OU, STREET, DC, UID), others as their
/// dotted OID with the value's DER as `#hex`; special characters escaped.
/// None when the certificate does not parse.
pub fn rfc2253(cert_der: &[u8]) -> Option<String> {
    use x509_parser::prelude::*;
    let (_, cert) = X509Certificate::from_der(cert_der).ok()?;
    let mut rdns: Vec<String> = Vec::new();
    for rdn in cert.subject().iter() {
        let mut attrs: Vec<String> = Vec::new();
        for attr in rdn.iter() {
            let oid = attr.attr_type().to_id_string();
            let keyword = match oid.as_str() {
                "2.5.4.3" => Some("CN"),
                "2.5.4.6" => Some("C"),
                "2.5.4.7" => Some("L"),
                "2.5.4.8" => Some("ST"),
                "2.5.4.10" => Some("O"),
                "2.5.4.11" => Some("OU"),
                "2.5.4.9" => Some("STREET"),
                "0.9.2342.19200300.100.1.25" => Some("DC"),
                "0.9.2342.19200300.100.1.1" => Some("UID"),
                _ => None,
            };
            let text = attr.as_str().ok();
            match (keyword, text) {
                (Some(k), Some(v)) => attrs.push(format!("{k}={}", escape_value(v))),
                _ => {
                    let raw = attr.attr_value();
                    let hex: String = raw.data.iter().map(|b| format!("{b:02x}")).collect();
                    let tag = raw.header.tag().0 as u8;
                    let len = raw.data.len();
                    let prefix = if len < 128 {
                        format!("{tag:02x}{len:02x}")
                    } else {
                        // Long-form lengths do not occur in subject names
                        // in practice; written as DER would.
                        let bytes = (len as u32).to_be_bytes();
                        let skip = bytes.iter().take_while(|b| **b == 0).count();
                        let body: String =
                            bytes[skip..].iter().map(|b| format!("{b:02x}")).collect();
                        format!("{tag:02x}{:02x}{body}", 0x80 | (4 - skip) as u8)
                    };
                    attrs.push(format!("{oid}=#{prefix}{hex}"));
                }
            }
        }
        rdns.push(attrs.join("+"));
    }
    rdns.reverse();
    Some(rdns.join(","))
}

/// Escapes an attribute value as RFC 2253 does: `,+"\<>;` with a
/// backslash, a leading `#` or space and a trailing space too.
fn escape_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let n = v.chars().count();
    for (i, c) in v.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i + 1 == n && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_rules_keep_the_dn() {
        let r = PrincipalRules::parse("DEFAULT").unwrap();
        assert_eq!(r.map("CN=alice,OU=eng,O=Test"), "CN=alice,OU=eng,O=Test");
    }

    /// Kafka's documented examples of `ssl.principal.mapping.rules`.
    #[test]
    fn kafkas_examples() {
        let r = PrincipalRules::parse(
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT",
        )
        .unwrap();
        assert_eq!(
            r.map("CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown"),
            "serviceuser"
        );
        assert_eq!(
            r.map("CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown"),
            "adminuser@admin"
        );
        assert_eq!(r.map("cn=Duke,o=Ok"), "duke");
        let r = PrincipalRules::parse("RULE:^CN=(.*?),.*$/$1/U").unwrap();
        assert_eq!(r.map("CN=alice,OU=eng"), "ALICE");
        // No rule matches and no DEFAULT: the DN itself.
        assert_eq!(r.map("OU=x"), "OU=x");
    }

    #[test]
    fn escaped_slashes_and_commas_stay_in_the_rule() {
        let r = PrincipalRules::parse(r"RULE:^CN=(.*?)\,OU=a\/b$/$1-x/,DEFAULT").unwrap();
        assert_eq!(r.map("CN=bob,OU=a/b"), "bob-x");
    }

    #[test]
    fn bad_rules_are_named() {
        assert!(matches!(
            PrincipalRules::parse("RULE:abc"),
            Err(RuleError::Syntax(_))
        ));
        assert!(matches!(
            PrincipalRules::parse("NONSENSE"),
            Err(RuleError::Syntax(_))
        ));
        assert!(matches!(
            PrincipalRules::parse("RULE:(/x/"),
            Err(RuleError::Pattern { .. })
        ));
    }

    #[test]
    fn values_are_escaped_as_rfc_2253() {
        assert_eq!(escape_value("a,b+c"), r"a\,b\+c");
        assert_eq!(escape_value(" lead"), r"\ lead");
        assert_eq!(escape_value("#x"), r"\#x");
    }

    #[test]
    fn principals_print_and_parse_as_kafka() {
        let p = KafkaPrincipal::parse("User:CN=a,O=b").unwrap();
        assert_eq!(p, KafkaPrincipal::user("CN=a,O=b"));
        assert_eq!(p.to_string(), "User:CN=a,O=b");
        assert_eq!(KafkaPrincipal::anonymous().to_string(), "User:ANONYMOUS");
    }
}
