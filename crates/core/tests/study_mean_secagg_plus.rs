//! The private-mean study masked by SecAgg+ (issue 14 item 3, [`Masking::SecAggPlus`]): the same
//! estimates as on the complete graph (masking changes who shares with whom, never the sum), less
//! traffic, a site dropping mid-round still handled, and the parameters a site refuses.

mod study_support;

use capelab_core::secagg::sim::{DropMode, DropPoint};
use capelab_core::study::mean::sim::{StudyDropPoint, StudySim, StudySimConfig, StudySimReport};
use capelab_core::study::mean::{Masking, StudyConfigError, StudyParams};
use study_support::{ledger, rows};

const N_S: usize = 10;
const D: usize = 3;
const PLUS: Masking = Masking::SecAggPlus { k: 4, threshold: 3 };

fn run(sites: usize, config: StudySimConfig) -> StudySimReport {
    let data = (0..sites).map(|i| (rows(i, N_S, D), ledger(i, 100.0))).collect();
    StudySim::new(config.with_dimension(D), data).unwrap().run()
}

fn config(seed: u64) -> StudySimConfig {
    StudySimConfig::new(seed, 0.5, 1e-5, N_S)
}

/// Each site's noise and data come from its own generator, and SecureAgg's sum is exact on any
/// graph: the estimates, the messages and every ledger are those of the complete graph, to the
/// bit, while the sites' key and share messages shrink from S − 1 peers to k.
#[test]
fn secagg_plus_gives_the_complete_graphs_estimates_with_less_traffic() {
    for (sites, seed) in [(8, 1), (12, 2)] {
        let complete = run(sites, config(seed));
        let plus = run(sites, config(seed).with_masking(PLUS));
        let (a, b) = (complete.outcome.unwrap(), plus.outcome.unwrap());
        let (ea, eb) = (a.estimates().expect("estimated"), b.estimates().expect("estimated"));
        assert_eq!(eb.survivors.len(), sites);
        assert_eq!(ea.cape, eb.cape, "S = {sites}");
        assert_eq!(ea.messages, eb.messages);
        assert_eq!(b.params.masking, PLUS);
        for (x, y) in complete.sites.iter().zip(&plus.sites) {
            assert_eq!(x.spent, y.spent, "site {}: the same charge", x.id);
        }
        assert!(
            plus.bytes < complete.bytes,
            "S = {sites}: SecAgg+ sent {} bytes, the complete graph {}",
            plus.bytes,
            complete.bytes
        );
    }
}

/// A site that vanishes inside SecAgg+ (after its masked input, so its input is in the sum and
/// its neighbours' shares must recover its self-mask) leaves an estimate of the others, as on the
/// complete graph.
#[test]
fn a_site_dropping_inside_secagg_plus_is_handled() {
    for (n, at) in [DropPoint::AfterAdvertise, DropPoint::AfterMaskedInput].into_iter().enumerate()
    {
        let point = StudyDropPoint::SecAgg { attempt: 1, at };
        let seed = 30 + n as u64;
        let plus =
            run(9, config(seed).with_masking(PLUS).with_dropout(4, point, DropMode::Disconnect));
        let complete = run(9, config(seed).with_dropout(4, point, DropMode::Disconnect));
        let (a, b) = (complete.outcome.unwrap(), plus.outcome.unwrap());
        let eb = b.estimates().unwrap_or_else(|| panic!("{at:?}: {:?}", b.result));
        assert_eq!(eb.survivors.len(), 8, "{at:?}");
        assert!(!eb.survivors.contains(&plus.sites[4].id));
        assert_eq!(a.estimates().unwrap().cape, eb.cape, "{at:?}");
        assert!(plus.sites[4].spent.is_empty(), "the dropped site released nothing");
    }
}

/// Parameters SecAgg+ cannot run with are refused when the study is made, naming the problem.
#[test]
fn secagg_plus_parameters_are_checked() {
    let params = || StudyParams::new((1..=6).collect(), 0.5, 1e-5, N_S).unwrap();
    let refused = |masking| match params().with_masking(masking) {
        Err(StudyConfigError::SecAgg(e)) => e.to_string(),
        other => panic!("{masking:?}: {other:?}"),
    };
    // k + 1 must be below S: with 6 sites the neighbourhood is at most 5 sites
    assert!(refused(Masking::SecAggPlus { k: 6, threshold: 4 }).contains("k = 6"));
    assert!(refused(Masking::SecAggPlus { k: 3, threshold: 3 }).contains("even"));
    // t above half the neighbourhood, and within it
    let low = refused(Masking::SecAggPlus { k: 4, threshold: 2 });
    let high = refused(Masking::SecAggPlus { k: 4, threshold: 6 });
    assert!(low.contains("2") && high.contains("6"), "{low} / {high}");
    let ok = params().with_masking(Masking::SecAggPlus { k: 2, threshold: 2 }).unwrap();
    assert_eq!(ok.masking.to_string(), "SecAgg+ with k = 2 neighbours, t = 2 per neighbourhood");
    // the study's JSON without a masking field is the complete graph (older dashboards)
    let mut json = serde_json::to_value(params()).unwrap();
    json.as_object_mut().unwrap().remove("masking");
    let back: StudyParams = serde_json::from_value(json).unwrap();
    assert_eq!(back.masking, Masking::Complete);
}

#[test]
fn the_default_degree_grows_like_log_s_and_stays_below_s_minus_one() {
    assert_eq!(Masking::secagg_plus_for(3), None);
    let k = |s| match Masking::secagg_plus_for(s).unwrap() {
        Masking::SecAggPlus { k, threshold } => {
            assert_eq!(threshold, k / 2 + 1);
            StudyParams::new((1..=s as u32).collect(), 0.5, 1e-5, N_S)
                .unwrap()
                .with_masking(Masking::secagg_plus_for(s).unwrap())
                .unwrap_or_else(|e| panic!("S = {s}: {e}"));
            k
        }
        Masking::Complete => unreachable!(),
    };
    assert_eq!([k(4), k(5), k(6), k(8), k(30), k(1000)], [2, 2, 4, 6, 10, 20]);
}
