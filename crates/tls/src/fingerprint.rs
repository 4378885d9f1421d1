//! What identifies a certificate when it is compared by eye or pinned.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rustls_pki_types::CertificateDer;
use sha2::{Digest as _, Sha256};

/// A certificate's SHA-256 fingerprint and its public key's SHA-256 (SPKI) hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprints {
    /// SHA-256 of the certificate's DER, as browsers show it: `AB:CD:…` (32 pairs).
    pub sha256: String,
    /// SHA-256 of the DER SubjectPublicKeyInfo, base64: what Chromium's
    /// `--ignore-certificate-errors-spki-list` takes, and stays the same when a certificate is
    /// renewed with the same key.
    pub spki_sha256: String,
}

impl Fingerprints {
    /// The fingerprints of `cert`; `None` if it is not an X.509 certificate webpki can read.
    pub fn of(cert: &CertificateDer<'_>) -> Option<Self> {
        let parsed = webpki::EndEntityCert::try_from(cert).ok()?;
        let spki = parsed.subject_public_key_info();
        let sha256 = Sha256::digest(cert.as_ref())
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect::<Vec<_>>()
            .join(":");
        Some(Fingerprints { sha256, spki_sha256: STANDARD.encode(Sha256::digest(spki.as_ref())) })
    }
}
