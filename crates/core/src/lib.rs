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
- [`rng`]: the CSPRNG for all privacy randomness, seeded from the OS or from a run seed.
- [`fmri`]: synthetic fMRI with ground truth, normalisation, CSV/NPY matrix loading.
- [`pca`]: capePCA (Algorithm 3) and the projection/whitening for ICA.
- [`djica`]: capeDJICA (Algorithm 4) and its baselines, site and aggregator sides.
- [`ica_quality`]: q_NGI, component matching, principal cosines.
*/

pub mod codec;
pub mod djica;
pub mod fmri;
pub mod ica_quality;
pub mod pca;
pub mod rng;
pub mod transport;
pub mod wire;
