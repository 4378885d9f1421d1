//! The in-process simulations give the same bits on one thread and on four (`cape --threads`,
//! `capelab_core::par`): capePCA + capeDJICA (with the synthetic data), the network's CAPE
//! training, capeFM, EFPSN's key pairs and a SecureAgg instance with its sites in parallel. Each
//! runs inside a local rayon pool of 1 and of 4 threads and the results are compared exactly
//! (digests over the f64 bits, or equality).

use capelab_core::data::{Dataset, Normaliser, TargetKind, synthetic};
use capelab_core::djica::{
    CapeZeroSumNoise, DjicaConfig, Method, PcaSettings, PrivacyUnit, StudyData, run_study,
};
use capelab_core::fm::{FmConfig, Mechanism, Model, fit};
use capelab_core::fmri::{SyntheticConfig, generate};
use capelab_core::nn::{NnConfig, NnMechanism, train};
use capelab_core::rng::{Seed, derive};
use capelab_core::secagg::lockstep::Lockstep;
use capelab_core::secagg::{AggregatorConfig, Encoding, Params, SiteInput};

/// Runs `f` on a pool of `threads` threads.
fn on<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(f)
}

/// FNV-1a over the bits of `values`.
fn digest<'a>(values: impl IntoIterator<Item = &'a f64>) -> u64 {
    values.into_iter().fold(0xcbf2_9ce4_8422_2325, |h, v| {
        v.to_bits()
            .to_le_bytes()
            .iter()
            .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
    })
}

/// The synthetic study (generated on the pool too), private capePCA and 30 capeDJICA
/// iterations over 4 sites: a digest of everything the study releases and reports.
fn djica_digest() -> u64 {
    let config = SyntheticConfig {
        grid: 8,
        components: 4,
        timepoints: 60,
        ..SyntheticConfig::well_conditioned(16, 4)
    };
    let study = generate(&config, 5).unwrap();
    let djica = DjicaConfig {
        method: Method::Cape,
        unit: PrivacyUnit::Subject,
        max_iterations: 30,
        ..DjicaConfig::default()
    };
    let mut noise = CapeZeroSumNoise::ideal(Seed::Fixed(5), 4);
    let result = run_study(
        StudyData::synthetic(&study),
        &PcaSettings { private: true, ..PcaSettings::default() },
        &djica,
        Seed::Fixed(5),
        &mut noise,
        &mut |_| {},
    )
    .unwrap();
    let q: Vec<f64> = result.djica.history.iter().filter_map(|h| h.q).collect();
    assert_eq!(q.len(), 30);
    digest(
        study
            .sites
            .iter()
            .flat_map(|s| s.xt.iter())
            .chain(&result.pca.subspace.eigenvalues)
            .chain(&result.pca.subspace.v)
            .chain(&result.unmixing)
            .chain(&result.djica.w)
            .chain(&result.djica.b)
            .chain(&q),
    )
}

#[test]
fn cape_pca_and_djica_give_the_same_bits_on_1_and_4_threads() {
    let one = on(1, djica_digest);
    assert_eq!(one, on(4, djica_digest));
    assert_eq!(one, on(3, djica_digest), "a thread count that does not divide S");
}

fn classification() -> (Dataset, Dataset) {
    let raw = synthetic::two_gaussians(400, 5, 0.25, 3);
    let (tr, te) = raw.split(0.3, 3).unwrap();
    let radius = synthetic::two_gaussians_radius(5, 0.25);
    let f = Normaliser::RowClip { radius, target: None }.fit(&tr, TargetKind::Binary).unwrap();
    (f.apply(&tr).unwrap(), f.apply(&te).unwrap())
}

#[test]
fn cape_network_training_gives_the_same_bits_on_1_and_4_threads() {
    let (tr, te) = classification();
    for mechanism in [NnMechanism::Cape, NnMechanism::Conventional, NnMechanism::NonPrivate] {
        let config = NnConfig { iterations: 40, sites: 4, ..NnConfig::new(mechanism, 1.0) };
        let run = |threads| {
            let r = on(threads, || train(&config, &tr, &te).unwrap());
            let history: Vec<f64> = r.loss_history.iter().map(|h| h.1).collect();
            (digest(r.final_params.iter().chain(&history)), r.clipped_share.to_bits())
        };
        assert_eq!(run(1), run(4), "{mechanism:?}");
    }
}

#[test]
fn cape_fm_gives_the_same_bits_on_1_and_4_threads() {
    let (data, _) = synthetic::regression(600, 4, 0.0, 2);
    for (model, mechanism) in [
        (Model::Linear, Mechanism::Cape),
        (Model::Linear, Mechanism::Conventional),
        (Model::Logistic, Mechanism::Cape),
    ] {
        let data = match model {
            Model::Linear => data.clone(),
            Model::Logistic => classification().0,
        };
        let config = FmConfig::new(model, mechanism, 1.0, 1e-5);
        let run = |threads| digest(&on(threads, || fit(&config, &data).unwrap()).weights);
        assert_eq!(run(1), run(4), "{model:?} {mechanism:?}");
    }
}

#[test]
fn efpsn_key_pairs_do_not_depend_on_the_thread_count() {
    use capelab_paillier::{KeySize, Keypair};
    let keys = |threads| {
        on(threads, || {
            capelab_core::par::map_indices(3, |i| {
                Keypair::generate(KeySize::Demo1024, &mut derive(9, &format!("efpsn/key/{i}")))
            })
        })
    };
    let (one, four) = (keys(1), keys(4));
    for (a, b) in one.iter().zip(&four) {
        assert!(a.public == b.public, "the same key pairs");
    }
}

#[test]
fn a_secagg_instance_with_parallel_sites_gives_the_sequential_sum_and_aggregate() {
    let s = 12u32;
    let instance = || {
        let params = Params::new((1..=s).collect(), 50, Encoding::Ring).unwrap();
        let inputs =
            (1..=s).map(|id| SiteInput::Ring((0..50).map(|j| j * u64::from(id)).collect()));
        Lockstep::new(AggregatorConfig::new(params).unwrap(), inputs.collect(), 7, &[4, 11])
            .unwrap()
    };
    let mut sequential = instance();
    sequential.run(&mut |w| w.run()).unwrap();
    for threads in [1, 4] {
        let mut parallel = instance();
        on(threads, || parallel.run_parallel()).unwrap();
        assert_eq!(parallel.outcome(), sequential.outcome(), "{threads} threads");
    }
    let sum = &sequential.outcome().unwrap().unwrap().sum;
    let survivors: u64 = (1..=u64::from(s)).filter(|&id| id != 4 && id != 11).sum();
    assert_eq!(sum[3], 3 * survivors);
}
