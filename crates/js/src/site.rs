/*!
A site of a room, over a transport the caller provides: what the app's site tab does for the
private mean (`web/src/study_driver/site.rs`), without a page around it.

Routing, for each `RoomEvent` the caller hands to [`Site::handle_event`]:
- `connected` (the relay's welcome) names the site; its ledger report goes to the dashboards
  present, and to every dashboard that joins or comes back later (`ledger/report`, the core's
  [`LedgerReport`]).
- `mean/start` from a dashboard opens a fresh core [`MeanSite`](mean::MeanSite) with the site's
  rows and the shared ledger; that message and every later `mean/…` and `secagg/…` one, and every
  departure, go to it through the core's [`Driver`]. What it returns goes to the transport.
- When a call recorded releases in the ledger, the dashboards get the new report and the step
  says so, for the page to save the ledger.

Anything else (other studies' kinds, refusals) is left alone: a study this site does not run
never hears from it, and the dashboard's deadlines go on without it.
*/

use std::collections::BTreeSet;

use capelab_core::driver::{Driver, DriverEvent};
use capelab_core::study::ledger_report::{self, LedgerReport};
use capelab_core::study::mean::{self, MeanBody, MeanMessage};
use capelab_core::transport::{Transport, TransportError, TransportEvent};
use capelab_core::wire::{ParticipantId, Peer, Role, To};
use js_sys::{Function, Reflect, Uint8Array};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use crate::convert::{self, RoomEvent, millis};
use crate::ledger::{Ledger, Shared};
use crate::roles::{self, rng};

#[wasm_bindgen]
extern "C" {
    /// The caller's `Transport` (see `TYPES`).
    #[wasm_bindgen(typescript_type = "Transport")]
    #[derive(Clone)]
    pub type JsTransport;

    #[wasm_bindgen(method, catch)]
    fn send(
        this: &JsTransport,
        to: JsValue,
        kind: &str,
        payload: Uint8Array,
    ) -> Result<(), JsValue>;
}

/// The caller's transport as the core's [`Transport`]. Events come in through
/// [`Site::handle_event`], so `poll_event` has none.
#[derive(Clone)]
struct CallerTransport(JsTransport);

impl Transport for CallerTransport {
    fn send(&mut self, to: To, kind: &str, payload: &[u8]) -> Result<(), TransportError> {
        // A copy the caller may keep (a view of wasm memory would not survive the next call).
        let payload = Uint8Array::from(payload);
        self.0.send(convert::to_js(to), kind, payload).map_err(|_| TransportError::NotConnected)
    }

    fn poll_event(&mut self) -> Option<TransportEvent> {
        None
    }
}

/// `SiteOptions` of `TYPES`; its `transport` is read on its own (a JS object, not data).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Options {
    #[serde(default)]
    #[allow(dead_code)]
    transport: Option<serde::de::IgnoredAny>,
    rows: Vec<Vec<f64>>,
    #[serde(default)]
    seed: Option<f64>,
}

/// `SiteStep` of `TYPES`.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct Step {
    ledger_changed: bool,
    refused: Option<String>,
}

type Run = Driver<CallerTransport, mean::MeanSite<Shared>>;

/// A site of a room: hand it every `RoomEvent` as it happens; it takes part in the private-mean
/// studies the room's dashboard runs, with its rows and within its ledger's budget.
///
/// ```js
/// const site = new Site({ transport, rows: [[0.2], [0.7], [0.4]] }, ledger);
/// ws.onmessage = (m) => {
///   const step = site.handleEvent(readFrame(m.data), Date.now());
///   if (step.ledgerChanged) localStorage.setItem(key, ledger.toJson());
/// };
/// ```
#[wasm_bindgen]
pub struct Site {
    transport: CallerTransport,
    ledger: Shared,
    rows: Vec<Vec<f64>>,
    seed: Option<f64>,
    me: Option<Peer>,
    dashboards: BTreeSet<ParticipantId>,
    run: Option<Run>,
    /// Ledger entries of the current study already reported.
    reported: usize,
}

#[wasm_bindgen]
impl Site {
    /// A site that sends through `options.transport` and records into `ledger`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "SiteOptions")] options: JsValue,
        ledger: &Ledger,
    ) -> Result<Site, JsError> {
        let transport = Reflect::get(&options, &JsValue::from_str("transport"))
            .ok()
            .filter(|t| {
                Reflect::get(t, &JsValue::from_str("send"))
                    .is_ok_and(|s| s.is_instance_of::<Function>())
            })
            .ok_or_else(|| {
                JsError::new(
                    "SiteOptions.transport must be an object with a send(to, kind, payload) method",
                )
            })?;
        let o: Options = convert::read(options, "SiteOptions")?;
        if let Some(s) = o.seed {
            convert::seed(s).map_err(|e| JsError::new(&e))?;
        }
        Ok(Site {
            transport: CallerTransport(transport.unchecked_into()),
            ledger: ledger.shared(),
            rows: o.rows,
            seed: o.seed,
            me: None,
            dashboards: BTreeSet::new(),
            run: None,
            reported: 0,
        })
    }

    /// One event of the room, at `nowMs` (wall-clock ms: it stamps ledger entries).
    #[wasm_bindgen(js_name = handleEvent, unchecked_return_type = "SiteStep")]
    pub fn handle_event(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "RoomEvent")] event: JsValue,
        #[wasm_bindgen(js_name = "nowMs")] now_ms: f64,
    ) -> Result<JsValue, JsError> {
        let event: RoomEvent = convert::read(event, "RoomEvent")?;
        let now = millis(now_ms).map_err(|e| JsError::new(&e))?;
        let step = match event.into_transport_event() {
            Ok(event) => self.route(now, event),
            Err(refused) => Step { refused: Some(refused), ..Step::default() },
        };
        convert::object(&step)
    }

    /// The rows the next study uses (N_s rows of d values in [0, 1], checked when it starts).
    #[wasm_bindgen(setter)]
    pub fn set_rows(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "number[][]")] rows: JsValue,
    ) -> Result<(), JsError> {
        self.rows = convert::read(rows, "rows")?;
        Ok(())
    }

    /// This site's id in the room, once the relay welcomed it.
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> Option<u32> {
        self.me.as_ref().map(|p| p.id)
    }

    /// The site's part in its current (or last) study.
    #[wasm_bindgen(unchecked_return_type = "SiteStatus")]
    pub fn status(&self) -> Result<JsValue, JsError> {
        match &self.run {
            Some(run) => convert::object(&roles::status(&run.machine)),
            None => convert::object(&Idle::default()),
        }
    }
}

/// `SiteStatus` before any study.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Idle {
    phase: &'static str,
    description: &'static str,
    study: Option<String>,
    local_mean: Option<Vec<f64>>,
    noise: Option<()>,
    attempts: Vec<()>,
    end: Option<()>,
}

impl Default for Idle {
    fn default() -> Self {
        Idle {
            phase: "awaiting_start",
            description: "Waiting for the dashboard's study",
            study: None,
            local_mean: None,
            noise: None,
            attempts: Vec::new(),
            end: None,
        }
    }
}

impl Site {
    fn route(&mut self, now: u64, event: TransportEvent) -> Step {
        match &event {
            TransportEvent::Connected { you, peers, .. } => {
                self.me = Some(you.clone());
                self.dashboards =
                    peers.iter().filter(|p| p.role == Role::Dashboard).map(|p| p.id).collect();
                for id in self.dashboards.clone() {
                    self.report_to(id);
                }
                Step::default()
            }
            TransportEvent::PeerJoined(peer) | TransportEvent::PeerRejoined(peer)
                if peer.role == Role::Dashboard =>
            {
                self.dashboards.insert(peer.id);
                self.report_to(peer.id);
                Step::default()
            }
            TransportEvent::PeerLeft(peer) => {
                self.dashboards.remove(&peer.id);
                self.feed(now, event)
            }
            TransportEvent::Message { from, kind, payload } if kind == mean::kind::START => {
                match self.open(*from, payload) {
                    Ok(()) => self.feed(now, event),
                    Err(refused) => Step { refused: Some(refused), ..Step::default() },
                }
            }
            TransportEvent::Message { kind, .. }
                if kind.starts_with("mean/") || kind.starts_with("secagg/") =>
            {
                self.feed(now, event)
            }
            _ => Step::default(),
        }
    }

    /// A dashboard opened a study: a fresh site role for it (the same study again: the one
    /// running, which refuses the duplicate).
    fn open(&mut self, from: ParticipantId, payload: &[u8]) -> Result<(), String> {
        let me = self.me.as_ref().ok_or("mean/start before the relay's welcome")?.id;
        if !self.dashboards.contains(&from) {
            return Err(format!("mean/start from participant {from}, who is not a dashboard"));
        }
        let study = match MeanMessage::decode(payload) {
            Ok(MeanMessage { study, body: MeanBody::Start(_) }) => study,
            _ => return Err(format!("an unreadable mean/start from participant {from}")),
        };
        if self.run.as_ref().is_some_and(|r| r.machine.study() == Some(study)) {
            return Ok(());
        }
        let rng = rng(self.seed, &format!("js/site/{me}/{}", study.to_hex()))?;
        let role = mean::MeanSite::new(me, from, self.rows.clone(), self.ledger.clone(), rng);
        self.run = Some(Driver::new(self.transport.clone(), role));
        self.reported = 0;
        Ok(())
    }

    /// Hands an event to the running study's role; reports the ledger if it grew.
    fn feed(&mut self, now: u64, event: TransportEvent) -> Step {
        let Some(run) = self.run.as_mut() else { return Step::default() };
        let logged = run.log().len();
        run.feed(now, event);
        let refused = run.log()[logged..].iter().find_map(|e| match e {
            DriverEvent::Refused { error, .. } => Some(error.to_string()),
            _ => None,
        });
        let spent = run.machine.spent().len();
        let ledger_changed = spent > self.reported;
        self.reported = spent;
        if ledger_changed {
            for id in self.dashboards.clone() {
                self.report_to(id);
            }
        }
        Step { ledger_changed, refused }
    }

    fn report_to(&mut self, dashboard: ParticipantId) {
        let payload = LedgerReport::of(&self.ledger.borrow()).encode();
        // A dashboard that has just left misses this one and gets the next when it comes back.
        let _ = self.transport.send(To::One(dashboard), ledger_report::KIND, &payload);
    }
}
