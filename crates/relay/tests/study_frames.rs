//! What the studies really send, measured on the core's own messages: each study's largest frame
//! and a site's largest burst, at the largest sizes the core accepts. The byte budgets are sized
//! from these (README, "The relay's limits"); this test fails if they stop fitting.
//!
//! `cargo test -p capelab-relay --test study_frames -- --nocapture` prints the table.

use capelab_core::codec;
use capelab_core::fm::model::Model;
use capelab_core::pca::upper_len;
use capelab_core::secagg::SessionId;
use capelab_core::secagg::messages::{Body, RingVec, SecAggMessage};
use capelab_core::study::StudyId;
use capelab_core::study::iterative::pca::MAX_VOXELS;
use capelab_core::study::iterative::{IterBody, IterMessage, IterativeParams};
use capelab_core::study::mean::params::StudyParams;
use capelab_core::study::mean::query::Query;
use capelab_core::study::mean::{MeanBody, MeanMessage, ReleaseMessage};
use capelab_core::study::regression::RegressionQuery;
use capelab_relay::RelayLimits;
use capelab_wire::{ClientFrame, To, WIRE_VERSION, encode_payload};

/// The `send` frame that carries `bytes` (its length is what the byte budget counts).
fn frame_len(kind: &str, bytes: &[u8]) -> usize {
    let frame = ClientFrame::Send {
        v: WIRE_VERSION,
        to: To::One(1),
        kind: kind.into(),
        payload: encode_payload(bytes),
    };
    serde_json::to_string(&frame).unwrap().len()
}

fn masked_input(values: usize) -> Vec<u8> {
    codec::encode(&SecAggMessage {
        session: SessionId([7; 16]),
        body: Body::MaskedInput(RingVec(vec![u64::MAX; values])),
    })
}

/// A mean or regression study at `len` released values: the masked input and the release (CAPE
/// plus the conventional comparison) a site sends.
fn mean_like(len: usize) -> (usize, usize) {
    let study = StudyId([1; 16]);
    let secagg = codec::encode(&MeanMessage {
        study,
        body: MeanBody::SecAgg { attempt: 0, message: masked_input(len) },
    });
    let release = codec::encode(&MeanMessage {
        study,
        body: MeanBody::Release(ReleaseMessage {
            attempt: 0,
            cape: vec![f64::MAX; len],
            conventional: Some(vec![f64::MAX; len]),
        }),
    });
    (frame_len("mean/secagg", &secagg), frame_len("mean/release", &release))
}

/// An iterative study whose upfront noise has `noise_len` values and whose release has `len`.
fn iterative(noise_len: usize, len: usize) -> (usize, usize) {
    let study = StudyId([1; 16]);
    let secagg = codec::encode(&IterMessage::<(), ()> {
        study,
        body: IterBody::SecAgg(masked_input(noise_len)),
    });
    let release = codec::encode(&IterMessage::<(), ()> {
        study,
        body: IterBody::Release { iteration: 0, values: vec![f64::MAX; len] },
    });
    (frame_len("iter/secagg", &secagg), frame_len("iter/release", &release))
}

#[test]
fn the_byte_budgets_hold_every_study_at_its_largest() {
    let limits = RelayLimits::default();
    let regression =
        Query::Regression(RegressionQuery { model: Model::Linear, release_constant: true })
            .vector_len(StudyParams::MAX_FEATURES);
    let pca = upper_len(MAX_VOXELS);
    // NN and Joint ICA: the upfront noise vector at its cap, and a large per-iteration release
    // (an NN with D = 1000 features and H = 64 hidden units; ICA with R = 64 components).
    let nn_len = 64 * 1000 + 2 * 64 + 1;
    let ica_len = 64 * 64 + 64;
    let studies = [
        ("mean, D = 65 536", mean_like(StudyParams::MAX_DIMENSION)),
        ("regression, D = 64", mean_like(regression)),
        ("capePCA, D = 1024", iterative(pca, pca)),
        ("NN, upfront noise at its cap", iterative(IterativeParams::MAX_NOISE_LEN, nn_len)),
        ("Joint ICA, upfront noise at its cap", iterative(IterativeParams::MAX_NOISE_LEN, ica_len)),
    ];
    eprintln!("study | secagg frame | release frame | site burst (both)");
    for (name, (secagg, release)) in studies {
        // Frames past the frame limit are refused by the relay (and by the clients before
        // sending): the study cannot run at that size, whatever the budget.
        let sent = [secagg, release].map(|f| if f <= limits.max_frame_bytes { f } else { 0 });
        let burst: usize = sent.iter().sum();
        eprintln!("{name} | {secagg} | {release} | {burst}");
        assert!(burst <= limits.byte_burst as usize, "{name}: {burst} bytes at once");
    }
    // Whatever a study sends, two frames at the limit fit the burst, and a room's burst holds
    // four senders' bursts.
    assert!(2 * limits.max_frame_bytes <= limits.byte_burst as usize);
    assert!(4 * limits.byte_burst <= limits.room_byte_burst);
}
