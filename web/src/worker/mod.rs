/*!
A site's Joint ICA work in a Web Worker, so the tab stays responsive while it generates its
subjects, computes its covariance (D²·N_s) and its gradients.

- [`protocol`]: the messages between the tab and the worker.
- [`engine`]: the core's capePCA and capeDJICA site roles, driven by those messages (plain
  Rust, tested natively).
- [`view`]: what the site's panel shows (data at a glance, phase, the noise it added).
- [`host`] (main thread) and [`entry`] (the worker): `postMessage` on either side.

The main thread keeps the websocket and the ledger's storage: it forwards study messages to the
worker and sends what the worker answers; the worker posts the ledger back after every release.
*/

pub mod engine;
pub mod entry;
pub mod host;
pub mod protocol;
pub mod view;
