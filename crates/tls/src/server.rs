//! [`ServerTls`]: the relay's side of TLS.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;

use crate::error::TlsError;
use crate::fingerprint::Fingerprints;
use crate::pem::{read_certificates, read_private_key};

/// A certificate chain and its key, ready to serve: a rustls `ServerConfig` and the fingerprints
/// of the certificate it presents.
#[derive(Clone)]
pub struct ServerTls {
    pub config: Arc<ServerConfig>,
    pub fingerprints: Fingerprints,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls").field("fingerprints", &self.fingerprints).finish()
    }
}

impl ServerTls {
    /// Reads the chain from `cert` (the server's certificate first, then any intermediates) and
    /// the key from `key`, and checks that they belong together.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let chain = read_certificates(cert)?;
        let fingerprints = Fingerprints::of(&chain[0]).ok_or_else(|| TlsError::BadCertificate {
            path: cert.to_owned(),
            detail: "its first block is not an X.509 certificate".to_owned(),
        })?;
        let private_key = read_private_key(key)?;
        let provider = crate::provider();
        let signing_key = provider
            .key_provider
            .load_private_key(private_key)
            .map_err(|e| TlsError::BadKey { key: key.to_owned(), detail: e.to_string() })?;
        let certified = rustls::sign::CertifiedKey::new(chain, signing_key);
        match certified.keys_match() {
            Ok(()) => {}
            Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
                return Err(TlsError::KeyMismatch { cert: cert.to_owned(), key: key.to_owned() });
            }
            // `Unknown`: the key cannot tell its public half; rustls serves it, so do we.
            Err(_) => {}
        }
        Ok(ServerTls { config: Arc::new(server_config(provider, certified)?), fingerprints })
    }
}

/// TLS 1.3 (the protocol versions the ring provider and rustls' `std` feature offer), no client
/// certificates, HTTP/1.1 announced by ALPN: the relay's HTTP and websockets share the port.
fn server_config(
    provider: Arc<CryptoProvider>,
    certified: rustls::sign::CertifiedKey,
) -> Result<ServerConfig, TlsError> {
    let resolver = Arc::new(rustls::sign::SingleCertAndKey::from(certified));
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}
