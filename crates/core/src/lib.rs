/*!
capelab's core: the protocols and numerics of correlated-noise private computation across sites.

**Sans-IO.** Nothing here opens a socket, reads a clock or touches the DOM: each protocol role is a
state machine that takes messages (and the current time, when it matters) and returns messages.
The relay, the browser app and the `cape` CLI are drivers around it. The crate builds for native
and for `wasm32-unknown-unknown` and depends on neither tokio nor web-sys.

Modules, one concept each:
- [`wire`]: the relay-visible envelope and control frames.
- [`transport`]: the one transport seam, and its in-memory implementation.
- [`codec`]: protocol messages to bytes.
- [`driver`]: the seam between any sans-IO protocol role and a transport ([`driver::Machine`],
  [`driver::Driver`]).
- [`rng`]: the CSPRNG for all privacy randomness, seeded from the OS or from a run seed.
- [`fixed`]: reals into the masking ring Z_{2^64} (stochastic rounding, overflow refused up front).
- [`special`]: normal tails and log-space helpers, accurate where δ lives.
- [`gaussian`]: classical Gaussian-mechanism calibration, with its ε < 1 validity enforced.
- [`cape`]: CAPE (seed 000 §III): zero-sum noise, site and aggregator steps, the conventional
  baseline, Theorem 1 with its errata, the asymmetric extension.
- [`secagg`]: SecureAgg (Bonawitz et al.), site and aggregator as sans-IO state machines.
- [`link`]: end-to-end sealed point-to-point links between two participants (SecureAgg's key
  agreement and AEAD, for protocols whose relay must not read what passes between peers).
- [`study`]: what a dashboard runs across sites, as site and aggregator roles built from the
  above: the private mean ([`study::mean`], CAPE over SecureAgg, gated by each site's ledger).
- [`data`]: numeric CSV tables, normalisation into FM's domain, splits, synthetic generators.
- [`fm`]: the functional mechanism (Gaussian, Laplace, relaxed), capeFM and their baselines.
- [`nn`]: CAPE gradient descent for a two-layer network, accounted over all iterations.
- [`accountant`]: privacy accounting (analytic Gaussian, RDP, subsampled Gaussian, PLD, moments,
  basic and strong composition, collusion-aware view) and the per-site budget ledger; the crate
  `capelab-accountant`, re-exported here with [`special`] and [`gaussian`].
- [`fmri`]: synthetic fMRI with ground truth, normalisation, CSV/NPY matrix loading.
- [`pca`]: capePCA (Algorithm 3) and the projection/whitening for ICA.
- [`djica`]: capeDJICA (Algorithm 4) and its baselines, site and aggregator sides.
- [`ica_quality`]: q_NGI, component matching, principal cosines.
- [`par`]: the sites' work in parallel (rayon behind the `parallel` feature, which the CLI turns
  on; sequential without it, as in the browser), results in site order whatever the thread count.
- [`roofline`]: the target's arithmetic ceiling (faer's in-cache product rate), which the benchmarks
  set capePCA's and capeDJICA's speed against, natively and in the browser.
- [`efpsn`]: EFPSN (seed 003): Paillier-built zero-sum polynomial masks over a peer graph, and
  decentralised optimisation on the masked costs.
*/

pub mod cape;
pub mod codec;
pub mod data;
pub mod djica;
pub mod driver;
pub mod efpsn;
pub mod fixed;
pub mod fm;
pub mod fmri;
pub mod ica_quality;
pub mod link;
pub mod nn;
pub mod par;
pub mod pca;
pub mod rng;
pub mod roofline;
pub mod secagg;
pub mod study;
pub mod transport;

// The wire format and the accounting floor are their own crates; their paths stay where they were.
pub use capelab_accountant as accountant;
pub use capelab_accountant::{gaussian, special};
pub use capelab_wire as wire;
