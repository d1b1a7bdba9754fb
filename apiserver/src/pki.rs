//! The generated PKI: a CA, a serving certificate and client certificates, all made with rcgen on first start
//! and reused afterwards; plus the kubeconfig files that carry them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("certificate generation failed: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("{path}: no usable PEM {what} found")]
    Pem { path: PathBuf, what: &'static str },
    #[error("TLS configuration: {0}")]
    Tls(String),
    #[error("client certificate: {0}")]
    Client(String),
}

type Result<T> = std::result::Result<T, PkiError>;

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| PkiError::Io { path: path.to_owned(), source })
}

/// Writes a PKI file; a private key is made `0o600` from the start, never readable by others even for a moment.
fn write(path: &Path, contents: &str, private: bool) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let io = |source| PkiError::Io { path: path.to_owned(), source };
    let mode = if private { 0o600 } else { 0o644 };
    let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(mode).open(path).map_err(io)?;
    file.write_all(contents.as_bytes()).map_err(io)?;
    // A file that existed before keeps its mode through `open`: set it.
    if private {
        file.set_permissions(std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    }
    Ok(())
}

/// The files of the generated PKI inside the data dir.
pub struct PkiPaths {
    pub ca_cert: PathBuf,
    pub ca_key: PathBuf,
    pub serving_cert: PathBuf,
    pub serving_key: PathBuf,
}

impl PkiPaths {
    pub fn new(data_dir: &Path) -> PkiPaths {
        let pki = data_dir.join("pki");
        PkiPaths {
            ca_cert: pki.join("ca.crt"),
            ca_key: pki.join("ca.key"),
            serving_cert: pki.join("apiserver.crt"),
            serving_key: pki.join("apiserver.key"),
        }
    }
}

/// The CA: its PEM certificate and an issuer that signs with its key.
pub struct CertificateAuthority {
    pub cert_pem: String,
    key_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl CertificateAuthority {
    /// Loads the CA from the data dir, generating it on first start.
    pub fn load_or_create(paths: &PkiPaths) -> Result<CertificateAuthority> {
        if paths.ca_cert.exists() && paths.ca_key.exists() {
            let cert_pem = read(&paths.ca_cert)?;
            let key_pem = read(&paths.ca_key)?;
            let key = KeyPair::from_pem(&key_pem)?;
            let issuer = Issuer::from_ca_cert_pem(&cert_pem, key)?;
            return Ok(CertificateAuthority { cert_pem, key_pem, issuer });
        }
        if let Some(dir) = paths.ca_cert.parent() {
            std::fs::create_dir_all(dir).map_err(|source| PkiError::Io { path: dir.to_owned(), source })?;
        }
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, "kspaces-ca");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        params.not_after = rcgen::date_time_ymd(2036, 1, 1);
        let cert = params.self_signed(&key)?;
        let key_pem = key.serialize_pem();
        write(&paths.ca_key, &key_pem, true)?;
        write(&paths.ca_cert, &cert.pem(), false)?;
        Ok(CertificateAuthority { cert_pem: cert.pem(), key_pem, issuer: Issuer::new(params, key) })
    }

    /// A serving certificate for the given DNS names and IPs.
    pub fn serving_cert(&self, dns_names: &[String], ips: &[std::net::IpAddr]) -> Result<(String, String)> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(dns_names.to_vec())?;
        params.subject_alt_names.extend(ips.iter().map(|ip| SanType::IpAddress(*ip)));
        params.distinguished_name.push(DnType::CommonName, "kspaces-apiserver");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.not_after = rcgen::date_time_ymd(2036, 1, 1);
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// A client certificate: CN is the user, each group an O entry (`tenant:<t>` names a tenant).
    ///
    /// Built with x509-cert rather than rcgen: rcgen keeps one value per attribute type (rustls/rcgen#81), so a
    /// user with a group and a tenant would silently lose all O entries but the last.
    pub fn client_cert(&self, user: &str, organizations: &[String]) -> Result<(String, String)> {
        use rcgen::PublicKeyData;
        let key = KeyPair::generate()?;
        let pem = self.sign_client(&key.subject_public_key_info(), user, organizations, std::time::Duration::from_secs(10 * 365 * 24 * 3600))?;
        Ok((pem, key.serialize_pem()))
    }

    /// A client certificate (PEM) for the public key `spki` (DER), naming `user` (CN) and `organizations` (O),
    /// valid for `validity`: a minted kubeconfig's, or an approved CertificateSigningRequest's.
    pub fn sign_client(&self, spki: &[u8], user: &str, organizations: &[String], validity: std::time::Duration) -> Result<String> {
        use p256::pkcs8::DecodePrivateKey;
        use x509_cert::builder::{Builder, CertificateBuilder, Profile};
        use x509_cert::der::{DecodePem, EncodePem};
        use x509_cert::ext::pkix::ExtendedKeyUsage;
        use x509_cert::name::RdnSequence;
        use x509_cert::serial_number::SerialNumber;
        use x509_cert::spki::{ObjectIdentifier, SubjectPublicKeyInfoOwned};
        use x509_cert::time::Validity;

        const CLIENT_AUTH: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.3.2");
        const COMMON_NAME: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.3");
        const ORGANIZATION: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.10");
        let failed = |what: &str, err: &dyn std::fmt::Display| PkiError::Client(format!("{what}: {err}"));

        let spki = SubjectPublicKeyInfoOwned::try_from(spki).map_err(|e| failed("public key", &e))?;
        let ca_key = p256::ecdsa::SigningKey::from_pkcs8_pem(&self.key_pem).map_err(|e| failed("CA key", &e))?;
        let ca_cert = x509_cert::Certificate::from_pem(self.cert_pem.as_bytes()).map_err(|e| failed("CA certificate", &e))?;
        let mut subject = vec![rdn(COMMON_NAME, user).map_err(|e| failed("CN", &e))?];
        for org in organizations {
            subject.push(rdn(ORGANIZATION, org).map_err(|e| failed("O", &e))?);
        }
        let mut serial = *uuid::Uuid::new_v4().as_bytes();
        serial[0] &= 0x7f; // a positive INTEGER
        let serial = SerialNumber::new(&serial).map_err(|e| failed("serial", &e))?;
        let validity = Validity::from_now(validity).map_err(|e| failed("validity", &e))?;
        let profile = Profile::Leaf { issuer: ca_cert.tbs_certificate.subject.clone(), enable_key_agreement: false, enable_key_encipherment: false };
        let mut builder = CertificateBuilder::new(profile, serial, validity, RdnSequence(subject), spki, &ca_key)
            .map_err(|e| failed("certificate", &e))?;
        builder.add_extension(&ExtendedKeyUsage(vec![CLIENT_AUTH])).map_err(|e| failed("extended key usage", &e))?;
        let cert = builder.build::<p256::ecdsa::DerSignature>().map_err(|e| failed("signing", &e))?;
        cert.to_pem(x509_cert::der::pem::LineEnding::LF).map_err(|e| failed("PEM", &e))
    }
}

/// One relative distinguished name holding one UTF8String attribute.
fn rdn(oid: x509_cert::spki::ObjectIdentifier, value: &str) -> x509_cert::der::Result<x509_cert::name::RelativeDistinguishedName> {
    use x509_cert::attr::AttributeTypeAndValue;
    use x509_cert::der::asn1::{Any, SetOfVec};
    use x509_cert::der::Tag;
    let attribute = AttributeTypeAndValue { oid, value: Any::new(Tag::Utf8String, value.as_bytes())? };
    Ok(x509_cert::name::RelativeDistinguishedName(SetOfVec::try_from(vec![attribute])?))
}

/// Makes sure the serving certificate exists (generated under the data dir), returning its files.
pub fn ensure_serving_cert(ca: &CertificateAuthority, paths: &PkiPaths) -> Result<()> {
    if paths.serving_cert.exists() && paths.serving_key.exists() {
        return Ok(());
    }
    let mut names = vec!["localhost".to_owned(), "kubernetes".to_owned(), "kubernetes.default".to_owned()];
    if let Ok(host) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        let host = host.trim();
        if !host.is_empty() && !names.iter().any(|n| n == host) {
            names.push(host.to_owned());
        }
    }
    let ips = ["127.0.0.1".parse(), "::1".parse()].into_iter().flatten().collect::<Vec<std::net::IpAddr>>();
    let (cert, key) = ca.serving_cert(&names, &ips)?;
    write(&paths.serving_key, &key, true)?;
    write(&paths.serving_cert, &cert, false)
}

/// The rustls server configuration: the serving certificate, optional client certificates verified against
/// `client_ca` (so bearer-token clients work on the same port), and ALPN h2 + http/1.1.
pub fn server_config(cert_file: &Path, key_file: &Path, client_ca_pem: &str) -> Result<rustls::ServerConfig> {
    let certs = CertificateDer::pem_slice_iter(read(cert_file)?.as_bytes())
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|_| PkiError::Pem { path: cert_file.to_owned(), what: "certificate" })?;
    let key = PrivateKeyDer::from_pem_slice(read(key_file)?.as_bytes())
        .map_err(|_| PkiError::Pem { path: key_file.to_owned(), what: "private key" })?;
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(client_ca_pem.as_bytes()).flatten() {
        roots.add(ca).map_err(|err| PkiError::Tls(err.to_string()))?;
    }
    let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots))
        .allow_unauthenticated()
        .build()
        .map_err(|err| PkiError::Tls(err.to_string()))?;
    let mut config = rustls::ServerConfig::builder()
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .map_err(|err| PkiError::Tls(err.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// A kubeconfig for one user with a client certificate, the CA embedded.
pub fn kubeconfig(server: &str, ca_pem: &str, cluster: &str, user: &str, cert_pem: &str, key_pem: &str) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {cluster}\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: {user}\n  user:\n    client-certificate-data: {cert}\n    client-key-data: {key}\ncontexts:\n- name: {user}@{cluster}\n  context:\n    cluster: {cluster}\n    user: {user}\ncurrent-context: {user}@{cluster}\n",
        ca = b64(ca_pem),
        cert = b64(cert_pem),
        key = b64(key_pem),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_pki_is_reused_and_builds_a_tls_config() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = tempfile::tempdir().expect("temp dir");
        let paths = PkiPaths::new(dir.path());
        let ca = CertificateAuthority::load_or_create(&paths).expect("create CA");
        ensure_serving_cert(&ca, &paths).expect("serving cert");
        let again = CertificateAuthority::load_or_create(&paths).expect("reload CA");
        assert_eq!(ca.cert_pem, again.cert_pem, "second start reuses the CA");
        server_config(&paths.serving_cert, &paths.serving_key, &ca.cert_pem).expect("tls config");
        let (cert, _) = again.client_cert("alice", &["system:masters".to_owned()]).expect("client cert");
        let der = CertificateDer::from_pem_slice(cert.as_bytes()).expect("pem");
        let (_, parsed) = x509_parser::parse_x509_certificate(&der).expect("x509");
        let cn = parsed.subject().iter_common_name().next().and_then(|cn| cn.as_str().ok());
        assert_eq!(cn, Some("alice"));
    }

    /// Every group survives (rcgen would keep only the last O), and rustls' client verifier accepts the result.
    #[test]
    fn client_certificates_carry_every_group_and_verify_against_the_ca() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = tempfile::tempdir().expect("temp dir");
        let ca = CertificateAuthority::load_or_create(&PkiPaths::new(dir.path())).expect("create CA");
        let groups = ["system:masters".to_owned(), "team, with comma".to_owned(), "tenant:t-a".to_owned()];
        let (cert, _) = ca.client_cert("bob", &groups).expect("client cert");
        let der = CertificateDer::from_pem_slice(cert.as_bytes()).expect("pem");
        let user = crate::filters::authenticate::from_certificate(&der).expect("identity");
        assert_eq!(user.name, "bob");
        assert_eq!(user.tenant.as_deref(), Some("t-a"));
        assert!(user.in_group("system:masters") && user.in_group("team, with comma"), "{:?}", user.groups);

        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from_pem_slice(ca.cert_pem.as_bytes()).expect("ca pem")).expect("root");
        let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots)).build().expect("verifier");
        verifier.verify_client_cert(&der, &[], rustls::pki_types::UnixTime::now()).expect("the CA's client certificate verifies");

        let (two_tenants, _) = ca.client_cert("eve", &["tenant:a".to_owned(), "tenant:b".to_owned()]).expect("cert");
        let der = CertificateDer::from_pem_slice(two_tenants.as_bytes()).expect("pem");
        assert!(crate::filters::authenticate::from_certificate(&der).is_none(), "two tenants authenticate nobody");
    }
}
