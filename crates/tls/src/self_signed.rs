//! [`SelfSigned`]: a certificate for a relay on a LAN, where no public CA can vouch for a name.

use std::io::Write as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, KeyPair,
    KeyUsagePurpose, SanType,
};
use time::{Duration, OffsetDateTime};

use crate::error::TlsError;
use crate::fingerprint::Fingerprints;

/// A self-signed certificate (ECDSA P-256) and its key, as PEM, with its fingerprints.
pub struct SelfSigned {
    pub cert_pem: String,
    pub key_pem: String,
    pub fingerprints: Fingerprints,
    /// The names and addresses it is valid for, as given.
    pub hosts: Vec<String>,
}

impl SelfSigned {
    /// How long a made certificate is valid: under the 398 days browsers accept for a server
    /// certificate, so nothing but "unknown issuer" stands between a user and the page.
    pub const VALID_DAYS: i64 = 397;

    /// A certificate for `hosts` (DNS names or IP addresses; at least one), valid from a day ago
    /// (clocks differ) for [`Self::VALID_DAYS`]. It is no CA: it can only be this server's.
    pub fn generate(hosts: &[String]) -> Result<Self, TlsError> {
        if hosts.is_empty() {
            return Err(TlsError::BadHost { host: String::new() });
        }
        for host in hosts {
            // What a client will dial: a DNS name or an IP address, as rustls checks them.
            if rustls_pki_types::ServerName::try_from(host.as_str()).is_err() {
                return Err(TlsError::BadHost { host: host.clone() });
            }
        }
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.subject_alt_names = hosts
            .iter()
            .map(|host| match host.parse::<IpAddr>() {
                Ok(ip) => Ok(SanType::IpAddress(ip)),
                Err(_) => Ok(SanType::DnsName(host.clone().try_into()?)),
            })
            .collect::<Result<_, rcgen::Error>>()?;
        let mut name = DistinguishedName::new();
        name.push(DnType::CommonName, "capelab relay (self-signed)");
        params.distinguished_name = name;
        let now = OffsetDateTime::now_utc();
        params.not_before = now - Duration::days(1);
        params.not_after = now + Duration::days(Self::VALID_DAYS);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params.self_signed(&key)?;
        let fingerprints = Fingerprints::of(cert.der()).expect("rcgen writes X.509");
        Ok(SelfSigned {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            fingerprints,
            hosts: hosts.to_vec(),
        })
    }

    /// Writes `cert.pem` and `key.pem` (readable by the owner alone) into `dir`, creating it;
    /// refuses to replace either file. Returns their paths.
    pub fn write_to(&self, dir: &Path) -> Result<(PathBuf, PathBuf), TlsError> {
        let cert = dir.join("cert.pem");
        let key = dir.join("key.pem");
        for path in [&cert, &key] {
            if path.exists() {
                return Err(TlsError::Exists { path: path.clone() });
            }
        }
        std::fs::create_dir_all(dir)
            .map_err(|source| TlsError::Write { path: dir.to_owned(), source })?;
        write_new(&key, self.key_pem.as_bytes(), 0o600)?;
        write_new(&cert, self.cert_pem.as_bytes(), 0o644)?;
        Ok((cert, key))
    }
}

fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), TlsError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let written = options.open(path).and_then(|mut file| file.write_all(bytes));
    written.map_err(|source| TlsError::Write { path: path.to_owned(), source })
}
