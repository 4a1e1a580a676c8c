//! A server's handshake signature checked as OpenSSL checks it, for an X.509
//! version 1 certificate too: used by the verifiers of `tls.rs` and of
//! [`super::verify`], so it sits below both.

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::CertificateDer;
use rustls::{CertificateError, DigitallySignedStruct};
use x509_cert::der::Decode;

/// The server's handshake signature checked against its certificate's public
/// key. webpki reads only X.509 v3 certificates, while OpenSSL, and so libpq
/// and psql, also take version 1: the self-signed one `CREATE EXTENSION
/// citus` (or `openssl x509 -req -signkey`) makes. For such a certificate the
/// key is read from it and the signature checked against that key alone.
pub(crate) fn handshake_signature(
    tls13: bool,
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
    algs: &rustls::crypto::WebPkiSupportedAlgorithms,
) -> Result<HandshakeSignatureValid, rustls::Error> {
    let checked = if tls13 {
        rustls::crypto::verify_tls13_signature(message, cert, dss, algs)
    } else {
        rustls::crypto::verify_tls12_signature(message, cert, dss, algs)
    };
    let Err(e) = checked else { return checked };
    let Some(spki) = version_1_key(cert) else {
        return Err(e);
    };
    if tls13 {
        return rustls::crypto::verify_tls13_signature_with_raw_key(message, &spki, dss, algs);
    }
    // TLS 1.2 names a scheme that maps to several algorithms: any may match.
    let key = webpki::RawPublicKeyEntity::try_from(&spki).map_err(|_| e.clone())?;
    let candidates = algs
        .mapping
        .iter()
        .find(|(scheme, _)| *scheme == dss.scheme)
        .map_or(&[][..], |(_, a)| *a);
    candidates
        .iter()
        .find(|alg| {
            key.verify_signature(**alg, message, dss.signature())
                .is_ok()
        })
        .map(|_| HandshakeSignatureValid::assertion())
        .ok_or(rustls::Error::InvalidCertificate(
            CertificateError::BadSignature,
        ))
}

/// The public key of an X.509 version 1 certificate (None for any other).
pub(crate) fn version_1_key(
    cert: &CertificateDer<'_>,
) -> Option<rustls::pki_types::SubjectPublicKeyInfoDer<'static>> {
    use x509_cert::der::Encode;
    let c = x509_cert::Certificate::from_der(cert.as_ref()).ok()?;
    if c.tbs_certificate.version != x509_cert::certificate::Version::V1 {
        return None;
    }
    let der = c.tbs_certificate.subject_public_key_info.to_der().ok()?;
    Some(rustls::pki_types::SubjectPublicKeyInfoDer::from(der))
}
