//! The TLS both ends use: certificates made here (rcgen), loaded from real PEM files, and real
//! rustls handshakes between the client and server settings this crate builds (in memory: the
//! relay's tests run the same over sockets, wss included).

use std::path::PathBuf;
use std::sync::Arc;

use capelab_tls::{SelfSigned, ServerTls, TlsError, client_config};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::ServerName;
use rustls::{ClientConnection, ServerConnection};

/// A fresh directory under the system's temporary one, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "capelab-tls-{label}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn hosts(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// Runs a TLS handshake between `client` and `server` over in-memory buffers, and one
/// application message each way; the client's error if it refuses the server.
fn handshake(
    client: Arc<rustls::ClientConfig>,
    server: Arc<rustls::ServerConfig>,
    name: &str,
) -> Result<(), rustls::Error> {
    let mut client = ClientConnection::new(client, ServerName::try_from(name.to_owned()).unwrap())?;
    let mut server = ServerConnection::new(server)?;
    let mut wire = Vec::new();
    for _ in 0..10 {
        wire.clear();
        while client.wants_write() {
            client.write_tls(&mut wire).unwrap();
        }
        let mut input = &wire[..];
        while !input.is_empty() {
            server.read_tls(&mut input).unwrap();
        }
        server.process_new_packets()?;
        wire.clear();
        while server.wants_write() {
            server.write_tls(&mut wire).unwrap();
        }
        let mut input = &wire[..];
        while !input.is_empty() {
            client.read_tls(&mut input).unwrap();
        }
        client.process_new_packets()?;
        if !client.is_handshaking() && !server.is_handshaking() {
            assert_eq!(server.alpn_protocol(), Some(&b"http/1.1"[..]));
            return Ok(());
        }
    }
    panic!("the handshake did not finish in 10 round trips")
}

#[test]
fn a_self_signed_certificate_serves_and_is_trusted_through_ca() {
    let dir = TempDir::new("self-signed");
    let made = SelfSigned::generate(&hosts(&["relay.lan", "127.0.0.1"])).unwrap();
    let (cert, key) = made.write_to(&dir.0.join("tls")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the key is the owner's alone");
    }
    let server = ServerTls::from_pem_files(&cert, &key).unwrap();
    assert_eq!(server.fingerprints, made.fingerprints);
    assert_eq!(made.fingerprints.sha256.len(), 32 * 3 - 1);
    assert_eq!(made.fingerprints.spki_sha256.len(), 44, "base64 of 32 bytes");

    let trusting = client_config(Some(&cert)).unwrap();
    assert_eq!(trusting.extra_roots, 1);
    handshake(trusting.config.clone(), server.config.clone(), "relay.lan").unwrap();
    handshake(trusting.config.clone(), server.config.clone(), "127.0.0.1").unwrap();
    // Trusted, but not for another name.
    let other = handshake(trusting.config, server.config.clone(), "other.lan").unwrap_err();
    assert!(matches!(other, rustls::Error::InvalidCertificate(_)), "{other:?}");
}

#[test]
fn without_ca_the_system_roots_do_not_trust_a_self_signed_certificate() {
    let dir = TempDir::new("untrusted");
    let made = SelfSigned::generate(&hosts(&["relay.lan"])).unwrap();
    let (cert, key) = made.write_to(&dir.0).unwrap();
    let server = ServerTls::from_pem_files(&cert, &key).unwrap();
    let system = match client_config(None) {
        Ok(system) => system,
        // A machine without ca-certificates: nothing to trust, said so.
        Err(TlsError::NoRoots) => return,
        Err(other) => panic!("{other}"),
    };
    assert_eq!(system.extra_roots, 0);
    assert!(system.system_roots > 0);
    let refused = handshake(system.config, server.config, "relay.lan").unwrap_err();
    assert!(
        matches!(
            refused,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)
        ),
        "{refused:?}"
    );
}

/// A consortium's own CA: the relay serves a leaf it signed (and the CA after it), the client
/// trusts the CA alone through `--ca`.
#[test]
fn a_consortium_ca_given_with_ca_is_trusted_for_the_leaves_it_signs() {
    let dir = TempDir::new("consortium");
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(hosts(&["relay.consortium.example"]))
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    let chain = dir.write("chain.pem", &(leaf.pem() + &ca_cert.pem()));
    let key = dir.write("key.pem", &leaf_key.serialize_pem());
    let ca = dir.write("ca.pem", &ca_cert.pem());

    let server = ServerTls::from_pem_files(&chain, &key).unwrap();
    let client = client_config(Some(&ca)).unwrap();
    handshake(client.config, server.config, "relay.consortium.example").unwrap();
}

#[test]
fn bad_files_are_named_with_what_is_wrong() {
    let dir = TempDir::new("bad");
    let a = SelfSigned::generate(&hosts(&["a.lan"])).unwrap();
    let b = SelfSigned::generate(&hosts(&["b.lan"])).unwrap();
    let cert_a = dir.write("a-cert.pem", &a.cert_pem);
    let key_a = dir.write("a-key.pem", &a.key_pem);
    let key_b = dir.write("b-key.pem", &b.key_pem);
    let message = |e: TlsError| e.to_string();

    let missing = dir.0.join("nowhere.pem");
    let e = message(ServerTls::from_pem_files(&missing, &key_a).unwrap_err());
    assert!(
        e.starts_with(&format!("cannot read the TLS certificate {}", missing.display())),
        "{e}"
    );
    let e = message(ServerTls::from_pem_files(&cert_a, &missing).unwrap_err());
    assert!(
        e.starts_with(&format!("cannot read the TLS private key {}", missing.display())),
        "{e}"
    );

    let e = message(ServerTls::from_pem_files(&cert_a, &key_b).unwrap_err());
    assert!(e.contains(&key_b.display().to_string()) && e.contains("does not match"), "{e}");
    assert!(e.contains(&cert_a.display().to_string()), "{e}");

    let e = message(ServerTls::from_pem_files(&key_a, &cert_a).unwrap_err());
    assert!(
        e.contains("holds no certificate") && e.contains("swap --tls-cert and --tls-key"),
        "{e}"
    );
    let e = message(ServerTls::from_pem_files(&cert_a, &cert_a).unwrap_err());
    assert!(e.contains("holds no private key") && e.contains("looks like a certificate"), "{e}");

    let empty = dir.write("empty.pem", "");
    let e = message(ServerTls::from_pem_files(&empty, &key_a).unwrap_err());
    assert!(e.contains("empty.pem holds no certificate"), "{e}");
    let cut = dir.write("cut.pem", &a.cert_pem[..a.cert_pem.len() / 2]);
    let e = message(ServerTls::from_pem_files(&cut, &key_a).unwrap_err());
    assert!(e.contains("cut.pem is not a readable PEM file"), "{e}");
    let garbage = dir.write(
        "garbage.pem",
        "-----BEGIN CERTIFICATE-----\nnot base64 !!\n-----END CERTIFICATE-----\n",
    );
    let e = message(ServerTls::from_pem_files(&garbage, &key_a).unwrap_err());
    assert!(e.contains("garbage.pem"), "{e}");
    let e = message(client_config(Some(&key_a)).unwrap_err());
    assert!(e.contains("a-key.pem holds no certificate"), "{e}");
}

#[test]
fn made_certificates_are_not_replaced() {
    let dir = TempDir::new("exists");
    let made = SelfSigned::generate(&hosts(&["relay.lan"])).unwrap();
    made.write_to(&dir.0).unwrap();
    let again = SelfSigned::generate(&hosts(&["relay.lan"])).unwrap();
    let e = again.write_to(&dir.0).unwrap_err().to_string();
    assert!(e.contains("cert.pem already exists"), "{e}");
    assert_eq!(std::fs::read_to_string(dir.0.join("cert.pem")).unwrap(), made.cert_pem);
    for bad in [&["not a name"][..], &["relay.lan", ""], &[]] {
        let e = SelfSigned::generate(&hosts(bad)).err().expect("a bad host is refused").to_string();
        assert!(e.contains("is neither a DNS name nor an IP address"), "{e}");
    }
}
