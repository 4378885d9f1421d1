/*!
capelab's core for JavaScript: the npm package `capelab` (built by `crates/js/build.sh` with
`wasm-pack build`, targets `web` and `nodejs`).

A small, stable API over [`capelab_core`]; nothing here computes anything the core does not:

- [`accountant`]: [`Accountant`](accountant::Accountant) (events in, ε(δ) and δ(ε) out, PLD and
  RDP, as a site's ledger accounts them) and [`capeBounds`](accountant::cape_bounds) (one CAPE
  release's privacy, Theorem 1 with the errata and the full view, spec cape-secagg-pca-djica §2).
- [`ledger`]: a site's privacy [`Ledger`](ledger::Ledger) (budget, releases, JSON export).
- [`roles`]: the private-mean study's sans-IO roles, [`MeanSite`](roles::MeanSite) and
  [`MeanAggregator`](roles::MeanAggregator): messages in, messages out, as in quinn-proto.
- [`site`]: [`Site`](site::Site), a site of a room over a transport the caller provides: what the
  app's site tab does for the private mean (ledger gate, ledger reports to the dashboards, one
  `MeanSite` per study).
- [`relay`]: the relay's JSON frames (`capelab_core::wire`) to and from the events the roles take,
  so a page needs only a `WebSocket`.

JavaScript moves bytes and keeps time; every protocol decision is the core's. The TypeScript types
of the objects that cross the boundary are in [`TYPES`] (wasm-bindgen's `.d.ts` holds the
classes and functions).
*/

use wasm_bindgen::prelude::*;

pub mod accountant;
mod convert;
pub mod ledger;
pub mod relay;
pub mod roles;
pub mod site;

/// The TypeScript shapes of the plain objects the API takes and returns.
#[wasm_bindgen(typescript_custom_section)]
pub const TYPES: &str = r#"
/** A participant's id in its room, assigned by the relay (1, 2, 3, … in join order). */
export type ParticipantId = number;

/** Who a message is for: everyone else in the room, or one participant (the relay's JSON). */
export type To = "all" | { one: ParticipantId };

/** A participant as the room sees it. */
export interface Peer {
  id: ParticipantId;
  role: "site" | "dashboard";
  name: string;
}

/** A message a role wants sent: hand it to the transport unchanged. */
export interface Outgoing {
  to: To;
  /** The envelope kind, e.g. "mean/accept" or "secagg/masked-input". */
  kind: string;
  payload: Uint8Array;
}

/**
 * The transport a `Site` sends through: the caller's (a relay websocket, a MessagePort, an
 * in-memory room in tests). `send` may queue; it must not call back into the same `Site`
 * synchronously. Throwing refuses the send (the site carries on; the aggregator's deadlines
 * handle a message that never arrives).
 */
export interface Transport {
  send(to: To, kind: string, payload: Uint8Array): void;
}

/** What happens in a room, as `readFrame` returns it and as `Site.handleEvent` takes it. */
export type RoomEvent =
  | { type: "connected"; room: string; you: Peer; peers: Peer[]; resume: string }
  | { type: "peer_joined"; peer: Peer }
  | { type: "peer_rejoined"; peer: Peer }
  | { type: "peer_left"; peer: Peer }
  | { type: "message"; from: ParticipantId; kind: string; payload: Uint8Array }
  | { type: "refused"; code: string; message: string };

/** How to enter a room through the relay (`joinFrame`). */
export interface JoinOptions {
  /** The room code the dashboard shows, e.g. "K7QX2M". */
  room: string;
  /** The name others see (trimmed, at most 40 characters). */
  name: string;
  /** "site" (the default) or "dashboard". */
  role?: "site" | "dashboard";
  /** The token of an earlier session (`connected.resume`): come back with the same id. */
  resume?: string;
}

/** ε at δ: the tighter of PLD and RDP, as a site's ledger charges it. */
export interface EpsilonReport {
  /** min(pld, rdp). */
  epsilon: number;
  /** The PLD accountant's ε; null when the composition does not fit its grid. */
  pld: number | null;
  /** RDP with Balle et al.'s conversion, and its optimal order. */
  rdp: number;
  rdpOrder: number;
  bound: "pld" | "rdp";
}

/** δ at ε under both accountants, and the tighter. */
export interface DeltaReport {
  delta: number;
  pld: number | null;
  rdp: number;
}

/** One kind of release for the `Accountant`. */
export interface GaussianEvent {
  /** z = σ/Δ. */
  noiseMultiplier: number;
  /** How many such releases (default 1). */
  count?: number;
  /** Poisson subsampling rate q in (0, 1] (default 1: no subsampling). */
  samplingRate?: number;
  /** CAPE's c_S ≥ 1 for a colluding adversary's view (default 1: the aggregator's view). */
  collusionFactor?: number;
}

/** One CAPE release's privacy (spec §2, Theorem 1 with the errata), as the core reports it. */
export interface CapeBounds {
  sites: number;
  colluders: number;
  noise_multiplier: number;
  epsilon: number;
  /** Theorem 1's exact c_S. */
  c_s: number;
  loss: { mu_z: number; sigma_z: number };
  delta_phi_bound: number;
  delta_tail: number;
  paper_eq1_c_s: number | null;
  paper_eq1_delta_phi_bound: number | null;
  delta_conv: number;
  delta_pool: number;
  /** The guarantee capelab's ledgers account: the adversary also subtracts the colluders' noise. */
  full_view: {
    c_s: number;
    loss: { mu_z: number; sigma_z: number };
    delta_phi_bound: number | null;
    delta_tail: number | null;
  };
}

/** A site's budget: at most ε at δ, in total. */
export interface Budget {
  epsilon: number;
  delta: number;
}

/** A release recorded in a ledger (the ledger file's JSON). */
export interface LedgerEntry {
  study: string;
  event: unknown;
  time_ms: number;
  epsilon_after: number;
  epsilon_after_rdp: number;
  epsilon_after_pld: number | null;
  bound: "rdp" | "pld";
}

/** The parameters of a private-mean study (the aggregator's). */
export interface MeanStudyOptions {
  /** The invited sites' ids. */
  sites: ParticipantId[];
  /** The (ε, δ) each site's local noise is calibrated to. */
  epsilon: number;
  delta: number;
  /** N_s: rows per site. */
  valuesPerSite: number;
  /** d: values per row, each in [0, 1] (default 1). */
  dimension?: number;
  /** SecureAgg's threshold t (default ⌊2S/3⌋ + 1). */
  threshold?: number;
  /** Every site also sends the conventional release, for comparison (default false). */
  conventional?: boolean;
  /** "classical" (the papers' formula, the default) or "analytic" (valid at every ε). */
  calibration?: "classical" | "analytic";
  /** Re-runs among the survivors after a site broke the zero sum (default 2, at most 10). */
  maxReruns?: number;
  /** How long each round waits before it goes on with whoever answered (default 30 000 ms). */
  roundTimeoutMs?: number;
  /** A fixed seed for reproducible runs (tests); not private against anyone who knows it. */
  seed?: number;
}

/** A site role's construction (`MeanSite`). */
export interface MeanSiteOptions {
  /** This site's id and the aggregator's (the sender of `mean/start`). */
  me: ParticipantId;
  aggregator: ParticipantId;
  /** The site's rows: N_s rows of d values in [0, 1]; checked when the study starts. */
  rows: number[][];
  /** A fixed seed for reproducible runs (tests); not private against anyone who knows it. */
  seed?: number;
}

/** A room participant's construction (`Site`). */
export interface SiteOptions {
  transport: Transport;
  /** The site's rows, used for the next study that starts (`site.rows = …` changes them). */
  rows: number[][];
  /** A fixed seed for reproducible runs (tests); not private against anyone who knows it. */
  seed?: number;
}

/** What one `Site.handleEvent` call did. */
export interface SiteStep {
  /** The ledger recorded releases: save it (`ledger.toJson()`); the dashboards were told. */
  ledgerChanged: boolean;
  /** Why this input was refused, if it was: by the site's role (out of order, a stranger's) or by the relay. */
  refused: string | null;
}

/** A site's part in its current (or last) study. */
export interface SiteStatus {
  /** e.g. "awaiting_start", "summing", "released", "done", "declined", "aborted". */
  phase: string;
  /** A sentence for the page. */
  description: string;
  /** The study's id (32 hex digits), once one started. */
  study: string | null;
  /** f(x_s), once the rows passed the study's checks: private, never sent. */
  localMean: number[] | null;
  /** τ and z of the study, once joined. */
  noise: { localSd: number; noiseMultiplier: number } | null;
  /** The attempts, with this site's own noise (local only; only `release` was sent). */
  attempts: {
    attempt: number;
    survivors: ParticipantId[];
    quantisedNoise: number[];
    zeroSumNoise: number[] | null;
    release: number[] | null;
  }[];
  /** How the site's part ended; null while it runs. */
  end:
    | { kind: "done"; estimate: number[]; conventional: number[] | null; survivors: ParticipantId[] }
    | { kind: "declined"; reason: string }
    | { kind: "not_invited" }
    | { kind: "aborted"; reason: string }
    | null;
}

/**
 * The end of a study as the aggregator saw it: the same JSON `cape mean --json` writes (estimates,
 * every message, dropouts, theory). Ring elements above 2^53 lose precision as JS numbers.
 */
export interface StudyOutcome {
  study: string;
  params: Record<string, unknown>;
  noise: { sensitivity: number; local_sd: number; noise_multiplier: number };
  calibration_note: string | null;
  accepted: ParticipantId[];
  declined: { site: ParticipantId; attempt: number; reason: unknown }[];
  dropouts: { site: ParticipantId; attempt: number; phase: unknown; reason: string }[];
  attempts: Record<string, unknown>[];
  result:
    | {
        status: "estimated";
        attempt: number;
        survivors: ParticipantId[];
        cape: number[];
        conventional: number[] | null;
      }
    | { status: "aborted"; reason: { kind: string } & Record<string, unknown> };
  theory: { sites: number; var_cape: number; var_conventional: number; gain: number } | null;
  finished_at_ms: number;
}
"#;
