/*!
The dashboard's side of the private-mean study: it runs the core's [`MeanAggregator`] over the
room's websocket.

Routing: every transport event reaches [`DashboardStudy`] through the session's hook. A
`ledger/report` from a site updates that site's budget row; a message or a departure is fed to the
running aggregator's [`Driver`] (with the [`PausableClock`]'s time), and what the role returns goes
out through [`StudyTransport`] and, in step-by-step mode, the [`StepGate`]. A timer is kept at
the role's `poll_timeout()` (re-read after every call; none while the gate holds messages, since
the clock stands still then). When the role finishes, its [`StudyOutcome`] becomes a
[`FinishedRound`].

The views read only [`DashboardView`]'s signals; they call [`DashboardStudy::start_round`],
[`DashboardStudy::next_round`], [`DashboardStudy::run_to_end`] and [`DashboardStudy::stop`].
*/

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use capelab_core::driver::{Driver, DriverEvent, Machine};
use capelab_core::rng::os_rng;
use capelab_core::study::StudyId;
use capelab_core::study::mean::{
    AggregatorPhase, AggregatorSettings, Declined, MeanAggregator, NoisePlan, StudyDropout,
    StudyOutcome, StudyParams,
};
use capelab_core::transport::{Transport, TransportEvent};
use capelab_core::wire::{ParticipantId, Role, To};
use gloo::timers::callback::Timeout;
use leptos::prelude::*;

use crate::frame::form::FormError;
use crate::frame::wall_ms;
use crate::frame::wire::{StudyTransport, WireLine, WireLog, send_noted};
use crate::ledger_report::{self, LedgerReport};
use crate::roster::display_name;
use crate::session::RoomState;
use crate::studies::efpsn::form::EfpsnForm;
use crate::studies::efpsn::run::{self as efpsn_run, EfpsnLive, EfpsnRun};
use crate::studies::ica::form::IcaForm;
use crate::studies::ica::run::IcaLive;
use crate::studies::mean::form::MeanForm;
use crate::studies::mean::step_gate::{PausableClock, Step, StepGate};
use crate::studies::nn::form::NnForm;
use crate::studies::nn::run::{NnFinished, NnLive, NnRun};
use crate::studies::regression::public_bounds::{self, BoundsAnnouncement};
use crate::studies::vertical_vi::data::{CPS1988_URL, VviSource};
use crate::studies::vertical_vi::form::VviForm;
use crate::studies::vertical_vi::run::{VviLive, VviRun};
use crate::transport::WsTransport;
use crate::worker::host::WorkerHost;
use crate::worker::protocol::{FromWorker, ToWorker};

/// Why a second study cannot start.
const STUDY_RUNNING: &str = "A study is running: wait for it to end or stop it.";

/// A study that ended: what the aggregator saw, and the names of the sites at the time.
#[derive(Clone, Debug, PartialEq)]
pub struct FinishedRound {
    /// 1 for the first study this dashboard ran.
    pub number: usize,
    pub outcome: StudyOutcome,
    pub names: BTreeMap<ParticipantId, String>,
    pub step_mode: bool,
}

impl FinishedRound {
    pub fn name(&self, site: ParticipantId) -> String {
        self.names.get(&site).cloned().unwrap_or_else(|| format!("Site {site}"))
    }
}

/// The running study, for the live view.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveStudy {
    pub number: usize,
    pub study: StudyId,
    pub params: StudyParams,
    pub noise: NoisePlan,
    pub phase: AggregatorPhase,
    pub waiting_for: Vec<ParticipantId>,
    pub accepted: Vec<ParticipantId>,
    pub declined: Vec<Declined>,
    pub dropouts: Vec<StudyDropout>,
    pub step_mode: bool,
    /// The step whose messages wait for "Next round".
    pub held: Option<Step>,
    /// Steps already let through, in order (a re-run starts again at R0).
    pub released: Vec<Step>,
    pub names: BTreeMap<ParticipantId, String>,
    /// Inputs the role refused (stray or late messages), newest last: for the curious.
    pub refusals: Vec<String>,
}

/// Everything the dashboard's study views render.
#[derive(Clone, Copy)]
pub struct DashboardView {
    pub live: RwSignal<Option<LiveStudy>>,
    /// Every finished study, oldest first.
    pub rounds: RwSignal<Vec<FinishedRound>>,
    /// Each site's latest ledger report, by participant id.
    pub reports: RwSignal<BTreeMap<ParticipantId, LedgerReport>>,
    pub wire: RwSignal<Vec<WireLine>>,
    pub wire_total: RwSignal<usize>,
    /// Why the last start did not happen: a field of the form (shown beside it) or the form as a
    /// whole.
    pub start_error: RwSignal<Option<FormError>>,
    /// The running NN study (CAPE gradient descent).
    pub nn_live: RwSignal<Option<NnLive>>,
    /// Every finished NN study, oldest first.
    pub nn_rounds: RwSignal<Vec<NnFinished>>,
    /// The running Joint ICA study, or the last one (its `finished` says which).
    pub ica: RwSignal<Option<IcaLive>>,
    /// The running EFPSN study, or the last one (its `finished` says which).
    pub efpsn: RwSignal<Option<EfpsnLive>>,
    /// The EFPSN study is fetching its data set and computing x* before it starts.
    pub efpsn_preparing: RwSignal<bool>,
    /// The running vertical synthetic-data study, or the last one (its `finished` says which).
    pub vvi: RwSignal<Option<VviLive>>,
    /// The vertical study is fetching CPS1988 (for the test NLL) before it starts.
    pub vvi_preparing: RwSignal<bool>,
    /// A `cape vertical-vi --json` run loaded for the NLL chart (the non-partitioned baseline).
    pub vvi_baseline: RwSignal<Option<crate::studies::vertical_vi::baseline::CliRun>>,
}

impl DashboardView {
    /// Whether any study is running (the picker is locked then).
    pub fn busy(&self) -> bool {
        self.live.with(Option::is_some)
            || self.nn_live.with(Option::is_some)
            || self.ica.with(|i| i.as_ref().is_some_and(|i| !i.finished))
            || self.efpsn.with(|e| e.as_ref().is_some_and(|e| !e.finished))
            || self.efpsn_preparing.get()
            || self.vvi.with(|v| v.as_ref().is_some_and(|v| !v.finished))
            || self.vvi_preparing.get()
    }
}

/// The dashboard's study driver: a `Copy` handle, valid while the dashboard view lives (after
/// that every call is a no-op).
#[derive(Clone, Copy)]
pub struct DashboardStudy {
    inner: StoredValue<Rc<RefCell<Inner>>, LocalStorage>,
    pub view: DashboardView,
}

struct Inner {
    room: RoomState,
    log: Rc<RefCell<WireLog>>,
    run: Option<Run>,
    rounds: Vec<FinishedRound>,
    /// At most one of `run` and `nn` is running.
    nn: Option<NnRun>,
    nn_rounds: Vec<NnFinished>,
    /// The Joint ICA study's aggregators run in this worker (capePCA's eigendecomposition and
    /// the maps are heavy); the page forwards messages and keeps its timer.
    ica_worker: Option<WorkerHost>,
    ica_running: bool,
    ica_deadline: Option<u64>,
    ica_count: usize,
    efpsn: Option<EfpsnRun>,
    efpsn_count: usize,
    vvi: Option<VviRun>,
    vvi_count: usize,
    reports: BTreeMap<ParticipantId, LedgerReport>,
    timer: Option<Timeout>,
}

struct Run {
    number: usize,
    driver: Driver<StudyTransport, MeanAggregator>,
    gate: Rc<RefCell<StepGate>>,
    clock: PausableClock,
    released: Vec<Step>,
    names: BTreeMap<ParticipantId, String>,
    step_mode: bool,
}

impl Run {
    fn now(&self) -> u64 {
        self.clock.now(wall_ms())
    }

    fn refusals(&self) -> Vec<String> {
        let refusals: Vec<String> = self
            .driver
            .log()
            .iter()
            .filter_map(|e| match e {
                DriverEvent::Refused { error, .. } => Some(error.to_string()),
                _ => None,
            })
            .collect();
        let skip = refusals.len().saturating_sub(5);
        refusals[skip..].to_vec()
    }

    fn live(&self) -> LiveStudy {
        let agg = &self.driver.machine;
        LiveStudy {
            number: self.number,
            study: agg.study(),
            params: agg.params().clone(),
            noise: *agg.noise_plan(),
            phase: agg.phase(),
            waiting_for: agg.waiting_for(),
            accepted: agg.accepted(),
            declined: agg.declined().to_vec(),
            dropouts: agg.dropouts().to_vec(),
            step_mode: self.gate.borrow().enabled(),
            held: self.gate.borrow().held_step(),
            released: self.released.clone(),
            names: self.names.clone(),
            refusals: self.refusals(),
        }
    }
}

impl DashboardStudy {
    /// Attaches to `room` (inside the dashboard component: it lives as long as the view).
    pub fn start(room: RoomState) -> Self {
        let view = DashboardView {
            live: RwSignal::new(None),
            rounds: RwSignal::new(Vec::new()),
            reports: RwSignal::new(BTreeMap::new()),
            wire: RwSignal::new(Vec::new()),
            wire_total: RwSignal::new(0),
            start_error: RwSignal::new(None),
            nn_live: RwSignal::new(None),
            nn_rounds: RwSignal::new(Vec::new()),
            ica: RwSignal::new(None),
            efpsn: RwSignal::new(None),
            efpsn_preparing: RwSignal::new(false),
            vvi_preparing: RwSignal::new(false),
            vvi: RwSignal::new(None),
            vvi_baseline: RwSignal::new(None),
        };
        let inner = Rc::new(RefCell::new(Inner {
            room,
            log: Rc::new(RefCell::new(WireLog::default())),
            run: None,
            rounds: Vec::new(),
            nn: None,
            nn_rounds: Vec::new(),
            ica_worker: None,
            ica_running: false,
            ica_deadline: None,
            ica_count: 0,
            efpsn: None,
            efpsn_count: 0,
            vvi: None,
            vvi_count: 0,
            reports: BTreeMap::new(),
            timer: None,
        }));
        let this = DashboardStudy { inner: StoredValue::new_local(inner), view };
        room.attach(move |event| this.on_event(event));
        this
    }

    fn inner(&self) -> Option<Rc<RefCell<Inner>>> {
        self.inner.try_get_value()
    }

    /// Starts a private-mean study among the present sites, as the form says.
    pub fn start_round(
        &self,
        read: impl FnOnce(Vec<ParticipantId>) -> Result<MeanForm, FormError>,
    ) {
        self.start_study(read, |inner, ws, form, names| {
            let clock = PausableClock::default();
            let now = clock.now(wall_ms());
            let (aggregator, start) =
                MeanAggregator::start(form.params, AggregatorSettings::default(), os_rng(), now)
                    .map_err(|e| e.to_string())?;
            if let Some(bounds) = form.bounds {
                // Public, so sent to everyone, ahead of the start the sites map their tables with.
                let announced = BoundsAnnouncement { study: aggregator.study(), bounds };
                let mut ws = ws.clone();
                ws.send(To::All, public_bounds::KIND, &announced.encode())
                    .map_err(|e| format!("could not announce the public bounds: {e}"))?;
            }
            let gate = Rc::new(RefCell::new(StepGate::new(form.step_mode)));
            let transport = StudyTransport {
                ws,
                gate: Some(gate.clone()),
                log: inner.log.clone(),
                now: wall_ms,
            };
            let mut driver = Driver::new(transport, aggregator);
            driver.send(now, start);
            let number = inner.rounds.len() + 1;
            inner.run = Some(Run {
                number,
                driver,
                gate,
                clock,
                released: Vec::new(),
                names,
                step_mode: form.step_mode,
            });
            Ok(())
        });
    }

    /// Starts an NN study (CAPE gradient descent) among the present sites, as the form says.
    pub fn start_nn(&self, read: impl FnOnce(Vec<ParticipantId>) -> Result<NnForm, FormError>) {
        self.start_study(read, |inner, ws, form, names| {
            let transport = StudyTransport { ws, gate: None, log: inner.log.clone(), now: wall_ms };
            let number = inner.nn_rounds.len() + 1;
            inner.nn = Some(NnRun::start(number, form, transport, names, wall_ms())?);
            Ok(())
        });
    }

    /// Starts a Joint ICA study (capePCA, then capeDJICA) among the present sites; its
    /// aggregators run in this tab's worker.
    pub fn start_ica(&self, read: impl FnOnce(Vec<ParticipantId>) -> Result<IcaForm, FormError>) {
        let this = *self;
        self.start_study(read, |inner, _ws, form, names| {
            if inner.ica_worker.is_none() {
                let host = WorkerHost::spawn(move |message| this.on_ica_worker(message))?;
                inner.ica_worker = Some(host);
            }
            inner.ica_count += 1;
            let number = inner.ica_count;
            inner.ica_running = true;
            inner.ica_deadline = None;
            if let Some(worker) = inner.ica_worker.as_ref() {
                worker.post(&ToWorker::IcaStart { number, form: Box::new(form), names });
            }
            Ok(())
        });
    }

    /// True (and says why on the page) when a study is already running.
    fn refuse_while_busy(&self) -> bool {
        let busy = self.view.busy();
        if busy {
            self.view.start_error.set(Some(FormError::whole(STUDY_RUNNING)));
        }
        busy
    }

    /// Starts an EFPSN study among the present sites: reads the form for them (a refusal shows
    /// at once, nothing sent), then loads the data set (the app's copy of digits, once per page)
    /// and computes x*, then announces the task. The agents run it among themselves.
    pub fn start_efpsn(
        &self,
        read: impl FnOnce(Vec<ParticipantId>) -> Result<EfpsnForm, FormError>,
    ) {
        let this = *self;
        self.start_study(read, |inner, _ws, form, names| {
            let me = inner.room.me.get_untracked().map(|p| p.id).ok_or("not in the room yet")?;
            // The signals change once this borrow is released: the data set loads meanwhile.
            leptos::task::spawn_local(async move {
                this.view.efpsn.set(None);
                this.view.efpsn_preparing.set(true);
                let data = efpsn_run::digits().await;
                this.view.efpsn_preparing.set(false);
                let opened = data.and_then(|data| {
                    let (data, classes) = &*data;
                    let task = form.task(*classes, data.features())?;
                    let inner = this.inner().ok_or("the dashboard is closing")?;
                    let mut inner = inner.borrow_mut();
                    let ws =
                        inner.room.transport().ok_or("This page is not connected to a relay.")?;
                    let transport =
                        StudyTransport { ws, gate: None, log: inner.log.clone(), now: wall_ms };
                    inner.efpsn_count += 1;
                    let number = inner.efpsn_count;
                    let run = EfpsnRun::start(number, me, task, data, transport, names, wall_ms())?;
                    inner.efpsn = Some(run);
                    Ok(())
                });
                if let Err(e) = opened {
                    this.view.start_error.set(Some(FormError::whole(e)));
                }
                this.settle();
            });
            Ok(())
        });
    }

    /// Starts a vertical synthetic-data study (DP-VI + MPC): reads the form for the sites present
    /// (nothing is fetched, sent or charged for a form that does not read), then announces the
    /// table and the task to the parties and the dealer it picked. With CPS1988 the dashboard
    /// first fetches the public file for the test NLL and the real marginals (the parties fetch
    /// it themselves, each keeping its own columns), and checks the roles are still present.
    pub fn start_vvi(
        &self,
        read: impl FnOnce(
            &[ParticipantId],
            &BTreeMap<ParticipantId, String>,
        ) -> Result<VviForm, FormError>
        + 'static,
    ) {
        if self.refuse_while_busy() {
            return;
        }
        let Some(inner) = self.inner() else { return };
        let (sites, names) = present_sites(&inner.borrow().room);
        let form = match read(&sites, &names) {
            Ok(form) => form,
            Err(e) => {
                self.view.start_error.set(Some(e));
                return;
            }
        };
        let source = form.fields.source;
        let open = move |this: Self, joined: Option<String>| {
            let check = move |sites: Vec<ParticipantId>| {
                let (_, names) = this.inner().map(|i| present_sites(&i.borrow().room)).unzip();
                form.still_present(&sites, &names.unwrap_or_default()).map(|()| form)
            };
            this.start_study(check, |inner, ws, form, names| {
                let me =
                    inner.room.me.get_untracked().map(|p| p.id).ok_or("not in the room yet")?;
                let transport =
                    StudyTransport { ws, gate: None, log: inner.log.clone(), now: wall_ms };
                let number = inner.vvi_count + 1;
                let joined = joined.as_deref();
                let run = VviRun::start(number, me, &form, transport, names, wall_ms(), joined)?;
                inner.vvi_count = number;
                inner.vvi = Some(run);
                Ok(())
            });
        };
        // Only CPS1988 is fetched here; a generated table is redrawn, own columns are not public.
        if source != VviSource::Cps1988 {
            open(*self, None);
            return;
        }
        let this = *self;
        self.view.start_error.set(None);
        // The last run's view goes now: while the file loads, nothing on the page may look
        // like the new run's result.
        self.view.vvi.set(None);
        self.view.vvi_preparing.set(true);
        leptos::task::spawn_local(async move {
            let csv = crate::fetch::text(CPS1988_URL).await;
            this.view.vvi_preparing.set(false);
            match csv {
                Ok(csv) => open(this, Some(csv)),
                Err(e) => this.view.start_error.set(Some(FormError::whole(e))),
            }
        });
    }

    /// Every study's start: unless a study is running or the page is offline, reads the form
    /// for the sites present and hands it to `open` with the socket and the sites' names; shows
    /// why not otherwise.
    fn start_study<F>(
        &self,
        read: impl FnOnce(Vec<ParticipantId>) -> Result<F, FormError>,
        open: impl FnOnce(
            &mut Inner,
            WsTransport,
            F,
            BTreeMap<ParticipantId, String>,
        ) -> Result<(), String>,
    ) {
        let result = (|| {
            let inner = self.inner().ok_or(FormError::whole("the dashboard is closing"))?;
            let (ws, sites, names) = {
                let inner = inner.borrow();
                if inner.busy() {
                    return Err(FormError::whole(STUDY_RUNNING));
                }
                let ws = inner
                    .room
                    .transport()
                    .ok_or(FormError::whole("This page is not connected to a relay."))?;
                let (sites, names) = present_sites(&inner.room);
                (ws, sites, names)
            };
            // The form is read with nothing borrowed: whatever it calls cannot meet a held borrow.
            let form = read(sites)?;
            let mut inner = inner.borrow_mut();
            open(&mut inner, ws, form, names).map_err(FormError::whole)
        })();
        self.view.start_error.set(result.err());
        self.settle();
    }

    /// What the Joint ICA worker answered: envelopes to send, the live study, the next deadline.
    fn on_ica_worker(&self, message: FromWorker) {
        let Some(inner) = self.inner() else { return };
        match message {
            FromWorker::Send { to, kind, payload } => {
                let inner = inner.borrow();
                let Some(ws) = inner.room.transport() else { return };
                let mut transport =
                    StudyTransport { ws, gate: None, log: inner.log.clone(), now: wall_ms };
                // A recipient that left meanwhile: the transport notes it; the role knows.
                let _ = transport.send(to, &kind, &payload);
            }
            FromWorker::IcaLive(live) => {
                if live.finished {
                    inner.borrow_mut().ica_running = false;
                }
                self.view.ica.set(Some(*live));
            }
            FromWorker::Deadline(deadline) => inner.borrow_mut().ica_deadline = deadline,
            FromWorker::IcaStartFailed(reason) => {
                inner.borrow_mut().ica_running = false;
                self.view.start_error.set(Some(FormError::whole(reason)));
            }
            FromWorker::Refused(reason) => {
                web_sys::console::warn_1(&format!("capelab worker: {reason}").into());
            }
            FromWorker::Crashed(what) => crate::crash::report(&format!("in its worker: {what}")),
            FromWorker::Ready
            | FromWorker::Ledger { .. }
            | FromWorker::View(_)
            | FromWorker::EfpsnView(_)
            | FromWorker::VviView(_)
            | FromWorker::Fetch { .. } => {}
        }
        self.settle();
    }

    /// Lets the held round's messages go (step-by-step mode).
    pub fn next_round(&self) {
        self.release(|gate| gate.next());
    }

    /// Lets everything held go and turns step-by-step mode off for the rest of the study.
    pub fn run_to_end(&self) {
        self.release(|gate| gate.release_all());
    }

    fn release(
        &self,
        take: impl FnOnce(&mut StepGate) -> Vec<crate::studies::mean::step_gate::HeldMessage>,
    ) {
        {
            let Some(inner) = self.inner() else { return };
            let mut inner = inner.borrow_mut();
            let log = inner.log.clone();
            let Some(run) = inner.run.as_mut() else { return };
            let step = run.gate.borrow().held_step();
            let messages = take(&mut run.gate.borrow_mut());
            if let Some(step) = step
                && !messages.is_empty()
            {
                run.released.push(step);
            }
            let at = wall_ms();
            for message in &messages {
                // A recipient that left meanwhile is noted as failed; the role already knows.
                let _ = send_noted(&mut run.driver.transport.ws, &log, at, message);
            }
        }
        self.settle();
    }

    /// Ends the running study now (`mean/abort`, or `iter/end`, to every site).
    pub fn stop(&self) {
        {
            let Some(inner) = self.inner() else { return };
            let mut inner = inner.borrow_mut();
            if let Some(nn) = inner.nn.as_mut() {
                let now = wall_ms();
                let out = nn.driver.machine.stop(now, "the teacher stopped it");
                nn.driver.send(now, out);
            }
            if let (true, Some(worker)) = (inner.ica_running, inner.ica_worker.as_ref()) {
                worker.post(&ToWorker::IcaStop { reason: "the teacher stopped it".into() });
            }
            if let Some(run) = inner.efpsn.as_mut().filter(|r| !r.is_finished()) {
                let out = run.driver.machine.stop("the teacher stopped it");
                run.driver.send(wall_ms(), out);
            }
            if let Some(run) = inner.vvi.as_mut().filter(|r| !r.is_finished()) {
                let out = run.driver.machine.abort("the teacher stopped it");
                run.driver.send(wall_ms(), out);
            }
            if let Some(run) = inner.run.as_mut() {
                let now = run.now();
                let out = run.driver.machine.stop(now, "the teacher stopped it");
                run.driver.send(now, out);
            }
        }
        self.settle();
    }

    fn on_event(&self, event: &TransportEvent) {
        let report_from = match event {
            TransportEvent::Message { from, kind, payload } if kind == ledger_report::KIND => {
                Some((*from, LedgerReport::decode(payload)))
            }
            _ => None,
        };
        if let Some((from, decoded)) = report_from {
            match decoded {
                Ok(report) => {
                    let Some(inner) = self.inner() else { return };
                    let reports = {
                        let mut inner = inner.borrow_mut();
                        inner.reports.insert(from, report);
                        inner.reports.clone()
                    };
                    self.view.reports.set(reports);
                }
                Err(e) => web_sys::console::warn_1(
                    &format!("capelab: unreadable ledger report from {from}: {e}").into(),
                ),
            }
            return;
        }
        let feed = matches!(event, TransportEvent::Message { .. } | TransportEvent::PeerLeft(_));
        if !feed {
            return;
        }
        {
            let Some(inner) = self.inner() else { return };
            let mut inner = inner.borrow_mut();
            let log = inner.log.clone();
            let vvi = inner.vvi.as_mut().filter(|r| !r.is_finished());
            let for_vvi = match event {
                TransportEvent::Message { kind, .. } => kind.starts_with("vvi/"),
                _ => vvi.is_some(),
            };
            if for_vvi {
                if let Some(run) = vvi {
                    log.borrow_mut().note_received(wall_ms(), event);
                    run.driver.feed(wall_ms(), event.clone());
                }
                drop(inner);
                self.settle();
                return;
            }
            let efpsn = inner.efpsn.as_mut().filter(|r| !r.is_finished());
            let for_efpsn = match event {
                TransportEvent::Message { kind, .. } => kind.starts_with("efpsn/"),
                _ => efpsn.is_some(),
            };
            if for_efpsn {
                let Some(run) = efpsn else { return };
                log.borrow_mut().note_received(wall_ms(), event);
                run.driver.feed(wall_ms(), event.clone());
            } else if let Some(nn) = inner.nn.as_mut() {
                log.borrow_mut().note_received(wall_ms(), event);
                nn.driver.feed(wall_ms(), event.clone());
            } else if let (true, Some(worker)) = (inner.ica_running, inner.ica_worker.as_ref()) {
                log.borrow_mut().note_received(wall_ms(), event);
                match event {
                    TransportEvent::Message { from, payload, .. } => {
                        worker.post(&ToWorker::Message { from: *from, payload: payload.clone() });
                    }
                    TransportEvent::PeerLeft(peer) => {
                        worker.post(&ToWorker::Departure { who: peer.id });
                    }
                    _ => {}
                }
            } else {
                let Some(run) = inner.run.as_mut() else { return };
                log.borrow_mut().note_received(wall_ms(), event);
                let now = run.now();
                run.driver.feed(now, event.clone());
            }
        }
        self.settle();
    }

    fn on_timer(&self) {
        {
            let Some(inner) = self.inner() else { return };
            let mut inner = inner.borrow_mut();
            inner.timer = None;
            if let Some(nn) = inner.nn.as_mut() {
                nn.driver.fire_timeout(wall_ms());
            }
            if let Some(run) = inner.efpsn.as_mut() {
                run.driver.fire_timeout(wall_ms());
            }
            let due = inner.ica_running && inner.ica_deadline.is_some_and(|d| d <= wall_ms());
            if due {
                inner.ica_deadline = None;
                if let Some(worker) = inner.ica_worker.as_ref() {
                    worker.post(&ToWorker::IcaTimer);
                }
            }
            if let Some(run) = inner.run.as_mut() {
                let now = run.now();
                run.driver.fire_timeout(now);
            }
        }
        self.settle();
    }

    /// After any input: finish, pause or resume the clock, re-arm the timer, publish.
    fn settle(&self) {
        let Some(inner) = self.inner() else { return };
        let (live, rounds, nn_live, nn_rounds, efpsn, vvi, lines, total) = {
            let mut guard = inner.borrow_mut();
            let inner = &mut *guard;
            let finished = inner.run.as_ref().and_then(|run| {
                run.driver.machine.outcome().map(|outcome| FinishedRound {
                    number: run.number,
                    outcome: outcome.clone(),
                    names: run.names.clone(),
                    step_mode: run.step_mode,
                })
            });
            let rounds = finished.map(|round| {
                inner.run = None;
                inner.rounds.push(round);
                inner.rounds.clone()
            });
            let nn_finished = inner.nn.as_ref().and_then(NnRun::finished);
            let nn_rounds = nn_finished.map(|round| {
                inner.nn = None;
                inner.nn_rounds.push(round);
                inner.nn_rounds.clone()
            });
            let this = *self;
            let nn_wait = inner.nn.as_ref().and_then(|nn| {
                let deadline = nn.driver.machine.poll_timeout()?;
                Some(u32::try_from(deadline.saturating_sub(wall_ms())).unwrap_or(u32::MAX))
            });
            let ica_wait = inner.ica_deadline.filter(|_| inner.ica_running).map(|deadline| {
                u32::try_from(deadline.saturating_sub(wall_ms())).unwrap_or(u32::MAX)
            });
            let wait = inner.run.as_mut().and_then(|run| {
                let wall = wall_ms();
                run.clock.set_paused(run.gate.borrow().is_holding(), wall);
                let deadline =
                    run.driver.machine.poll_timeout().filter(|_| !run.clock.is_paused())?;
                Some(
                    u32::try_from(deadline.saturating_sub(run.clock.now(wall))).unwrap_or(u32::MAX),
                )
            });
            let efpsn_wait = inner.efpsn.as_ref().and_then(|run| {
                let deadline = run.driver.machine.poll_timeout()?;
                Some(u32::try_from(deadline.saturating_sub(wall_ms())).unwrap_or(u32::MAX))
            });
            inner.timer = wait
                .or(nn_wait)
                .or(ica_wait)
                .or(efpsn_wait)
                .map(|ms| Timeout::new(ms, move || this.on_timer()));
            let live = inner.run.as_ref().map(Run::live);
            let nn_live = inner.nn.as_ref().map(NnRun::live);
            let efpsn = inner.efpsn.as_ref().map(EfpsnRun::live);
            let vvi = inner.vvi.as_mut().map(VviRun::live);
            let log = inner.log.borrow();
            (live, rounds, nn_live, nn_rounds, efpsn, vvi, log.lines(), log.total())
        };
        if efpsn.is_some() && efpsn != self.view.efpsn.get_untracked() {
            self.view.efpsn.set(efpsn);
        }
        if vvi.is_some() && vvi != self.view.vvi.get_untracked() {
            self.view.vvi.set(vvi);
        }
        self.view.live.set(live);
        if let Some(rounds) = rounds {
            self.view.rounds.set(rounds);
        }
        self.view.nn_live.set(nn_live);
        if let Some(rounds) = nn_rounds {
            self.view.nn_rounds.set(rounds);
        }
        self.view.wire.set(lines);
        self.view.wire_total.set(total);
    }
}

impl Inner {
    /// Whether a study of any kind is running.
    fn busy(&self) -> bool {
        self.run.is_some()
            || self.nn.is_some()
            || self.ica_running
            || self.efpsn.as_ref().is_some_and(|e| !e.is_finished())
            || self.vvi.as_ref().is_some_and(|v| !v.is_finished())
    }
}

/// The sites present (ids) and the names of every site seen, for a study's invitation.
fn present_sites(room: &RoomState) -> (Vec<ParticipantId>, BTreeMap<ParticipantId, String>) {
    room.roster.with_untracked(|r| {
        let present: Vec<ParticipantId> = r
            .with_role(Role::Site)
            .filter(|m| m.presence == crate::roster::Presence::Present)
            .map(|m| m.peer.id)
            .collect();
        let names: BTreeMap<ParticipantId, String> =
            r.with_role(Role::Site).map(|m| (m.peer.id, display_name(&m.peer))).collect();
        (present, names)
    })
}
