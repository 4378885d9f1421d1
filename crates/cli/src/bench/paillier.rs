/*!
`cape bench paillier`: Paillier-2048 key generation, encryption and decryption, and EFPSN's Phase 1
of 5 agents on a ring, natively — next to the same work in headless Chromium
(`crates/core/tests/bench_wasm_paillier.rs`, merged with `--wasm`) and in python-phe with gmpy2
(`scripts/bench_paillier_phe.py`, merged with `--phe`), with the ratios computed here.
`scripts/bench` runs all three in one go.

Each runner prints one JSON line `{"bench":"paillier","runner":…,"cases":[{op, median_ms,
repetitions}]}`.
*/

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use capelab_core::efpsn::bench::phase1_on_a_ring;
use capelab_core::rng::derive;
use capelab_paillier::{Ciphertext, DjnEncryptor, KeySize, Keypair};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::progress::Progress;

#[derive(clap::Args, Debug)]
pub struct PaillierBenchArgs {
    /// Timed repetitions of encryption and decryption (the median is reported).
    #[arg(long, default_value_t = 41)]
    repetitions: usize,
    /// Key generations timed.
    #[arg(long, default_value_t = 5)]
    keys: usize,
    /// The browser's output (tests/bench_wasm_paillier.rs) to merge.
    #[arg(long, value_name = "FILE")]
    wasm: Option<PathBuf>,
    /// python-phe's JSON line (scripts/bench_paillier_phe.py) to merge.
    #[arg(long, value_name = "FILE")]
    phe: Option<PathBuf>,
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Case {
    pub op: String,
    pub median_ms: f64,
    pub repetitions: usize,
}

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed().as_secs_f64() * 1e3)
}

fn bench(args: &PaillierBenchArgs) -> Result<Value, String> {
    if args.repetitions == 0 || args.keys == 0 {
        return Err("--repetitions and --keys must be at least 1".into());
    }
    let mut rng = derive(1, "bench/paillier");
    let mut keys = Vec::new();
    let mut keygen = Vec::new();
    let progress =
        Progress::new("bench paillier: 2048-bit key generation", "key", args.keys.max(5) as u64);
    for _ in 0..args.keys.max(5) {
        let (k, ms) = timed(|| Keypair::generate(KeySize::Standard2048, &mut rng));
        keygen.push(ms);
        keys.push(k);
        progress.inc(1);
    }
    progress.finish();
    let progress = Progress::spinner("bench paillier: encryption, decryption, Phase 1");
    let k = &keys[0];
    let mut enc = Vec::new();
    let mut cts: Vec<Ciphertext> = Vec::new();
    for i in 0..args.repetitions {
        let (c, ms) = timed(|| k.public.encrypt_i64(i as i64 - 20, &mut rng));
        enc.push(ms);
        cts.push(c);
    }
    // DJN: one fixed-base table per key, then short-exponent randomizers (an assumption beyond
    // DCR, capelab_paillier::DjnEncryptor; capelab's protocols do not use it).
    let (djn, djn_setup_ms) = timed(|| DjnEncryptor::new(&k.public, &mut rng));
    let mut enc_djn = Vec::new();
    for i in 0..args.repetitions {
        let (c, ms) = timed(|| djn.encrypt_i64(i as i64 - 20, &mut rng));
        enc_djn.push(ms);
        cts.push(c);
    }
    let mut dec = Vec::new();
    for c in &cts {
        let (m, ms) = timed(|| k.secret.decrypt_i64(c));
        m.map_err(|e| e.to_string())?;
        dec.push(ms);
    }
    let (traffic, phase1_ms) =
        timed(|| phase1_on_a_ring(keys.iter().take(5).cloned().collect(), 1));
    let traffic = traffic.map_err(|e| e.to_string())?;
    progress.finish();
    let native = vec![
        Case { op: "keygen".into(), median_ms: median(keygen), repetitions: args.keys.max(5) },
        Case { op: "encrypt".into(), median_ms: median(enc), repetitions: args.repetitions },
        Case { op: "djn_setup".into(), median_ms: djn_setup_ms, repetitions: 1 },
        Case {
            op: "encrypt_djn".into(),
            median_ms: median(enc_djn),
            repetitions: args.repetitions,
        },
        Case { op: "decrypt".into(), median_ms: median(dec), repetitions: 2 * args.repetitions },
        Case { op: "phase1_ring5".into(), median_ms: phase1_ms, repetitions: 1 },
    ];
    let per_second =
        |cases: &[Case], op: &str| cases.iter().find(|c| c.op == op).map(|c| 1e3 / c.median_ms);
    let mut report = json!({
        "bench": "paillier",
        "key_bits": 2048,
        "phase1": { "agents": 5, "graph": "ring", "coefficients": 10, "messages": traffic.messages, "bytes": traffic.bytes },
        "native": native,
        "native_encryptions_per_second": per_second(&native, "encrypt"),
        "native_djn_encryptions_per_second": per_second(&native, "encrypt_djn"),
    });
    let mut others = Vec::new();
    for (key, file) in [("wasm", &args.wasm), ("phe", &args.phe)] {
        let Some(path) = file else { continue };
        let cases = read_cases(path)?;
        report[format!("{key}_encryptions_per_second")] = json!(per_second(&cases, "encrypt"));
        report[key] = json!(cases);
        others.push((key, cases));
    }
    // Ratios of median times, other / native, per operation; and wasm against phe.
    let ratio = |a: &[Case], b: &[Case]| -> Value {
        let pairs: Vec<Value> = a
            .iter()
            .filter_map(|x| {
                let y = b.iter().find(|y| y.op == x.op)?;
                Some(json!({"op": x.op, "ratio": x.median_ms / y.median_ms}))
            })
            .collect();
        json!(pairs)
    };
    for (key, cases) in &others {
        report[format!("{key}_over_native")] = ratio(cases, &native);
    }
    if let (Some((_, wasm)), Some((_, phe))) =
        (others.iter().find(|(k, _)| *k == "wasm"), others.iter().find(|(k, _)| *k == "phe"))
    {
        report["wasm_over_phe"] = ratio(wasm, phe);
    }
    // DJN encryption against python-phe's standard one (phe has no DJN variant).
    let ms = |cases: &[Case], op: &str| cases.iter().find(|c| c.op == op).map(|c| c.median_ms);
    if let Some((_, phe)) = others.iter().find(|(k, _)| *k == "phe")
        && let Some(phe_enc) = ms(phe, "encrypt")
    {
        let mut djn = json!({ "native": ms(&native, "encrypt_djn").map(|m| m / phe_enc) });
        if let Some((_, wasm)) = others.iter().find(|(k, _)| *k == "wasm") {
            djn["wasm"] = json!(ms(wasm, "encrypt_djn").map(|m| m / phe_enc));
        }
        report["encrypt_djn_over_phe_encrypt"] = djn;
    }
    Ok(report)
}

fn read_cases(path: &PathBuf) -> Result<Vec<Case>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("could not read {}: {e}", path.display()))?;
    let line = text
        .lines()
        .filter_map(|l| l.find("{\"bench\":\"paillier\"").map(|i| &l[i..]))
        .next()
        .ok_or_else(|| format!("{}: no {{\"bench\":\"paillier\"…}} line", path.display()))?;
    let v: Value = serde_json::from_str(line).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_value(v["cases"].clone()).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn run(args: PaillierBenchArgs) -> ExitCode {
    crate::exit::report_json(bench(&args), args.out.as_deref())
}
