//! What a native client trusts: the system's roots plus an optional `--ca FILE`.

use std::path::Path;
use std::sync::Arc;

use rustls::{ClientConfig, RootCertStore};

use crate::error::TlsError;
use crate::pem::read_certificates;

/// A client's TLS settings, and how many roots of each origin they trust (for a `--verbose`
/// line, and for tests).
#[derive(Clone, Debug)]
pub struct ClientTls {
    pub config: Arc<ClientConfig>,
    /// Roots from the system's store.
    pub system_roots: usize,
    /// Certificates from `--ca`.
    pub extra_roots: usize,
}

/// Trusts the system's root certificates (rustls-native-certs: the platform's store, or
/// `SSL_CERT_FILE`/`SSL_CERT_DIR` when set) and every certificate in `extra_ca`, a PEM file: a
/// consortium's own CA, or a relay's self-signed certificate (`capelab-relay self-signed`).
///
/// A system store that cannot be read is not an error while `extra_ca` gives something to
/// trust: a hospital server may have no public roots and only its consortium's CA.
pub fn client_config(extra_ca: Option<&Path>) -> Result<ClientTls, TlsError> {
    let mut roots = RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    let (system_roots, _unparsable) = roots.add_parsable_certificates(native.certs);
    let mut extra_roots = 0;
    if let Some(path) = extra_ca {
        for cert in read_certificates(path)? {
            roots.add(cert).map_err(|e| TlsError::BadCertificate {
                path: path.to_owned(),
                detail: format!("it cannot be a trust anchor: {e}"),
            })?;
            extra_roots += 1;
        }
    }
    if roots.is_empty() {
        return Err(TlsError::NoRoots);
    }
    let mut config = ClientConfig::builder_with_provider(crate::provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(ClientTls { config: Arc::new(config), system_roots, extra_roots })
}
