//! The certificate check of `verify-ca` and `verify-full`, as libpq's
//! OpenSSL makes it, over rustls' webpki verifier.
//!
//! webpki and OpenSSL agree on a chain that leads from a server certificate
//! to a trusted CA, and that is checked by webpki alone. They part on a
//! self-signed server certificate given as its own root (`sslrootcert` names
//! the server's certificate): OpenSSL finds the certificate itself in the
//! trust store and the chain is that one certificate, while webpki refuses
//! any certificate marked as a CA as an end entity (`CaUsedAsEndEntity`).
//! Debian's clusters and most hand-made set-ups use such a certificate, and
//! psql accepts it, so this module checks it the way OpenSSL does: the
//! certificate must be one of the root file's, byte for byte, be within its
//! validity period, be usable by a TLS server (extended key usage and key
//! usage, when present), not be revoked when CRLs are given, and for
//! `verify-full` name the host (libpq's rule: the subjectAltName entries of
//! the host's kind, else the common name).
//!
//! The refusals webpki's own errors do not explain (a self-signed
//! certificate missing from the root file, a revocation, a CRL missing for
//! an issuer) are raised as [`CertRefused`], which names the file and
//! carries the hint.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, OtherError, SignatureScheme};
use x509_cert::Certificate;
use x509_cert::crl::CertificateList;
use x509_cert::der::Decode;
use x509_cert::der::oid::ObjectIdentifier;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::{ExtendedKeyUsage, KeyUsage, SubjectAltName};
use x509_cert::name::Name;

/// The common name attribute (2.5.4.3).
const CN: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.3");
/// The extended key usage of a TLS server (id-kp-serverAuth).
const SERVER_AUTH: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.3.1");

/// A server certificate refused for a reason webpki's errors do not say
/// well: what failed, and which file to look at.
#[derive(Debug, thiserror::Error)]
pub enum CertRefused {
    #[error(
        "the server's certificate ({subject}) is self-signed and is not in the root \
         certificate file {roots}"
    )]
    SelfSignedNotTrusted { subject: String, roots: String },
    #[error("the server's certificate ({subject}) is not for a TLS server: {why}")]
    NotForServers { subject: String, why: &'static str },
    #[error(
        "the server's certificate ({subject}, serial {serial}) is revoked by the \
         certificate revocation list in \"{crl}\""
    )]
    Revoked {
        subject: String,
        serial: String,
        crl: String,
    },
    #[error(
        "no certificate revocation list in {crls} is from {issuer}, the issuer of the \
         server's certificate, so its revocation cannot be checked"
    )]
    NoCrlFromIssuer { issuer: String, crls: String },
}

impl CertRefused {
    pub fn hint(&self) -> &'static str {
        match self {
            CertRefused::SelfSignedNotTrusted { .. } => {
                "to trust a self-signed server certificate, put the certificate itself in \
                 the file sslrootcert names (as for psql), or use sslmode=require to \
                 encrypt without verifying"
            }
            CertRefused::NotForServers { .. } => {
                "the server needs a certificate whose extendedKeyUsage (when present) \
                 holds serverAuth and whose keyUsage (when present) holds digitalSignature"
            }
            CertRefused::Revoked { .. } => {
                "the certificate's issuer revoked it: the server needs a new certificate \
                 (or the CRL given in sslcrl or sslcrldir is not the one meant)"
            }
            CertRefused::NoCrlFromIssuer { .. } => {
                "with sslcrl or sslcrldir, as in libpq, every certificate of the chain \
                 needs a CRL from its issuer: add the issuer's CRL there, or leave \
                 sslcrl and sslcrldir unset"
            }
        }
    }

    fn into_rustls(self) -> rustls::Error {
        rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(self))))
    }
}

/// A certificate revocation list read from `sslcrl` or `sslcrldir`.
#[derive(Debug, Clone)]
pub struct Crl {
    pub file: PathBuf,
    pub list: CertificateList,
}

/// libpq's `verify-ca` (`check_host` false) and `verify-full`.
#[derive(Debug)]
pub struct LibpqVerifier {
    pub webpki: Arc<WebPkiServerVerifier>,
    pub check_host: bool,
    /// The certificates of the root file (empty for `sslrootcert=system`).
    pub roots: Vec<CertificateDer<'static>>,
    /// The trust store as messages name it: `"FILE"` or the system's roots.
    pub roots_label: String,
    pub crls: Vec<Crl>,
    /// The provider's signature algorithms (for a version 1 certificate's
    /// handshake signature, which webpki does not check).
    pub algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl LibpqVerifier {
    /// The CRL files, as messages name them.
    fn crls_label(&self) -> String {
        let files: Vec<String> = self
            .crls
            .iter()
            .map(|c| format!("\"{}\"", c.file.display()))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        files.join(", ")
    }

    /// webpki's revocation errors, said with the CRL file and the names.
    fn explain_revocation(
        &self,
        end_entity: &CertificateDer<'_>,
        e: rustls::Error,
    ) -> rustls::Error {
        let Ok(cert) = Certificate::from_der(end_entity) else {
            return e;
        };
        let tbs = &cert.tbs_certificate;
        match &e {
            rustls::Error::InvalidCertificate(CertificateError::Revoked) => {
                match revoked_by(&self.crls, &tbs.issuer, tbs.serial_number.as_bytes()) {
                    Some(crl) => CertRefused::Revoked {
                        subject: tbs.subject.to_string(),
                        serial: hex(tbs.serial_number.as_bytes()),
                        crl: crl.file.display().to_string(),
                    }
                    .into_rustls(),
                    None => e,
                }
            }
            rustls::Error::InvalidCertificate(CertificateError::UnknownRevocationStatus) => {
                CertRefused::NoCrlFromIssuer {
                    issuer: tbs.issuer.to_string(),
                    crls: self.crls_label(),
                }
                .into_rustls()
            }
            _ => e,
        }
    }

    /// OpenSSL's check of a server certificate that is its own chain.
    fn verify_self_signed(
        &self,
        end_entity: &CertificateDer<'_>,
        server_name: &ServerName<'_>,
        now: UnixTime,
    ) -> Result<(), rustls::Error> {
        let cert = Certificate::from_der(end_entity)
            .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding))?;
        let tbs = &cert.tbs_certificate;
        let subject = tbs.subject.to_string();
        if !self.roots.iter().any(|r| r.as_ref() == end_entity.as_ref()) {
            return Err(CertRefused::SelfSignedNotTrusted {
                subject,
                roots: self.roots_label.clone(),
            }
            .into_rustls());
        }
        let not_before = UnixTime::since_unix_epoch(tbs.validity.not_before.to_unix_duration());
        let not_after = UnixTime::since_unix_epoch(tbs.validity.not_after.to_unix_duration());
        if now.as_secs() < not_before.as_secs() {
            return Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidYetContext {
                    time: now,
                    not_before,
                },
            ));
        }
        if now.as_secs() > not_after.as_secs() {
            return Err(rustls::Error::InvalidCertificate(
                CertificateError::ExpiredContext {
                    time: now,
                    not_after,
                },
            ));
        }
        if let Some(why) = not_for_servers(&cert) {
            return Err(CertRefused::NotForServers { subject, why }.into_rustls());
        }
        if !self.crls.is_empty() {
            // OpenSSL with libpq's flags (X509_V_FLAG_CRL_CHECK_ALL): the
            // issuer, here the certificate itself, must have a CRL.
            if !self
                .crls
                .iter()
                .any(|c| c.list.tbs_cert_list.issuer == tbs.issuer)
            {
                return Err(CertRefused::NoCrlFromIssuer {
                    issuer: tbs.issuer.to_string(),
                    crls: self.crls_label(),
                }
                .into_rustls());
            }
            if let Some(crl) = revoked_by(&self.crls, &tbs.issuer, tbs.serial_number.as_bytes()) {
                return Err(CertRefused::Revoked {
                    subject,
                    serial: hex(tbs.serial_number.as_bytes()),
                    crl: crl.file.display().to_string(),
                }
                .into_rustls());
            }
        }
        if self.check_host
            && let Err(presented) = names_host(&cert, server_name)
        {
            return Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForNameContext {
                    expected: server_name.to_owned(),
                    presented,
                },
            ));
        }
        Ok(())
    }
}

impl ServerCertVerifier for LibpqVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            // verify-ca: webpki checks the chain before the name, so a name
            // mismatch is the only error accepted here.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_host => Ok(ServerCertVerified::assertion()),
            // A CA certificate as the server's: a self-signed one may be its
            // own root, as OpenSSL allows; any other stays refused.
            // An X.509 v1 certificate (Citus makes one): webpki does not
            // read it, OpenSSL does; self-signed, it may be its own root.
            Err(rustls::Error::InvalidCertificate(CertificateError::Other(o)))
                if o.0.downcast_ref::<webpki::Error>()
                    == Some(&webpki::Error::CaUsedAsEndEntity)
                    || o.0.downcast_ref::<webpki::Error>()
                        == Some(&webpki::Error::UnsupportedCertVersion) =>
            {
                let e = rustls::Error::InvalidCertificate(CertificateError::Other(o));
                match Certificate::from_der(end_entity) {
                    Ok(c) if c.tbs_certificate.issuer == c.tbs_certificate.subject => {
                        self.verify_self_signed(end_entity, server_name, now)?;
                        Ok(ServerCertVerified::assertion())
                    }
                    _ => Err(e),
                }
            }
            Err(
                e @ rustls::Error::InvalidCertificate(
                    CertificateError::Revoked | CertificateError::UnknownRevocationStatus,
                ),
            ) => Err(self.explain_revocation(end_entity, e)),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        match self.webpki.verify_tls12_signature(message, cert, dss) {
            Err(_) if super::signature::version_1_key(cert).is_some() => {
                super::signature::handshake_signature(false, message, cert, dss, &self.algorithms)
            }
            other => other,
        }
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        match self.webpki.verify_tls13_signature(message, cert, dss) {
            Err(_) if super::signature::version_1_key(cert).is_some() => {
                super::signature::handshake_signature(true, message, cert, dss, &self.algorithms)
            }
            other => other,
        }
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// The CRL from `issuer` that lists `serial`, if any.
fn revoked_by<'a>(crls: &'a [Crl], issuer: &Name, serial: &[u8]) -> Option<&'a Crl> {
    crls.iter().find(|c| {
        c.list.tbs_cert_list.issuer == *issuer
            && c.list
                .tbs_cert_list
                .revoked_certificates
                .iter()
                .flatten()
                .any(|r| r.serial_number.as_bytes() == serial)
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

/// OpenSSL's `ssl_server` purpose on the server's certificate: an extended
/// key usage, when present, must hold serverAuth; a key usage, when present,
/// one of the TLS usages.
fn not_for_servers(cert: &Certificate) -> Option<&'static str> {
    let tbs = &cert.tbs_certificate;
    if let Ok(Some((_, eku))) = tbs.get::<ExtendedKeyUsage>()
        && !eku.0.contains(&SERVER_AUTH)
    {
        return Some("its extendedKeyUsage does not hold serverAuth");
    }
    if let Ok(Some((_, ku))) = tbs.get::<KeyUsage>()
        && !(ku.digital_signature() || ku.key_encipherment() || ku.key_agreement())
    {
        return Some("its keyUsage holds none of digitalSignature, keyEncipherment, keyAgreement");
    }
    None
}

/// libpq's host name check (`verify_peer_name_matches_certificate`): the
/// subjectAltName entries are compared (dNSName as text, iPAddress as an
/// address); the common name only when the certificate has no
/// subjectAltName of the host's kind (dNSName for a name, iPAddress for an
/// address). On a mismatch, the names it holds.
pub(crate) fn names_host(cert: &Certificate, host: &ServerName<'_>) -> Result<(), Vec<String>> {
    let (text, ip) = match host {
        ServerName::DnsName(d) => (d.as_ref().to_string(), None),
        ServerName::IpAddress(a) => {
            let a = IpAddr::from(*a);
            (a.to_string(), Some(a))
        }
        _ => return Err(Vec::new()),
    };
    let mut presented = Vec::new();
    let mut check_cn = true;
    let sans = match cert.tbs_certificate.get::<SubjectAltName>() {
        Ok(Some((_, san))) => san.0,
        _ => Vec::new(),
    };
    for name in &sans {
        match name {
            GeneralName::DnsName(d) => {
                if ip.is_none() {
                    check_cn = false;
                }
                let d = d.as_str();
                presented.push(d.to_string());
                if name_matches(d, &text) {
                    return Ok(());
                }
            }
            GeneralName::IpAddress(o) => {
                if ip.is_some() {
                    check_cn = false;
                }
                let b = o.as_bytes();
                let addr = match b.len() {
                    4 => <[u8; 4]>::try_from(b).ok().map(IpAddr::from),
                    16 => <[u8; 16]>::try_from(b).ok().map(IpAddr::from),
                    _ => None,
                };
                if let Some(a) = addr {
                    presented.push(a.to_string());
                    if Some(a) == ip {
                        return Ok(());
                    }
                }
            }
            _ => {}
        }
    }
    if check_cn {
        for cn in common_names(&cert.tbs_certificate.subject) {
            presented.push(cn.clone());
            if name_matches(&cn, &text) {
                return Ok(());
            }
        }
    }
    Err(presented)
}

/// The common names of a distinguished name.
fn common_names(name: &Name) -> Vec<String> {
    name.0
        .iter()
        .flat_map(|rdn| rdn.0.iter())
        .filter(|atv| atv.oid == CN)
        .filter_map(|atv| std::str::from_utf8(atv.value.value()).ok())
        .map(str::to_string)
        .collect()
}

/// libpq's `pq_verify_peer_name_matches_certificate_name`: equal ignoring
/// ASCII case, or a leading `*.` standing for exactly one label.
fn name_matches(pattern: &str, host: &str) -> bool {
    if pattern.eq_ignore_ascii_case(host) {
        return true;
    }
    let Some(rest) = pattern.strip_prefix('*') else {
        return false;
    };
    if !rest.starts_with('.') || rest.len() < 2 || host.len() < rest.len() + 1 {
        return false;
    }
    let (label, tail) = host.split_at(host.len() - rest.len());
    tail.eq_ignore_ascii_case(rest) && !label.is_empty() && !label.contains('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_stand_for_one_label_as_in_libpq() {
        assert!(name_matches("db.example.com", "DB.Example.com"));
        assert!(name_matches("*.example.com", "db.example.com"));
        assert!(!name_matches("*.example.com", "a.db.example.com"));
        assert!(!name_matches("*.example.com", "example.com"));
        assert!(!name_matches("*.example.com", ".example.com"));
        assert!(!name_matches("db*.example.com", "db1.example.com"));
        assert!(!name_matches("*", "localhost"));
        assert!(!name_matches("other.example.com", "db.example.com"));
    }

    #[test]
    fn refusals_name_the_file_and_carry_a_hint() {
        let e = CertRefused::SelfSignedNotTrusted {
            subject: "CN=localhost".into(),
            roots: "\"/tmp/root.crt\"".into(),
        };
        assert_eq!(
            e.to_string(),
            "the server's certificate (CN=localhost) is self-signed and is not in the root \
             certificate file \"/tmp/root.crt\""
        );
        assert!(e.hint().contains("sslrootcert"));
    }
}
