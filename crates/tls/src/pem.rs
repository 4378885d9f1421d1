//! PEM files: certificates and private keys, read through rustls-pki-types' parser.

use std::path::Path;

use rustls_pki_types::pem::{self, PemObject as _};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::{LOOKS_LIKE_A_CERTIFICATE, LOOKS_LIKE_A_KEY, TlsError};

const CERTIFICATE: &str = "TLS certificate";
const KEY: &str = "TLS private key";

/// Every certificate in the PEM file at `path`, in order (a chain: the server's first).
pub fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let text = read(path, CERTIFICATE)?;
    let certs = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(path, CERTIFICATE, e))?;
    if certs.is_empty() {
        let hint = if has_key(&text) { LOOKS_LIKE_A_KEY } else { "" };
        return Err(TlsError::NoCertificate { path: path.to_owned(), hint });
    }
    Ok(certs)
}

/// The first private key (PKCS#8, PKCS#1 or SEC1) in the PEM file at `path`.
pub fn read_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let text = read(path, KEY)?;
    match PrivateKeyDer::from_pem_slice(&text) {
        Ok(key) => Ok(key),
        Err(pem::Error::NoItemsFound) => {
            let has_cert = CertificateDer::pem_slice_iter(&text).any(|c| c.is_ok());
            let hint = if has_cert { LOOKS_LIKE_A_CERTIFICATE } else { "" };
            Err(TlsError::NoPrivateKey { path: path.to_owned(), hint })
        }
        Err(e) => Err(pem_error(path, KEY, e)),
    }
}

fn read(path: &Path, what: &'static str) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read { what, path: path.to_owned(), source })
}

fn has_key(text: &[u8]) -> bool {
    PrivateKeyDer::from_pem_slice(text).is_ok()
}

fn pem_error(path: &Path, what: &'static str, error: pem::Error) -> TlsError {
    let detail = match error {
        pem::Error::MissingSectionEnd { .. } => "a block has no -----END----- line".to_owned(),
        pem::Error::IllegalSectionStart { .. } => "a -----BEGIN----- line is malformed".to_owned(),
        pem::Error::Base64Decode(e) => format!("bad base64: {e}"),
        other => other.to_string(),
    };
    TlsError::Pem { what, path: path.to_owned(), detail }
}
