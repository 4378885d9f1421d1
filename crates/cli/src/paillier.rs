//! `cape paillier`: capelab's Paillier on the command line, JSON in and out, so that another
//! implementation (python-phe in `tests/paillier/interop.py`) can exchange keys and ciphertexts
//! with it. A tool for tests and teaching: `keygen` prints the secret primes.

use std::process::ExitCode;

use capelab_core::rng::Seed;
use capelab_paillier::{Ciphertext, DjnEncryptor, KeySize, Keypair, PublicKey};
use serde_json::json;

#[derive(clap::Subcommand, Debug)]
pub enum PaillierCommand {
    /// A key pair as JSON: n, and the SECRET primes p and q (for interoperability tests only).
    Keygen {
        #[arg(long, default_value_t = 2048)]
        bits: u32,
        /// A fixed seed (reproducible, not secret); the OS's randomness without it.
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Encrypts signed integers under the public key n: JSON list of decimal ciphertexts.
    Encrypt {
        #[arg(long)]
        n: String,
        #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
        values: Vec<i64>,
        #[arg(long)]
        seed: Option<u64>,
        /// Damgård–Jurik–Nielsen randomizers from a fixed-base table (faster for many values;
        /// an assumption beyond DCR, see capelab_paillier::DjnEncryptor).
        #[arg(long)]
        djn: bool,
    },
    /// Decrypts ciphertexts with the primes p and q: JSON list of signed integers.
    Decrypt {
        #[arg(long)]
        p: String,
        #[arg(long)]
        q: String,
        #[arg(long, value_delimiter = ',')]
        ciphertexts: Vec<String>,
    },
    /// The homomorphic sum of ciphertexts under n.
    Add {
        #[arg(long)]
        n: String,
        #[arg(long, value_delimiter = ',')]
        ciphertexts: Vec<String>,
    },
}

fn seed(s: Option<u64>) -> Seed {
    s.map_or(Seed::Os, Seed::Fixed)
}

fn parse_ciphertexts(texts: &[String]) -> Result<Vec<Ciphertext>, String> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| Ciphertext::from_decimal(t).map_err(|e| format!("ciphertext {i}: {e}")))
        .collect()
}

fn paillier(command: PaillierCommand) -> Result<serde_json::Value, String> {
    Ok(match command {
        PaillierCommand::Keygen { bits, seed: s } => {
            let size = match bits {
                1024 => KeySize::Demo1024,
                2048 => KeySize::Standard2048,
                b => return Err(format!("--bits {b}: 2048 (or 1024 for demos)")),
            };
            let k = Keypair::generate(size, &mut seed(s).rng("paillier/keygen"));
            let (p, q) = k.primes_decimal();
            json!({ "n": k.public.modulus_decimal(), "p": p, "q": q, "bits": bits,
                    "warning": "p and q are the secret key: printed for interoperability tests only" })
        }
        PaillierCommand::Encrypt { n, values, seed: s, djn } => {
            let pk = PublicKey::from_modulus_decimal(&n).map_err(|e| format!("--n: {e}"))?;
            let mut rng = seed(s).rng("paillier/encrypt");
            let cts: Vec<String> = if djn {
                let e = DjnEncryptor::new(&pk, &mut rng);
                values.iter().map(|&v| e.encrypt_i64(v, &mut rng).to_decimal()).collect()
            } else {
                values.iter().map(|&v| pk.encrypt_i64(v, &mut rng).to_decimal()).collect()
            };
            json!(cts)
        }
        PaillierCommand::Decrypt { p, q, ciphertexts } => {
            let k = Keypair::from_primes_decimal(&p, &q).map_err(|e| format!("--p/--q: {e}"))?;
            let values = parse_ciphertexts(&ciphertexts)?
                .iter()
                .enumerate()
                .map(|(i, c)| k.secret.decrypt_i64(c).map_err(|e| format!("ciphertext {i}: {e}")))
                .collect::<Result<Vec<i64>, String>>()?;
            json!(values)
        }
        PaillierCommand::Add { n, ciphertexts } => {
            let pk = PublicKey::from_modulus_decimal(&n).map_err(|e| format!("--n: {e}"))?;
            let cts = parse_ciphertexts(&ciphertexts)?;
            for (i, c) in cts.iter().enumerate() {
                pk.check(c).map_err(|e| format!("ciphertext {i}: {e}"))?;
            }
            json!(pk.sum(&cts).to_decimal())
        }
    })
}

pub fn run(command: PaillierCommand) -> ExitCode {
    match paillier(command) {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(m) => crate::exit::fail(m),
    }
}
