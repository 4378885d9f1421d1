/*!
TLS for capelab's native programs, in one place so the relay and the coming native clients
(`cape site`, `cape run`) load certificates, trust roots and report errors the same way.

- [`ServerTls`]: the relay's certificate chain and key from PEM files (`--tls-cert`,
  `--tls-key`), checked to belong together, as a rustls `ServerConfig` (TLS 1.3, ring, ALPN
  `http/1.1`: the relay's HTTP and websockets share the port).
- [`client_config`]: what a client trusts: the system's roots (rustls-native-certs, the same
  store curl and the OS use) plus the certificates of an optional `--ca FILE` (a consortium's own
  CA, or a relay's self-signed certificate).
- [`SelfSigned`]: a certificate for a LAN (rcgen, ECDSA P-256), for `capelab-relay self-signed`.
- [`Fingerprints`]: what to compare out of band or pin: the certificate's SHA-256 fingerprint,
  and the SHA-256 of its public key (SPKI) in base64, the form Chromium's
  `--ignore-certificate-errors-spki-list` and HPKP-style pins take.

Every failure is a [`TlsError`] that names the file and says what is wrong with it in the user's
words ("holds no private key", "does not match the certificate"), before anything is served.
Only the ring provider is used (no aws-lc-rs, so no C toolchain beyond ring's own).
*/

mod client;
mod error;
mod fingerprint;
mod pem;
mod self_signed;
mod server;

pub use client::{ClientTls, client_config};
pub use error::TlsError;
pub use fingerprint::Fingerprints;
pub use pem::{read_certificates, read_private_key};
pub use self_signed::SelfSigned;
pub use server::ServerTls;

/// The crypto provider every config here is built on (ring, as async-nats brings it).
pub fn provider() -> std::sync::Arc<rustls::crypto::CryptoProvider> {
    std::sync::Arc::new(rustls::crypto::ring::default_provider())
}
