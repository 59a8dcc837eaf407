//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka uses them
//! (KIP-84, KIP-554): the stored credential, the server's two steps and
//! the client's (for Fjord's own inter-broker connections).
//!
//! Messages: client-first `n,[a=authzid],n=user,r=cnonce[,ext]`;
//! server-first `r=cnonce+snonce,s=salt,i=iterations`; client-final
//! `c=biws,r=nonce,p=proof`; server-final `v=signature` (or `e=error`).
//! Channel binding is not supported (`p=` in the GS2 header is refused),
//! as in Kafka. A user with no credential gets a server-first with a salt
//! derived from a per-broker secret and fails at the proof, so the answer
//! does not tell whether the user exists.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;

/// The SCRAM mechanisms Kafka defines (KIP-554 numbers them 1 and 2).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum ScramMechanism {
    /// `SCRAM-SHA-256` (type 1).
    Sha256,
    /// `SCRAM-SHA-512` (type 2).
    Sha512,
}

/// Fewest PBKDF2 iterations Kafka accepts for a credential
/// (`ScramMechanism.minIterations`).
pub const MIN_ITERATIONS: i32 = 4096;
/// Most PBKDF2 iterations Kafka accepts (`ScramMechanism.maxIterations`).
pub const MAX_ITERATIONS: i32 = 16384;

impl ScramMechanism {
    /// The SASL mechanism name.
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism named `name` (exact, as Kafka compares them).
    pub fn from_name(name: &str) -> Option<ScramMechanism> {
        match name {
            "SCRAM-SHA-256" => Some(ScramMechanism::Sha256),
            "SCRAM-SHA-512" => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    /// KIP-554's mechanism type (1 or 2).
    pub fn kip554_type(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    /// The mechanism of KIP-554 type `t`.
    pub fn from_kip554_type(t: i8) -> Option<ScramMechanism> {
        match t {
            1 => Some(ScramMechanism::Sha256),
            2 => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => {
                let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key)
                    .unwrap_or_else(|_| unreachable_hmac());
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
            ScramMechanism::Sha512 => {
                let mut m = <Hmac<Sha512> as Mac>::new_from_slice(key)
                    .unwrap_or_else(|_| unreachable_hmac());
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
            ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// `Hi(password, salt, iterations)`: PBKDF2 with this mechanism's HMAC
    /// (the salted password). CPU work of about a millisecond per 4096
    /// iterations: run it off the reactor.
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => {
                let mut out = [0u8; 32];
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out);
                out.to_vec()
            }
            ScramMechanism::Sha512 => {
                let mut out = [0u8; 64];
                pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out);
                out.to_vec()
            }
        }
    }
}

/// HMAC takes keys of any length; its constructor cannot fail.
fn unreachable_hmac<T>() -> T {
    // Documented by the hmac crate: `new_from_slice` only fails for
    // fixed-size MACs. Recovering is impossible and not needed.
    #[allow(clippy::panic)]
    {
        panic!("HMAC accepts keys of any length")
    }
}

/// What a broker keeps of a user's password for one mechanism (Kafka's
/// `ScramCredential`, KRaft's UserScramCredentialRecord): never the
/// password.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScramCredential {
    /// The salt (bytes).
    pub salt: Vec<u8>,
    /// `H(ClientKey)`.
    pub stored_key: Vec<u8>,
    /// `HMAC(SaltedPassword, "Server Key")`.
    pub server_key: Vec<u8>,
    /// PBKDF2 iterations.
    pub iterations: i32,
}

impl ScramCredential {
    /// The credential of a salted password (what AlterUserScramCredentials
    /// carries, KIP-554).
    pub fn from_salted(
        mechanism: ScramMechanism,
        salt: Vec<u8>,
        salted_password: &[u8],
        iterations: i32,
    ) -> ScramCredential {
        let client_key = mechanism.hmac(salted_password, b"Client Key");
        ScramCredential {
            salt,
            stored_key: mechanism.hash(&client_key),
            server_key: mechanism.hmac(salted_password, b"Server Key"),
            iterations,
        }
    }

    /// The credential of `password` with `salt` and `iterations` (runs
    /// PBKDF2: off the reactor).
    pub fn from_password(
        mechanism: ScramMechanism,
        password: &str,
        salt: Vec<u8>,
        iterations: i32,
    ) -> ScramCredential {
        let salted = mechanism.salted_password(
            password.as_bytes(),
            &salt,
            u32::try_from(iterations).unwrap_or(0),
        );
        ScramCredential::from_salted(mechanism, salt, &salted, iterations)
    }

    /// Whether `password` is this credential's (PBKDF2 again: off the
    /// reactor); compared in constant time.
    pub fn verifies(&self, mechanism: ScramMechanism, password: &str) -> bool {
        let other =
            ScramCredential::from_password(mechanism, password, self.salt.clone(), self.iterations);
        bool::from(other.stored_key.ct_eq(&self.stored_key))
    }
}

/// Why a SCRAM exchange failed. Every variant is answered to the client
/// with the same text (see `security::sasl`); the detail is for the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScramError {
    /// A message does not follow RFC 5802's grammar.
    #[error("malformed SCRAM message: {0}")]
    Malformed(&'static str),
    /// Channel binding (`p=` in the GS2 header) was asked for.
    #[error("channel binding is not supported")]
    ChannelBinding,
    /// The authorization id is not the user name.
    #[error("authorization id differs from the user name")]
    AuthorizationId,
    /// The client's final nonce is not the server's.
    #[error("nonce mismatch")]
    Nonce,
    /// The proof is wrong (or the user has no credential).
    #[error("invalid credentials")]
    Credentials,
    /// The server's signature is wrong (client side).
    #[error("server signature mismatch")]
    ServerSignature,
    /// The server answered `e=…` (client side).
    #[error("server error: {0}")]
    Server(String),
}

/// The attributes of a SCRAM message, in order: `key=value` (RFC 5802's
/// one-letter keys, and Kafka's extensions such as `tokenauth=true`).
fn attributes(msg: &str) -> Result<Vec<(&str, &str)>, ScramError> {
    msg.split(',')
        .map(|a| {
            a.split_once('=')
                .filter(|(k, _)| !k.is_empty())
                .ok_or(ScramError::Malformed("attribute without '='"))
        })
        .collect()
}

/// A user name as SCRAM writes it: `=2C` for `,` and `=3D` for `=`.
fn decode_name(s: &str) -> Result<String, ScramError> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..i]);
        let code = rest
            .get(i + 1..i + 3)
            .ok_or(ScramError::Malformed("bad escape in user name"))?;
        out.push(match code {
            "2C" => ',',
            "3D" => '=',
            _ => return Err(ScramError::Malformed("bad escape in user name")),
        });
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

fn encode_name(s: &str) -> String {
    s.replace('=', "=3D").replace(',', "=2C")
}

/// A client-first message, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFirst {
    /// The authenticated user name.
    pub user: String,
    /// The client's nonce.
    pub nonce: String,
    /// `tokenauth=true` (a delegation token; not supported here).
    pub token_auth: bool,
    /// The message without its GS2 header (part of the AuthMessage).
    bare: String,
    /// The GS2 header (`n,,`), echoed base64 in the client-final.
    gs2: String,
}

impl ClientFirst {
    /// Parses a client-first message. Errors: [`ScramError::Malformed`],
    /// [`ScramError::ChannelBinding`], [`ScramError::AuthorizationId`].
    pub fn parse(msg: &[u8]) -> Result<ClientFirst, ScramError> {
        let msg = std::str::from_utf8(msg).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        let (cb, rest) = msg
            .split_once(',')
            .ok_or(ScramError::Malformed("no GS2 header"))?;
        match cb {
            "n" | "y" => {}
            c if c.starts_with("p=") => return Err(ScramError::ChannelBinding),
            _ => return Err(ScramError::Malformed("bad GS2 channel-binding flag")),
        }
        let (authzid, bare) = rest
            .split_once(',')
            .ok_or(ScramError::Malformed("no GS2 header"))?;
        let authzid = match authzid {
            "" => None,
            a => Some(decode_name(
                a.strip_prefix("a=")
                    .ok_or(ScramError::Malformed("bad authzid"))?,
            )?),
        };
        let attrs = attributes(bare)?;
        let mut user = None;
        let mut nonce = None;
        let mut token_auth = false;
        for (i, (k, v)) in attrs.iter().enumerate() {
            match (i, *k) {
                (_, "m") => return Err(ScramError::Malformed("mandatory extension")),
                (0, "n") => user = Some(decode_name(v)?),
                (1, "r") => nonce = Some(v.to_string()),
                // Kafka's extension for delegation tokens.
                (_, "tokenauth") => token_auth = v.eq_ignore_ascii_case("true"),
                (0, _) | (1, _) => return Err(ScramError::Malformed("n= and r= come first")),
                // Other extensions are ignored, as Kafka does.
                _ => {}
            }
        }
        let user = user.ok_or(ScramError::Malformed("no user name"))?;
        let nonce = nonce
            .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_graphic() && c != ','))
            .ok_or(ScramError::Malformed("no nonce"))?;
        if user.is_empty() {
            return Err(ScramError::Malformed("empty user name"));
        }
        if authzid.as_ref().is_some_and(|a| a != &user) {
            return Err(ScramError::AuthorizationId);
        }
        Ok(ClientFirst {
            user,
            nonce,
            token_auth,
            bare: bare.to_string(),
            gs2: format!("{cb},{},", rest.split(',').next().unwrap_or_default()),
        })
    }
}

/// The server's side of one exchange, after the client-first.
#[derive(Debug)]
pub struct ScramServer {
    mechanism: ScramMechanism,
    first: ClientFirst,
    credential: Option<ScramCredential>,
    server_first: String,
    nonce: String,
}

impl ScramServer {
    /// Answers `first` with the server-first message. `credential` is the
    /// user's (None: unknown user; then `fake_salt` and 4096 iterations are
    /// sent so the answer looks like any other); `server_nonce` is fresh
    /// random printable text.
    pub fn start(
        mechanism: ScramMechanism,
        first: ClientFirst,
        credential: Option<ScramCredential>,
        fake_salt: Vec<u8>,
        server_nonce: &str,
    ) -> (ScramServer, Vec<u8>) {
        let nonce = format!("{}{server_nonce}", first.nonce);
        let (salt, iterations) = match &credential {
            Some(c) => (c.salt.clone(), c.iterations),
            None => (fake_salt, MIN_ITERATIONS),
        };
        let server_first = format!("r={nonce},s={},i={iterations}", B64.encode(salt));
        let msg = server_first.clone().into_bytes();
        (
            ScramServer {
                mechanism,
                first,
                credential,
                server_first,
                nonce,
            },
            msg,
        )
    }

    /// The user the exchange is for.
    pub fn user(&self) -> &str {
        &self.first.user
    }

    /// Checks the client-final message; gives the server-final message (the
    /// server signature) on success. Errors: [`ScramError::Malformed`],
    /// [`ScramError::Nonce`], [`ScramError::Credentials`] (a wrong proof or
    /// an unknown user).
    pub fn finish(&self, msg: &[u8]) -> Result<Vec<u8>, ScramError> {
        let msg = std::str::from_utf8(msg).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        let (without_proof, proof) = msg
            .rsplit_once(",p=")
            .ok_or(ScramError::Malformed("no proof"))?;
        let attrs = attributes(without_proof)?;
        let cb = attrs
            .iter()
            .find(|(k, _)| *k == "c")
            .map(|(_, v)| *v)
            .ok_or(ScramError::Malformed("no channel binding"))?;
        let nonce = attrs
            .iter()
            .find(|(k, _)| *k == "r")
            .map(|(_, v)| *v)
            .ok_or(ScramError::Malformed("no nonce"))?;
        if B64.decode(cb).ok().as_deref() != Some(self.first.gs2.as_bytes()) {
            return Err(ScramError::Malformed(
                "channel binding differs from the GS2 header",
            ));
        }
        // The client's nonce must end with the server's, as Kafka checks
        // it (`endsWith`): librdkafka before 2.x's fix sends its own nonce
        // again in front. The proof covers the message as sent.
        if !nonce.ends_with(&self.nonce) {
            return Err(ScramError::Nonce);
        }
        let proof = B64
            .decode(proof)
            .map_err(|_| ScramError::Malformed("proof is not base64"))?;
        let Some(cred) = &self.credential else {
            return Err(ScramError::Credentials);
        };
        let auth = format!("{},{},{without_proof}", self.first.bare, self.server_first);
        let signature = self.mechanism.hmac(&cred.stored_key, auth.as_bytes());
        if proof.len() != signature.len() {
            return Err(ScramError::Credentials);
        }
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
        let stored = self.mechanism.hash(&client_key);
        if !bool::from(stored.ct_eq(&cred.stored_key)) {
            return Err(ScramError::Credentials);
        }
        let server_signature = self.mechanism.hmac(&cred.server_key, auth.as_bytes());
        Ok(format!("v={}", B64.encode(server_signature)).into_bytes())
    }
}

/// The client's side (Fjord's own connections to other brokers).
#[derive(Debug)]
pub struct ScramClient {
    mechanism: ScramMechanism,
    password: String,
    bare: String,
    nonce: String,
    server_signature: Option<Vec<u8>>,
}

impl ScramClient {
    /// Starts an exchange for `user`; gives the client-first message.
    pub fn start(
        mechanism: ScramMechanism,
        user: &str,
        password: &str,
        nonce: &str,
    ) -> (ScramClient, Vec<u8>) {
        let bare = format!("n={},r={nonce}", encode_name(user));
        let msg = format!("n,,{bare}").into_bytes();
        (
            ScramClient {
                mechanism,
                password: password.to_string(),
                bare,
                nonce: nonce.to_string(),
                server_signature: None,
            },
            msg,
        )
    }

    /// Answers the server-first message with the client-final one (runs
    /// PBKDF2: off the reactor). Errors when the server's message is
    /// malformed, its nonce does not extend ours, or it asks for fewer than
    /// [`MIN_ITERATIONS`].
    pub fn step(&mut self, server_first: &[u8]) -> Result<Vec<u8>, ScramError> {
        let text =
            std::str::from_utf8(server_first).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        if let Some(e) = text.strip_prefix("e=") {
            return Err(ScramError::Server(e.to_string()));
        }
        let attrs = attributes(text)?;
        let get = |c: &str| attrs.iter().find(|(k, _)| *k == c).map(|(_, v)| *v);
        let nonce = get("r").ok_or(ScramError::Malformed("no nonce"))?;
        let salt = get("s")
            .and_then(|s| B64.decode(s).ok())
            .ok_or(ScramError::Malformed("no salt"))?;
        let iterations: i32 = get("i")
            .and_then(|i| i.parse().ok())
            .ok_or(ScramError::Malformed("no iterations"))?;
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err(ScramError::Nonce);
        }
        if iterations < MIN_ITERATIONS {
            return Err(ScramError::Malformed("too few iterations"));
        }
        let salted = self.mechanism.salted_password(
            self.password.as_bytes(),
            &salt,
            u32::try_from(iterations).unwrap_or(0),
        );
        let client_key = self.mechanism.hmac(&salted, b"Client Key");
        let stored_key = self.mechanism.hash(&client_key);
        let without_proof = format!("c={},r={nonce}", B64.encode("n,,"));
        let auth = format!("{},{text},{without_proof}", self.bare);
        let signature = self.mechanism.hmac(&stored_key, auth.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = self.mechanism.hmac(&salted, b"Server Key");
        self.server_signature = Some(self.mechanism.hmac(&server_key, auth.as_bytes()));
        Ok(format!("{without_proof},p={}", B64.encode(proof)).into_bytes())
    }

    /// Checks the server-final message.
    pub fn finish(&self, server_final: &[u8]) -> Result<(), ScramError> {
        let text =
            std::str::from_utf8(server_final).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        if let Some(e) = text.strip_prefix("e=") {
            return Err(ScramError::Server(e.to_string()));
        }
        let v = text
            .strip_prefix("v=")
            .and_then(|v| B64.decode(v).ok())
            .ok_or(ScramError::Malformed("no server signature"))?;
        match &self.server_signature {
            Some(expected) if bool::from(expected.ct_eq(&v)) => Ok(()),
            _ => Err(ScramError::ServerSignature),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677's SCRAM-SHA-256 example, end to end (user "user",
    /// password "pencil").
    #[test]
    fn rfc_7677_example() {
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let cred = ScramCredential::from_password(ScramMechanism::Sha256, "pencil", salt, 4096);
        let first = ClientFirst::parse(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO").unwrap();
        let (server, server_first) = ScramServer::start(
            ScramMechanism::Sha256,
            first,
            Some(cred),
            vec![],
            "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
        );
        assert_eq!(
            server_first,
            b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
        );
        let fin = server
            .finish(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
            .unwrap();
        assert_eq!(fin, b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
    }

    #[test]
    fn client_and_server_agree_and_a_wrong_password_fails() {
        for mech in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
            let cred = ScramCredential::from_password(mech, "s3cret", b"salty".to_vec(), 4096);
            for (password, ok) in [("s3cret", true), ("wrong", false)] {
                let (mut client, first) = ScramClient::start(mech, "al,ice=", password, "cn");
                let first = ClientFirst::parse(&first).unwrap();
                assert_eq!(first.user, "al,ice=");
                let (server, sf) =
                    ScramServer::start(mech, first, Some(cred.clone()), vec![], "sn");
                let cf = client.step(&sf).unwrap();
                match server.finish(&cf) {
                    Ok(fin) => {
                        assert!(ok);
                        client.finish(&fin).unwrap();
                    }
                    Err(e) => {
                        assert!(!ok);
                        assert_eq!(e, ScramError::Credentials);
                    }
                }
            }
            assert!(cred.verifies(mech, "s3cret"));
            assert!(!cred.verifies(mech, "nope"));
        }
    }

    #[test]
    fn an_unknown_user_fails_only_at_the_proof() {
        let first = ClientFirst::parse(b"n,,n=ghost,r=abc").unwrap();
        let (server, sf) =
            ScramServer::start(ScramMechanism::Sha512, first, None, b"fake".to_vec(), "x");
        let text = String::from_utf8(sf).unwrap();
        assert!(text.contains(",i=4096"), "{text}");
        let mut client = ScramClient::start(ScramMechanism::Sha512, "ghost", "pw", "abc").0;
        let cf = client.step(text.as_bytes()).unwrap();
        assert_eq!(server.finish(&cf), Err(ScramError::Credentials));
    }

    #[test]
    fn malformed_client_firsts_are_errors_not_panics() {
        for m in [
            &b""[..],
            b"n",
            b"n,",
            b"n,,",
            b"n,,n",
            b"n,,n=",
            b"n,,n=u",
            b"n,,r=x",
            b"x,,n=u,r=x",
            b"n,a,n=u,r=x",
            b"n,,n=u=zz,r=x",
            b"n,,n=u=2",
            b"\xff\xfe",
        ] {
            assert!(ClientFirst::parse(m).is_err(), "{m:?}");
        }
        assert_eq!(
            ClientFirst::parse(b"p=tls-unique,,n=u,r=x"),
            Err(ScramError::ChannelBinding)
        );
        assert_eq!(
            ClientFirst::parse(b"n,a=other,n=u,r=x"),
            Err(ScramError::AuthorizationId)
        );
        assert!(ClientFirst::parse(b"n,a=u,n=u,r=x").is_ok());
        assert!(
            ClientFirst::parse(b"n,,n=u,r=x,tokenauth=true")
                .unwrap()
                .token_auth
        );
    }

    #[test]
    fn malformed_client_finals_are_errors() {
        let first = ClientFirst::parse(b"n,,n=u,r=abc").unwrap();
        let cred = ScramCredential::from_password(ScramMechanism::Sha256, "p", b"s".to_vec(), 4096);
        let (server, _) =
            ScramServer::start(ScramMechanism::Sha256, first, Some(cred), vec![], "d");
        for m in [
            &b""[..],
            b"p=",
            b"c=biws,p=AA==",
            b"c=biws,r=abc,p=AA==",
            b"c=xx,r=abcd,p=AA==",
            b"c=biws,r=abcd,p=!!",
            b"c=biws,r=abcd,p=AA==",
        ] {
            assert!(server.finish(m).is_err(), "{m:?}");
        }
    }
}
