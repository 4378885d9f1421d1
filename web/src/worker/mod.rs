/*!
The Joint ICA study's numerics in a Web Worker, so the tabs stay responsive: a site's (it
generates its subjects, computes its covariance, D²·N_s, and its gradients) and the dashboard's
(capePCA's D×D eigendecomposition, the recovered maps every iteration).

- [`protocol`]: the messages between the tab and the worker.
- [`engine`]: the core's capePCA and capeDJICA site roles, driven by those messages (plain
  Rust, tested natively).
- [`efpsn`]: a site's EFPSN agent (Paillier key generation, encryption and decryption).
- [`vvi`]: a site's party or dealer in the vertical synthetic-data study (DP-VI + MPC).
- [`view`]: what the site's panel shows (data at a glance, phase, the noise it added).
- [`aggregator`]: a dashboard's Joint ICA aggregators (capePCA's eigendecomposition, the maps'
  pseudo-inverse), also off the page's thread; [`state`] routes between the two.
- [`host`] (main thread) and [`entry`] (the worker): `postMessage` on either side.

The main thread keeps the websocket and the ledger's storage: it forwards study messages to the
worker and sends what the worker answers; the worker posts the ledger back after every release.
*/

pub mod entry;
pub mod host;
pub mod protocol;
pub mod state;
