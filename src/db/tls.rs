//! TLS with libpq's semantics, mode by mode, over rustls (no OpenSSL headers).
//!
//! tokio-postgres itself knows only `disable|prefer|require`, and a default
//! rustls configuration verifies chain and host name: plugged in as it is, it
//! would turn `require` into `verify-full` and refuse the self-signed
//! certificates Debian's own clusters use. So planck parses the TLS keywords
//! itself and picks the certificate check libpq would make:
//!
//! | sslmode | root certificate file | check |
//! |---|---|---|
//! | `allow`, `prefer`, `require` | none | none (encrypt only) |
//! | `allow`, `prefer`, `require` | present | chain (libpq's verify-ca) |
//! | `verify-ca` | required | chain, any host name |
//! | `verify-full` | required (or `system`) | chain and host name |
//!
//! The root certificate file is `sslrootcert`, else `~/.postgresql/root.crt`
//! when it exists. `sslrootcert=system` takes the operating system's trusted
//! roots (rustls-native-certs reads the same store OpenSSL does) and, as in
//! libpq 16, implies `verify-full`. Falling back between plain and TLS
//! (`allow`, `prefer`) happens in `connect`.
//!
//! A self-signed server certificate named in `sslrootcert`, and the
//! certificate revocation lists of `sslcrl` and `sslcrldir`, are checked as
//! OpenSSL checks them: see [`verify`].

mod signature;
mod verify;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{
    CertificateDer, CertificateRevocationListDer, PrivateKeyDer, ServerName, UnixTime,
};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use serde::{Deserialize, Serialize};
use tokio_postgres_rustls::MakeRustlsConnect;
use x509_cert::der::Decode;

use signature::handshake_signature;
pub use verify::CertRefused;
use verify::{Crl, LibpqVerifier};

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub fn parse(s: &str) -> Option<SslMode> {
        Some(match s {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// Whether a connection without TLS is refused.
    pub fn requires_tls(self) -> bool {
        self >= SslMode::Require
    }
}

/// Where trusted roots come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RootCert {
    /// A PEM file (`sslrootcert`, or libpq's default `~/.postgresql/root.crt`).
    File(PathBuf),
    /// `sslrootcert=system`: the operating system's trusted roots.
    System,
}

/// The TLS part of a connection's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsOptions {
    pub mode: SslMode,
    /// `None` when neither `sslrootcert` nor a home directory is known.
    pub root_cert: Option<RootCert>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// `sslcrl`: a PEM file of certificate revocation lists.
    pub crl: Option<PathBuf>,
    /// `sslcrldir`: a directory of PEM files of certificate revocation lists.
    pub crl_dir: Option<PathBuf>,
    /// libpq's default CRL file, `~/.postgresql/root.crl`, used when it
    /// exists and neither `sslcrl` nor `sslcrldir` is given.
    pub default_crl: Option<PathBuf>,
    /// `sslsni`: send the host name in the handshake (default on).
    pub sni: bool,
    /// `ssl_min_protocol_version` / `ssl_max_protocol_version`: TLS 1.2 or 1.3.
    pub min_tls13: bool,
    pub max_tls12: bool,
}

impl Default for TlsOptions {
    fn default() -> TlsOptions {
        TlsOptions {
            mode: SslMode::Prefer,
            root_cert: None,
            cert: None,
            key: None,
            crl: None,
            crl_dir: None,
            default_crl: None,
            sni: true,
            min_tls13: false,
            max_tls12: false,
        }
    }
}

/// How the server's certificate is checked, once the files are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    None,
    Chain,
    ChainAndHost,
}

impl TlsOptions {
    /// The check libpq would make: see the table in the module docs.
    pub fn check(&self) -> Result<Verification, String> {
        let root_present = match &self.root_cert {
            Some(RootCert::System) => true,
            Some(RootCert::File(p)) => p.exists(),
            None => false,
        };
        match self.mode {
            SslMode::VerifyFull | SslMode::VerifyCa if !root_present => Err(format!(
                "root certificate file {} does not exist; either provide the file \
                 (sslrootcert), use the system's trusted roots (sslrootcert=system), or \
                 change sslmode to disable server certificate verification",
                match &self.root_cert {
                    Some(RootCert::File(p)) => format!("\"{}\"", p.display()),
                    _ => "(no sslrootcert and no home directory)".to_string(),
                }
            )),
            SslMode::VerifyFull => Ok(Verification::ChainAndHost),
            _ if self.root_cert == Some(RootCert::System) => Ok(Verification::ChainAndHost),
            _ if root_present => Ok(Verification::Chain),
            _ => Ok(Verification::None),
        }
    }

    /// The rustls connector for these options (reads the certificate files).
    pub fn connector(&self) -> Result<MakeRustlsConnect, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let versions: Vec<&'static rustls::SupportedProtocolVersion> = [
            (!self.max_tls12).then_some(&rustls::version::TLS13),
            (!self.min_tls13).then_some(&rustls::version::TLS12),
        ]
        .into_iter()
        .flatten()
        .collect();
        if versions.is_empty() {
            return Err("ssl_min_protocol_version is above ssl_max_protocol_version".into());
        }
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|e| format!("setting up TLS: {e}"))?;
        let check = if self.mode == SslMode::Disable {
            Verification::None
        } else {
            self.check()?
        };
        let verifier: Arc<dyn ServerCertVerifier> = match check {
            Verification::None => Arc::new(NoCheck(provider.clone())),
            Verification::Chain | Verification::ChainAndHost => {
                let (store, roots) = self.roots()?;
                let crls = self.crls()?;
                let mut webpki =
                    WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone());
                if !crls.is_empty() {
                    webpki = webpki.with_crls(crls.iter().map(|(der, _)| der.clone()));
                }
                let webpki = webpki
                    .build()
                    .map_err(|e| format!("setting up certificate verification: {e}"))?;
                Arc::new(LibpqVerifier {
                    webpki,
                    check_host: check == Verification::ChainAndHost,
                    roots,
                    roots_label: match &self.root_cert {
                        Some(RootCert::File(p)) => format!("\"{}\"", p.display()),
                        _ => "(the system's trusted roots)".to_string(),
                    },
                    crls: crls.into_iter().map(|(_, c)| c).collect(),
                    algorithms: provider.signature_verification_algorithms,
                })
            }
        };
        let builder = builder
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let mut config = match self.client_cert()? {
            Some((certs, key)) => builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| format!("the client certificate or key is unusable: {e}"))?,
            None => builder.with_no_client_auth(),
        };
        config.enable_sni = self.sni;
        Ok(MakeRustlsConnect::new(config))
    }

    /// The trust store, and the certificates of the root file (a
    /// self-signed server certificate must be one of them).
    fn roots(&self) -> Result<(RootCertStore, Vec<CertificateDer<'static>>), String> {
        let mut roots = RootCertStore::empty();
        let mut from_file = Vec::new();
        match &self.root_cert {
            Some(RootCert::System) => {
                let found = rustls_native_certs::load_native_certs();
                let (added, _) = roots.add_parsable_certificates(found.certs);
                if added == 0 {
                    return Err(
                        "sslrootcert=system: no trusted root certificates found on this system \
                         (install the ca-certificates package)"
                            .into(),
                    );
                }
            }
            Some(RootCert::File(p)) => {
                let certs = read_certs(p, "root certificate")?;
                for c in &certs {
                    roots
                        .add(c.clone())
                        .map_err(|e| format!("root certificate {}: {e}", p.display()))?;
                }
                from_file = certs;
            }
            None => {}
        }
        Ok((roots, from_file))
    }

    /// The certificate revocation lists of `sslcrl` and `sslcrldir` (else
    /// of libpq's default file, when it exists), each parsed.
    ///
    /// Unlike libpq, which silently skips a CRL file or directory it cannot
    /// read, an explicit `sslcrl` or `sslcrldir` that is missing or holds no
    /// CRL is an error: a revocation check that silently does not happen
    /// would be worse than a refusal.
    fn crls(&self) -> Result<Vec<(CertificateRevocationListDer<'static>, Crl)>, String> {
        let mut all = Vec::new();
        let file = self.crl.as_ref().or(match self.crl_dir {
            None => self.default_crl.as_ref().filter(|f| f.exists()),
            Some(_) => None,
        });
        if let Some(f) = file {
            let crls = read_crls(f)?;
            if crls.is_empty() {
                return Err(format!(
                    "certificate revocation list file \"{}\" holds no PEM CRL",
                    f.display()
                ));
            }
            all.extend(crls);
        }
        if let Some(d) = &self.crl_dir {
            let entries =
                std::fs::read_dir(d).map_err(|e| format!("sslcrldir \"{}\": {e}", d.display()))?;
            let mut in_dir: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect();
            in_dir.sort();
            let before = all.len();
            // OpenSSL reads only its hashed names there (`<hash>.r0`, made
            // by `openssl rehash`); planck reads every file that holds PEM
            // CRLs, whatever its name, and skips the others.
            for p in in_dir {
                if let Ok(crls) = read_crls(&p) {
                    all.extend(crls);
                }
            }
            if all.len() == before {
                return Err(format!(
                    "sslcrldir \"{}\" holds no file of PEM certificate revocation lists",
                    d.display()
                ));
            }
        }
        Ok(all)
    }

    /// The client certificate and key, when the certificate file exists (libpq
    /// skips a missing one silently, explicit or default).
    fn client_cert(
        &self,
    ) -> Result<Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>, String> {
        let Some(cert) = self.cert.as_ref().filter(|c| c.exists()) else {
            return Ok(None);
        };
        let certs = read_certs(cert, "client certificate")?;
        let Some(key) = self.key.as_ref().filter(|k| k.exists()) else {
            return Err(format!(
                "certificate present, but not private key file (sslkey{})",
                self.key
                    .as_ref()
                    .map(|k| format!(" \"{}\"", k.display()))
                    .unwrap_or_default()
            ));
        };
        check_key_permissions(key)?;
        let key = PrivateKeyDer::from_pem_file(key)
            .map_err(|e| format!("private key file \"{}\": {e}", key.display()))?;
        Ok(Some((certs, key)))
    }
}

fn read_certs(p: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(p)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{what} file \"{}\": {e}", p.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{what} file \"{}\" holds no PEM certificate",
            p.display()
        ));
    }
    Ok(certs)
}

/// The PEM certificate revocation lists of a file, each parsed (a CRL that
/// does not parse is an error naming the file).
fn read_crls(p: &Path) -> Result<Vec<(CertificateRevocationListDer<'static>, Crl)>, String> {
    let ders: Vec<CertificateRevocationListDer<'static>> =
        CertificateRevocationListDer::pem_file_iter(p)
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(|e| format!("certificate revocation list file \"{}\": {e}", p.display()))?;
    ders.into_iter()
        .map(|der| {
            let list = x509_cert::crl::CertificateList::from_der(der.as_ref()).map_err(|e| {
                format!(
                    "certificate revocation list file \"{}\": not a CRL: {e}",
                    p.display()
                )
            })?;
            Ok((
                der,
                Crl {
                    file: p.to_path_buf(),
                    list,
                },
            ))
        })
        .collect()
}

/// libpq's rule: a key owned by the user must not be readable by group or
/// others; one owned by root may be group-readable (0640).
fn check_key_permissions(key: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(key)
        .map_err(|e| format!("private key file \"{}\": {e}", key.display()))?;
    let mode = meta.mode() & 0o777;
    let allowed = if meta.uid() == 0 { 0o640 } else { 0o600 };
    if mode & !allowed != 0 {
        return Err(format!(
            "private key file \"{}\" has group or world access; file must have \
             permissions u=rw (0600) or less if owned by the current user, or \
             permissions u=rw,g=r (0640) or less if owned by root",
            key.display()
        ));
    }
    Ok(())
}

/// No certificate check (`require` and `prefer` without a root certificate):
/// the handshake's signatures are still verified, so the session is encrypted
/// to whoever holds the certificate's key.
#[derive(Debug)]
struct NoCheck(Arc<CryptoProvider>);

impl ServerCertVerifier for NoCheck {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        handshake_signature(
            false,
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        handshake_signature(
            true,
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A short reason for a rustls failure found in an error's source chain,
/// with the hint that fixes it; `None` when the chain holds no rustls error.
pub(crate) fn explain_tls_failure(
    e: &(dyn std::error::Error + 'static),
) -> Option<(String, &'static str)> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        let found = err.downcast_ref::<rustls::Error>().or_else(|| {
            err.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        });
        if let Some(r) = found {
            if let rustls::Error::InvalidCertificate(CertificateError::Other(o)) = r
                && let Some(refused) = o.0.downcast_ref::<CertRefused>()
            {
                return Some((format!("TLS: {refused}"), refused.hint()));
            }
            let hint = match r {
                rustls::Error::InvalidCertificate(
                    CertificateError::NotValidForName
                    | CertificateError::NotValidForNameContext { .. },
                ) => {
                    "the certificate does not name this host: connect by the name in the \
                     certificate, or use sslmode=verify-ca to check the chain only"
                }
                rustls::Error::InvalidCertificate(
                    CertificateError::UnknownIssuer | CertificateError::BadSignature,
                ) => {
                    "the server's certificate is not signed by a root planck trusts: give \
                     the CA's certificate with sslrootcert=FILE (or PGSSLROOTCERT), or use \
                     sslmode=require to encrypt without verifying"
                }
                rustls::Error::InvalidCertificate(_) => {
                    "the server's certificate was refused: check it (expiry, usage) or its CA \
                     given in sslrootcert"
                }
                _ => "the TLS handshake failed: check sslmode and the server's ssl settings",
            };
            return Some((format!("TLS: {r}"), hint));
        }
        cur = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(mode: SslMode, root: Option<RootCert>) -> TlsOptions {
        TlsOptions {
            mode,
            root_cert: root,
            ..TlsOptions::default()
        }
    }

    #[test]
    fn the_check_follows_libpq_mode_by_mode() {
        let dir = tempfile::tempdir().unwrap();
        let present = dir.path().join("root.crt");
        std::fs::write(&present, "x").unwrap();
        let missing = RootCert::File(dir.path().join("missing.crt"));
        let present = RootCert::File(present);
        for mode in [SslMode::Allow, SslMode::Prefer, SslMode::Require] {
            assert_eq!(
                opts(mode, Some(missing.clone())).check(),
                Ok(Verification::None)
            );
            assert_eq!(opts(mode, None).check(), Ok(Verification::None));
            assert_eq!(
                opts(mode, Some(present.clone())).check(),
                Ok(Verification::Chain),
                "{mode:?} with a root file verifies the chain, as libpq does"
            );
        }
        assert_eq!(
            opts(SslMode::VerifyCa, Some(present.clone())).check(),
            Ok(Verification::Chain)
        );
        assert_eq!(
            opts(SslMode::VerifyFull, Some(present)).check(),
            Ok(Verification::ChainAndHost)
        );
        let e = opts(SslMode::VerifyCa, Some(missing)).check().unwrap_err();
        assert!(
            e.contains("missing.crt") && e.contains("does not exist"),
            "{e}"
        );
        assert!(opts(SslMode::VerifyFull, None).check().is_err());
        assert_eq!(
            opts(SslMode::VerifyFull, Some(RootCert::System)).check(),
            Ok(Verification::ChainAndHost)
        );
    }

    #[test]
    fn sslmode_names_round_trip() {
        for m in [
            SslMode::Disable,
            SslMode::Allow,
            SslMode::Prefer,
            SslMode::Require,
            SslMode::VerifyCa,
            SslMode::VerifyFull,
        ] {
            assert_eq!(SslMode::parse(m.as_str()), Some(m));
        }
        assert_eq!(SslMode::parse("verify_full"), None);
        assert!(SslMode::Require.requires_tls() && !SslMode::Prefer.requires_tls());
    }

    #[test]
    fn key_permissions_follow_libpq() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let k = dir.path().join("k");
        std::fs::write(&k, "x").unwrap();
        std::fs::set_permissions(&k, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(check_key_permissions(&k).is_err());
        std::fs::set_permissions(&k, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(check_key_permissions(&k).is_ok());
    }
}
