//! TLS settings from Kafka's `ssl.*` keys, built into rustls server and
//! client configurations (the `ring` provider; TLS 1.2 and 1.3).
//!
//! Stores are PEM, as Kafka 2.7+ reads them (`ssl.keystore.type=PEM`):
//! `ssl.keystore.location` names a PEM file holding the private key and
//! the certificate chain, or `ssl.keystore.key` and
//! `ssl.keystore.certificate.chain` hold them inline;
//! `ssl.truststore.location` names a PEM file of CA certificates, or
//! `ssl.truststore.certificates` holds them inline. JKS and PKCS12 stores
//! are refused with a message asking for PEM. An encrypted private key
//! (`ssl.key.password`) is refused too: rustls reads unencrypted PKCS#8,
//! PKCS#1 and SEC1 keys.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, RootCertStore, ServerConfig, SupportedProtocolVersion};

/// Why the TLS settings of a listener (or of this broker as a client)
/// cannot be used. Each names the key (and the file) to fix; none carries
/// a password or key material.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A key has a value this broker does not take.
    #[error("invalid value {value:?} for {key}: {allowed}")]
    Invalid {
        /// The key as written (with its `listener.name.` prefix).
        key: String,
        /// The value (never a password or key).
        value: String,
        /// What is allowed.
        allowed: String,
    },
    /// A key Fjord needs is not set.
    #[error("{key} must be set: {why}")]
    Missing {
        /// The key.
        key: String,
        /// What it is for.
        why: String,
    },
    /// A file named by a key could not be read.
    #[error("cannot read {path} ({key}): {source}")]
    File {
        /// The key naming the file.
        key: String,
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A PEM file or value holds no usable certificate or key.
    #[error("{what} in {source_name} ({key}): {reason}")]
    Pem {
        /// The key.
        key: String,
        /// The file, or "the value" for inline PEM.
        source_name: String,
        /// What was looked for.
        what: &'static str,
        /// Why it is unusable.
        reason: String,
    },
    /// rustls refused the assembled configuration (a key not matching its
    /// certificate, an empty trust store, …).
    #[error("TLS settings of {listener}: {reason}")]
    Rustls {
        /// The listener (or "inter-broker client").
        listener: String,
        /// rustls's reason.
        reason: String,
    },
}

/// `ssl.client.auth` (Kafka's `SslClientAuth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// `none`: no client certificate asked.
    None,
    /// `requested`: asked, not required (Kafka calls it a false sense of
    /// security; kept for parity).
    Requested,
    /// `required`: a client without a certificate the truststore accepts
    /// fails the handshake.
    Required,
}

/// One source of settings: gives a key's value for the listener and the
/// key as it was written.
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<(String, String)>;

/// The PEM text of a store: the file named by `<store>.location`, or the
/// inline value of `inline_key`.
fn pem_source(
    get: Lookup<'_>,
    location_key: &str,
    inline_key: &str,
) -> Result<Option<(String, String, Vec<u8>)>, TlsError> {
    if let Some((key, value)) = get(inline_key).filter(|(_, v)| !v.trim().is_empty()) {
        return Ok(Some((key, "the value".to_string(), value.into_bytes())));
    }
    let Some((key, path)) = get(location_key).filter(|(_, v)| !v.trim().is_empty()) else {
        return Ok(None);
    };
    let bytes = std::fs::read(path.trim()).map_err(|source| TlsError::File {
        key: key.clone(),
        path: path.clone(),
        source,
    })?;
    Ok(Some((key, path, bytes)))
}

/// Checks `ssl.<store>.type`: PEM, or unset (then the content must be PEM).
fn check_store_type(get: Lookup<'_>, type_key: &str) -> Result<(), TlsError> {
    match get(type_key) {
        Some((key, v)) if !v.trim().eq_ignore_ascii_case("PEM") => Err(TlsError::Invalid {
            key,
            value: v,
            allowed: "PEM (JKS and PKCS12 stores are not read: convert them with openssl or keytool to PEM)".into(),
        }),
        _ => Ok(()),
    }
}

fn certs(
    key: &str,
    source: &str,
    pem: &[u8],
    what: &'static str,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(pem).collect();
    let certs = certs.map_err(|e| TlsError::Pem {
        key: key.to_string(),
        source_name: source.to_string(),
        what,
        reason: e.to_string(),
    })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            key: key.to_string(),
            source_name: source.to_string(),
            what,
            reason: "no CERTIFICATE block".into(),
        });
    }
    Ok(certs)
}

/// The certificate chain and private key of `ssl.keystore.*`; None when no
/// keystore is configured.
fn keystore(
    get: Lookup<'_>,
) -> Result<Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>, TlsError> {
    check_store_type(get, "ssl.keystore.type")?;
    if let Some((key, _)) = get("ssl.key.password").filter(|(_, v)| !v.is_empty()) {
        return Err(TlsError::Invalid {
            key,
            value: "(hidden)".into(),
            allowed: "unset: encrypted private keys are not read; give an unencrypted PKCS#8 key (openssl pkcs8 -topk8 -nocrypt)".into(),
        });
    }
    let (chain_src, key_src) = match (
        pem_source(
            get,
            "ssl.keystore.location",
            "ssl.keystore.certificate.chain",
        )?,
        get("ssl.keystore.key").filter(|(_, v)| !v.trim().is_empty()),
    ) {
        (None, None) => return Ok(None),
        (Some(chain), Some((k, v))) => (chain, (k, "the value".to_string(), v.into_bytes())),
        (Some(chain), None) => {
            let both = chain.clone();
            (chain, both)
        }
        (None, Some((k, _))) => {
            return Err(TlsError::Missing {
                key: "ssl.keystore.certificate.chain".into(),
                why: format!("{k} is set without a certificate chain"),
            })
        }
    };
    let (ckey, csrc, cpem) = chain_src;
    let chain = certs(&ckey, &csrc, &cpem, "the certificate chain")?;
    let (kkey, ksrc, kpem) = key_src;
    let private = PrivateKeyDer::from_pem_slice(&kpem).map_err(|e| TlsError::Pem {
        key: kkey.clone(),
        source_name: ksrc.clone(),
        what: "the private key",
        reason: match e {
            rustls::pki_types::pem::Error::NoItemsFound => {
                "no PRIVATE KEY block (an ENCRYPTED PRIVATE KEY is not read)".into()
            }
            other => other.to_string(),
        },
    })?;
    Ok(Some((chain, private)))
}

/// The CA certificates of `ssl.truststore.*`; None when none configured.
fn truststore(get: Lookup<'_>) -> Result<Option<RootCertStore>, TlsError> {
    check_store_type(get, "ssl.truststore.type")?;
    let Some((key, src, pem)) = pem_source(
        get,
        "ssl.truststore.location",
        "ssl.truststore.certificates",
    )?
    else {
        return Ok(None);
    };
    let mut roots = RootCertStore::empty();
    for c in certs(&key, &src, &pem, "the CA certificates")? {
        roots.add(c).map_err(|e| TlsError::Pem {
            key: key.clone(),
            source_name: src.clone(),
            what: "a CA certificate",
            reason: e.to_string(),
        })?;
    }
    Ok(Some(roots))
}

/// The protocol versions of `ssl.enabled.protocols` (default
/// `TLSv1.2,TLSv1.3`); older versions are refused.
fn versions(get: Lookup<'_>) -> Result<Vec<&'static SupportedProtocolVersion>, TlsError> {
    let Some((key, value)) = get("ssl.enabled.protocols") else {
        return Ok(vec![&rustls::version::TLS13, &rustls::version::TLS12]);
    };
    let mut out = Vec::new();
    for v in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match v {
            "TLSv1.3" => out.push(&rustls::version::TLS13),
            "TLSv1.2" => out.push(&rustls::version::TLS12),
            _ => {
                return Err(TlsError::Invalid {
                    key,
                    value,
                    allowed: "TLSv1.2 and/or TLSv1.3".into(),
                })
            }
        }
    }
    if out.is_empty() {
        return Err(TlsError::Invalid {
            key,
            value,
            allowed: "TLSv1.2 and/or TLSv1.3".into(),
        });
    }
    Ok(out)
}

/// The `ring` provider, its cipher suites cut to `ssl.cipher.suites` when
/// set (IANA names as Java writes them, e.g. `TLS_AES_128_GCM_SHA256`,
/// `TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`).
fn provider(get: Lookup<'_>) -> Result<Arc<CryptoProvider>, TlsError> {
    // The `ring` provider: no C toolchain build (aws-lc-rs's cmake build
    // costs minutes on every fresh clone). rustls 0.23.48 marks it
    // deprecated for lacking post-quantum key exchange; see
    // docs/decisions/tls-on-rustls.md.
    #[allow(deprecated)]
    let mut p = rustls::crypto::ring::default_provider();
    if let Some((key, value)) = get("ssl.cipher.suites").filter(|(_, v)| !v.trim().is_empty()) {
        let name_of = |s: &rustls::SupportedCipherSuite| {
            let n = format!("{:?}", s.suite());
            n.replacen("TLS13_", "TLS_", 1)
        };
        let wanted: Vec<&str> = value.split(',').map(str::trim).collect();
        for w in &wanted {
            if !p.cipher_suites.iter().any(|s| name_of(s) == *w) {
                let known: Vec<String> = p.cipher_suites.iter().map(name_of).collect();
                return Err(TlsError::Invalid {
                    key,
                    value: w.to_string(),
                    allowed: format!("cipher suites of {}", known.join(", ")),
                });
            }
        }
        p.cipher_suites
            .retain(|s| wanted.contains(&name_of(s).as_str()));
    }
    Ok(Arc::new(p))
}

/// `ssl.client.auth` (default `none`).
pub fn client_auth(get: Lookup<'_>) -> Result<ClientAuth, TlsError> {
    match get("ssl.client.auth") {
        None => Ok(ClientAuth::None),
        Some((key, v)) => match v.trim().to_ascii_lowercase().as_str() {
            "none" | "" => Ok(ClientAuth::None),
            "requested" => Ok(ClientAuth::Requested),
            "required" => Ok(ClientAuth::Required),
            _ => Err(TlsError::Invalid {
                key,
                value: v,
                allowed: "none, requested or required".into(),
            }),
        },
    }
}

/// The server configuration of a TLS listener (`listener` for messages).
pub fn server_config(listener: &str, get: Lookup<'_>) -> Result<Arc<ServerConfig>, TlsError> {
    let provider = provider(get)?;
    let versions = versions(get)?;
    let Some((chain, key)) = keystore(get)? else {
        return Err(TlsError::Missing {
            key: "ssl.keystore.location".into(),
            why: "a TLS listener needs its certificate and key (or ssl.keystore.certificate.chain and ssl.keystore.key)".into(),
        });
    };
    let rustls_err = |e: rustls::Error| TlsError::Rustls {
        listener: listener.to_string(),
        reason: e.to_string(),
    };
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(rustls_err)?;
    let auth = client_auth(get)?;
    let builder = match auth {
        ClientAuth::None => builder.with_no_client_auth(),
        ClientAuth::Requested | ClientAuth::Required => {
            let Some(roots) = truststore(get)? else {
                return Err(TlsError::Missing {
                    key: "ssl.truststore.location".into(),
                    why: "ssl.client.auth asks for client certificates, which are checked against the truststore's CAs".into(),
                });
            };
            let v = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            );
            let v = if auth == ClientAuth::Requested {
                v.allow_unauthenticated()
            } else {
                v
            };
            let v = v.build().map_err(|e| TlsError::Rustls {
                listener: listener.to_string(),
                reason: e.to_string(),
            })?;
            builder.with_client_cert_verifier(v)
        }
    };
    // A key that does not match the certificate is the keystore's fault:
    // named with its key and file, as every other keystore problem.
    let config = builder.with_single_cert(chain, key).map_err(|e| {
        let (key, source_name) = match get("ssl.keystore.location") {
            Some((k, path)) if !path.trim().is_empty() => (k, path),
            _ => (
                get("ssl.keystore.key")
                    .map(|(k, _)| k)
                    .unwrap_or_else(|| "ssl.keystore.key".to_string()),
                "the value".to_string(),
            ),
        };
        TlsError::Pem {
            key,
            source_name,
            what: "a private key matching the certificate",
            reason: e.to_string(),
        }
    })?;
    Ok(Arc::new(config))
}

/// The client configuration this broker uses towards other brokers'
/// TLS listeners: their CAs from the truststore (required), this broker's
/// keystore as its client certificate when one is set, and the host name
/// checked unless `ssl.endpoint.identification.algorithm` is empty.
pub fn client_config(what: &str, get: Lookup<'_>) -> Result<Arc<ClientConfig>, TlsError> {
    let provider = provider(get)?;
    let versions = versions(get)?;
    let Some(roots) = truststore(get)? else {
        return Err(TlsError::Missing {
            key: "ssl.truststore.location".into(),
            why: "this broker connects to other brokers over TLS and checks their certificates against the truststore's CAs".into(),
        });
    };
    let rustls_err = |e: rustls::Error| TlsError::Rustls {
        listener: what.to_string(),
        reason: e.to_string(),
    };
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(rustls_err)?;
    let check_host = get("ssl.endpoint.identification.algorithm")
        .map(|(_, v)| !v.trim().is_empty())
        .unwrap_or(true);
    let webpki =
        rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| TlsError::Rustls {
                listener: what.to_string(),
                reason: e.to_string(),
            })?;
    let builder = if check_host {
        builder.with_webpki_verifier(webpki)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyName(webpki)))
    };
    let config = match keystore(get)? {
        Some((chain, key)) => builder
            .with_client_auth_cert(chain, key)
            .map_err(rustls_err)?,
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// A server verifier that checks the chain but not the host name (Kafka's
/// `ssl.endpoint.identification.algorithm=` empty).
#[derive(Debug)]
struct AnyName(Arc<rustls::client::WebPkiServerVerifier>);

impl rustls::client::danger::ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName))
            | Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(rustls::client::danger::ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
