//! The one JAAS line Kafka reads from `sasl.jaas.config` (and
//! `listener.name.<listener>.<mechanism>.sasl.jaas.config`):
//! `LoginModuleClass required key="value" key2=value2;`. Kafka reads the
//! options with Java's `StreamTokenizer`: quoted values may hold any
//! character, `\"` and `\\` escaped.
//!
//! Which options matter: `username`/`password` (the broker's own
//! credentials as a client of other brokers), `user_<name>="password"`
//! (the users a PLAIN listener accepts), and the OAUTHBEARER ones
//! (`unsecuredLoginStringClaim_sub`, `unsecuredValidator…`).

use std::collections::BTreeMap;

/// A parsed JAAS line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JaasConfig {
    /// The login module's class name.
    pub module: String,
    /// `required`, `requisite`, `sufficient` or `optional`.
    pub flag: String,
    /// The options, by name.
    pub options: BTreeMap<String, String>,
}

/// Why a JAAS line could not be read (the broker refuses to start; the
/// message never contains a value).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JaasError {
    /// No login module class.
    #[error("no login module class")]
    NoModule,
    /// The control flag is not required, requisite, sufficient or optional.
    #[error("login module flag {0:?} is not required, requisite, sufficient or optional")]
    Flag(String),
    /// An option is not `key=value` (its key is named).
    #[error("option {0:?} is not key=value")]
    Option(String),
    /// A quoted value is not closed.
    #[error("a quoted value is not closed")]
    Unterminated,
    /// Kafka takes exactly one login module in `sasl.jaas.config`.
    #[error("more than one login module (sasl.jaas.config takes exactly one)")]
    SeveralModules,
    /// The line does not end with `;`.
    #[error("the line does not end with ';'")]
    NoSemicolon,
}

#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    Quoted(String),
    Eq,
    Semi,
}

fn tokens(s: &str) -> Result<Vec<Token>, JaasError> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '=' => {
                chars.next();
                out.push(Token::Eq);
            }
            ';' => {
                chars.next();
                out.push(Token::Semi);
            }
            '"' | '\'' => {
                let quote = c;
                chars.next();
                let mut v = String::new();
                loop {
                    match chars.next() {
                        None => return Err(JaasError::Unterminated),
                        Some('\\') => match chars.next() {
                            Some(n) => v.push(n),
                            None => return Err(JaasError::Unterminated),
                        },
                        Some(c) if c == quote => break,
                        Some(c) => v.push(c),
                    }
                }
                out.push(Token::Quoted(v));
            }
            _ => {
                let mut w = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() || c == '=' || c == ';' || c == '"' || c == '\'' {
                        break;
                    }
                    w.push(c);
                    chars.next();
                }
                out.push(Token::Word(w));
            }
        }
    }
    Ok(out)
}

impl JaasConfig {
    /// Parses one `sasl.jaas.config` value. Errors never echo an option's
    /// value (it may be a password).
    pub fn parse(s: &str) -> Result<JaasConfig, JaasError> {
        let toks = tokens(s)?;
        let mut it = toks.into_iter().peekable();
        let module = match it.next() {
            Some(Token::Word(m)) => m,
            _ => return Err(JaasError::NoModule),
        };
        let flag = match it.next() {
            Some(Token::Word(f)) => f,
            _ => return Err(JaasError::Flag(String::new())),
        };
        if !["required", "requisite", "sufficient", "optional"].contains(&flag.as_str()) {
            return Err(JaasError::Flag(flag));
        }
        let mut options = BTreeMap::new();
        loop {
            match it.next() {
                Some(Token::Semi) => break,
                Some(Token::Word(k)) => {
                    if it.next() != Some(Token::Eq) {
                        return Err(JaasError::Option(k));
                    }
                    match it.next() {
                        Some(Token::Word(v)) | Some(Token::Quoted(v)) => {
                            options.insert(k, v);
                        }
                        _ => return Err(JaasError::Option(k)),
                    }
                }
                Some(Token::Quoted(_)) | Some(Token::Eq) => {
                    return Err(JaasError::Option(String::new()))
                }
                None => return Err(JaasError::NoSemicolon),
            }
        }
        if it.next().is_some() {
            return Err(JaasError::SeveralModules);
        }
        Ok(JaasConfig {
            module,
            flag,
            options,
        })
    }

    /// The users a PLAIN server accepts: `user_<name>="password"`.
    pub fn plain_users(&self) -> BTreeMap<String, String> {
        self.options
            .iter()
            .filter_map(|(k, v)| k.strip_prefix("user_").map(|u| (u.to_string(), v.clone())))
            .collect()
    }

    /// The `username` and `password` options (a client's own credentials).
    pub fn client_credentials(&self) -> Option<(String, String)> {
        Some((
            self.options.get("username")?.clone(),
            self.options.get("password")?.clone(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_plain_example() {
        let j = JaasConfig::parse(
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice;secret";"#,
        )
        .unwrap();
        assert_eq!(
            j.module,
            "org.apache.kafka.common.security.plain.PlainLoginModule"
        );
        assert_eq!(
            j.client_credentials(),
            Some(("admin".into(), "admin-secret".into()))
        );
        let users = j.plain_users();
        assert_eq!(users["alice"], "alice;secret");
        assert_eq!(users.len(), 2);
    }

    #[test]
    fn escapes_and_unquoted_values() {
        let j = JaasConfig::parse(r#"M optional a=b c="x\"y\\z";"#).unwrap();
        assert_eq!(j.options["a"], "b");
        assert_eq!(j.options["c"], r#"x"y\z"#);
    }

    #[test]
    fn errors_do_not_echo_values() {
        for (line, err) in [
            ("", JaasError::NoModule),
            ("M maybe;", JaasError::Flag("maybe".into())),
            ("M required a;", JaasError::Option("a".into())),
            (r#"M required a="secret"#, JaasError::Unterminated),
            ("M required a=b", JaasError::NoSemicolon),
            ("M required; N required;", JaasError::SeveralModules),
        ] {
            let e = JaasConfig::parse(line).unwrap_err();
            assert_eq!(e, err, "{line}");
            assert!(!e.to_string().contains("secret"));
        }
    }
}
