//! Test certificates made at test time (rcgen): a CA, a broker certificate
//! for `localhost` and `127.0.0.1` (clients keep their host name checks
//! on), and client certificates, written as PEM files into a directory.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};

/// The PEM files of a test PKI.
pub struct TestPki {
    /// The CA certificate (a truststore).
    pub ca: PathBuf,
    /// The broker's certificate chain and key in one file (a PEM
    /// keystore, `ssl.keystore.location`).
    pub broker_keystore: PathBuf,
    /// The broker's certificate alone.
    pub broker_cert: PathBuf,
    /// The broker's key alone.
    pub broker_key: PathBuf,
    /// Client `alice` (CN=alice,OU=eng,O=Test): certificate and key.
    pub alice_cert: PathBuf,
    /// Alice's key.
    pub alice_key: PathBuf,
    /// A certificate and key from another CA (not trusted by the broker).
    pub stranger_cert: PathBuf,
    /// The stranger's key.
    pub stranger_key: PathBuf,
    /// That other CA (a client trusting it does not trust the broker).
    pub other_ca: PathBuf,
}

fn ca(name: &str) -> (rcgen::Certificate, KeyPair) {
    let mut p = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    let key = KeyPair::generate().expect("CA key");
    let cert = p.self_signed(&key).expect("self-signed CA");
    (cert, key)
}

fn leaf(
    sans: &[&str],
    dn: &[(DnType, &str)],
    issuer: &(rcgen::Certificate, KeyPair),
) -> (String, String) {
    let mut p = CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        .expect("leaf params");
    for (t, v) in dn {
        p.distinguished_name.push(t.clone(), *v);
    }
    p.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let key = KeyPair::generate().expect("leaf key");
    let cert = p
        .signed_by(&key, &issuer.0, &issuer.1)
        .expect("signed leaf");
    (cert.pem(), key.serialize_pem())
}

/// Writes a fresh PKI into `dir`.
pub fn make(dir: &Path) -> TestPki {
    std::fs::create_dir_all(dir).expect("pki dir");
    let root = ca("Fjord test CA");
    let other = ca("Other CA");
    let w = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write pem");
        p
    };
    let (bc, bk) = leaf(
        &["localhost", "127.0.0.1"],
        &[(DnType::CommonName, "broker")],
        &root,
    );
    let (ac, ak) = leaf(
        &[],
        &[
            (DnType::OrganizationName, "Test"),
            (DnType::OrganizationalUnitName, "eng"),
            (DnType::CommonName, "alice"),
        ],
        &root,
    );
    let (sc, sk) = leaf(&["localhost"], &[(DnType::CommonName, "stranger")], &other);
    TestPki {
        ca: w("ca.pem", &root.0.pem()),
        broker_keystore: w("broker-keystore.pem", &format!("{bk}{bc}")),
        broker_cert: w("broker.pem", &bc),
        broker_key: w("broker.key", &bk),
        alice_cert: w("alice.pem", &ac),
        alice_key: w("alice.key", &ak),
        stranger_cert: w("stranger.pem", &sc),
        stranger_key: w("stranger.key", &sk),
        other_ca: w("other-ca.pem", &other.0.pem()),
    }
}
