//! [`TlsError`]: what went wrong, naming the file and the flag a user would change.

use std::path::PathBuf;

/// Why a certificate, key or CA file cannot be used; each message names the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read the {what} {}: {source}", path.display())]
    Read {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a readable PEM file ({detail}): expected the {what} as PEM text", path.display())]
    Pem { what: &'static str, path: PathBuf, detail: String },
    #[error(
        "{} holds no certificate (no -----BEGIN CERTIFICATE----- block){hint}",
        path.display()
    )]
    NoCertificate { path: PathBuf, hint: &'static str },
    #[error(
        "{} holds no private key (no -----BEGIN PRIVATE KEY-----, RSA PRIVATE KEY or EC PRIVATE \
         KEY block){hint}",
        path.display()
    )]
    NoPrivateKey { path: PathBuf, hint: &'static str },
    #[error("{} is not a certificate rustls can use: {detail}", path.display())]
    BadCertificate { path: PathBuf, detail: String },
    #[error(
        "the private key {} does not match the certificate {}: give the key the certificate was \
         made for",
        key.display(),
        cert.display()
    )]
    KeyMismatch { cert: PathBuf, key: PathBuf },
    #[error("the private key {} cannot be used: {detail}", key.display())]
    BadKey { key: PathBuf, detail: String },
    #[error(
        "no certificate authority to trust: the system has no root certificates (install \
         ca-certificates) and no --ca file was given"
    )]
    NoRoots,
    #[error(
        "--host {host:?} is neither a DNS name nor an IP address: give the names and addresses \
         clients will dial, e.g. --host relay.lan,192.168.1.20"
    )]
    BadHost { host: String },
    #[error("could not make a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("{} already exists: remove it, or pick another --out directory", path.display())]
    Exists { path: PathBuf },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("rustls refused the settings: {0}")]
    Rustls(#[from] rustls::Error),
}

/// Hints for a certificate file that holds a key, and the other way round (a common swap).
pub(crate) const LOOKS_LIKE_A_KEY: &str =
    ": it looks like a private key; swap --tls-cert and --tls-key?";
pub(crate) const LOOKS_LIKE_A_CERTIFICATE: &str =
    ": it looks like a certificate; swap --tls-cert and --tls-key?";
