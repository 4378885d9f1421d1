/*!
A site tab's side of the private-mean study: its ledger, and a [`MeanSite`] per study.

Routing: every transport event reaches [`SiteStudy`] through the session's hook.
- Our own `Connected` (the relay's welcome) names the site: its ledger and data seed are loaded
  from storage under that name, and the ledger is reported to the dashboards present.
- A dashboard that joins or comes back gets the ledger report too.
- `mean/start` from a dashboard creates a fresh [`MeanSite`] (the core's role) with the rows the
  Local data panel holds, sized as the study asks, and the ledger behind an
  `Rc<RefCell<Ledger>>` it shares with this driver; the message is then fed to it.
- Every later study message, and every departure, goes to that role's [`Driver`] with the wall
  clock (`Date.now()`, which stamps ledger entries). What the role returns goes to the websocket.

After each input: if the role recorded releases, the ledger is saved and reported; the view's
signals are refreshed. Budget changes and imports go through [`SiteStudy::set_budget`] and
[`SiteStudy::import_ledger`], which leave the ledger untouched on error.
*/

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use capelab_core::accountant::ledger::{LedgerEntry, Spend};
use capelab_core::accountant::{Budget, Ledger};
use capelab_core::driver::Driver;
use capelab_core::rng::os_rng;
use capelab_core::secagg::SitePhase as SecAggPhase;
use capelab_core::study::StudyId;
use capelab_core::study::iterative::nn::{NnSite, NnTask};
use capelab_core::study::iterative::{
    IterBody, IterMessage, IterSitePhase, IterativeSite, SiteSettings, SiteStep, kind as iter_kind,
    ledger_study_name as iter_ledger_study_name, peek_start,
};
use capelab_core::study::mean::{
    DeclineReason, MeanBody, MeanMessage, MeanSite, NoisePlan, PublicResult, SiteOutcome,
    SitePhase, StudyParams, kind,
};
use capelab_core::transport::{Transport, TransportEvent};
use capelab_core::wire::{ParticipantId, Peer, Role, To};
use leptos::prelude::*;

use crate::frame::wall_ms;
use crate::frame::wire::{StudyTransport, WireLog};
use crate::ledger_report::{self, LedgerReport};
use crate::ledger_store;
use crate::local_data::{DataSource, fresh_seed};
use crate::roster::display_name;
use crate::session::RoomState;
use crate::studies::efpsn::worker::EfpsnSiteView;
use crate::studies::ica::site_view::IcaSiteView;
use crate::studies::regression::public_bounds::{self, BoundsAnnouncement, PreparedNote};
use crate::studies::vertical_vi::own::OwnColumns;
use crate::studies::vertical_vi::run::{self as vvi_run, DataAnnouncement, VviData};
use crate::studies::vertical_vi::worker::VviSiteView;
use crate::worker::host::WorkerHost;
use crate::worker::protocol::{FromWorker, OwnData, ToWorker, VviStart};

type SharedLedger = Rc<RefCell<Ledger>>;

/// The site's part in its current (or last) NN study.
#[derive(Clone, Debug, PartialEq)]
pub struct NnSiteView {
    pub phase: String,
    /// N_s and D of the records the study uses (private: only gradients leave, with noise).
    pub records: usize,
    pub features: usize,
    /// Records with label 1.
    pub positives: usize,
    /// The first records, rounded, for a glance.
    pub preview: Vec<String>,
    pub released: u32,
    pub max_iterations: u32,
    pub end: Option<String>,
}

/// The site's ledger, for its panel.
#[derive(Clone, Debug, PartialEq)]
pub struct LedgerView {
    pub site: String,
    pub budget: Budget,
    pub spent: f64,
    /// The total under RDP and under PLD, and which one `spent` is (the tighter).
    pub spend: Spend,
    pub remaining: f64,
    pub entries: Vec<LedgerEntry>,
    /// Something to tell the user about how the ledger was loaded.
    pub note: Option<String>,
}

/// One attempt, as the tab shows it: the noise it drew and what it released.
#[derive(Clone, Debug, PartialEq)]
pub struct AttemptView {
    pub attempt: u32,
    pub survivors: Vec<ParticipantId>,
    /// ê_s as it entered the secure sum.
    pub quantised_noise: Vec<f64>,
    /// e_s = ê_s − Σê/|U|.
    pub zero_sum_noise: Option<Vec<f64>>,
    /// g_s, the fresh noise of the release.
    pub fresh_noise: Option<Vec<f64>>,
    /// â_s as sent.
    pub release: Option<Vec<f64>>,
    pub conventional: Option<Vec<f64>>,
}

/// How the site's part of a study ended.
#[derive(Clone, Debug, PartialEq)]
pub enum SiteEnd {
    Done(PublicResult),
    Declined(String),
    NotInvited,
    Aborted(String),
}

/// The site's current (or last) study.
#[derive(Clone, Debug, PartialEq)]
pub struct SiteStudyView {
    pub study: Option<StudyId>,
    pub params: Option<StudyParams>,
    /// The parameters the dashboard announced, also when this site declined them.
    pub announced: Option<StudyParams>,
    pub noise: Option<NoisePlan>,
    pub phase: SitePhase,
    /// f(x_s), once the rows passed the study's checks: private, never sent.
    pub local_mean: Option<Vec<f64>>,
    pub attempts: Vec<AttemptView>,
    pub end: Option<SiteEnd>,
}

/// Which study a site tab is taking part in (its latest): the one its page shows first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SiteStudyKind {
    /// The private mean or the regression (one protocol).
    Round,
    Nn,
    Ica,
    Efpsn,
    VerticalVi,
}

/// Everything the site's study views render.
#[derive(Clone, Copy)]
pub struct SiteView {
    /// The study this tab takes part in now, or took part in last; `None` before the first.
    pub current: RwSignal<Option<SiteStudyKind>>,
    pub ledger: RwSignal<Option<LedgerView>>,
    /// Why the last budget change or import was refused (the ledger is unchanged).
    pub ledger_error: RwSignal<Option<String>>,
    pub study: RwSignal<Option<SiteStudyView>>,
    pub nn: RwSignal<Option<NnSiteView>>,
    /// The site's part in a Joint ICA study, as its worker reports it.
    pub ica: RwSignal<Option<IcaSiteView>>,
    /// The site's agent in an EFPSN study, as its worker reports it.
    pub efpsn: RwSignal<Option<EfpsnSiteView>>,
    /// The site's party or dealer in a vertical synthetic-data study, as its worker reports it.
    pub vvi: RwSignal<Option<VviSiteView>>,
    /// A data matrix loaded for Joint ICA studies (instead of generated subjects).
    pub ica_file: RwSignal<Option<OwnData>>,
    /// This tab's own columns for a vertical study on the parties' own CSV blocks (private: they
    /// go to this tab's worker only, when such a run starts).
    pub vvi_own: RwSignal<Option<OwnColumns>>,
    /// Where this site's values come from; the Local data panel edits it.
    pub data: RwSignal<DataSource>,
    /// How the site's table was mapped with the regression study's public bounds (private).
    pub prepared: RwSignal<Option<PreparedNote>>,
    /// The public bounds the dashboard last announced (a regression's), so a table loaded later
    /// is checked against the study it would join ([`public_bounds::table_fit`]).
    pub announced_bounds: RwSignal<Option<BoundsAnnouncement>>,
    /// Whether this site's user allows non-private comparison runs, in any study (its exact
    /// values leave the tab in them): off until the user turns it on, kept by site name, reported
    /// to the dashboard and read at each study's start.
    pub allow_nonprivate: RwSignal<bool>,
    /// The computation (`nn`, `capepca`, `capedjica`) of each iterative study this tab saw start,
    /// by its ledger study name: the ledger's names do not say which study it was.
    pub study_kinds: RwSignal<BTreeMap<String, String>>,
}

/// The site tab's study driver: a `Copy` handle, valid while the site view lives (after that
/// every call is a no-op).
#[derive(Clone, Copy)]
pub struct SiteStudy {
    inner: StoredValue<Rc<RefCell<Inner>>, LocalStorage>,
    pub view: SiteView,
}

struct Inner {
    room: RoomState,
    me: Option<Peer>,
    ledger: Option<SharedLedger>,
    ledger_note: Option<String>,
    run: Option<Driver<StudyTransport, MeanSite<SharedLedger>>>,
    /// The NN study's role; at most one of `run`, `nn` and `worker_study` is set
    /// (`Inner::take_part`), and `secagg/…` goes to it.
    nn: Option<NnDriver>,
    /// The Joint ICA worker (kept between its capePCA and capeDJICA steps: it holds the data).
    ica: Option<WorkerHost>,
    /// The study whose role the worker (`ica`) runs now: Joint ICA, EFPSN (`efpsn/…` and
    /// departures go to its agent) or the vertical study (`vvi/…` goes to its party or dealer).
    worker_study: Option<SiteStudyKind>,
    /// While the data set is being fetched: the EFPSN messages that arrived meanwhile, in order.
    efpsn_waiting: Option<Vec<ToWorker>>,
    /// The app's copy of the data set, once fetched.
    digits: Option<Rc<String>>,
    /// The table the dashboard announced for its next vertical study.
    vvi_data: Option<DataAnnouncement>,
    /// Ledger entries of the running study already saved and reported.
    saved: usize,
    /// The public bounds a dashboard announced for its next regression study.
    bounds: Option<BoundsAnnouncement>,
    log: Rc<RefCell<WireLog>>,
}

impl Inner {
    /// From now on this tab takes part in `kind` alone: every other study's role goes, so
    /// `secagg/…` and departures reach one role only.
    fn take_part(&mut self, kind: SiteStudyKind) {
        if kind != SiteStudyKind::Round {
            self.run = None;
        }
        if kind != SiteStudyKind::Nn {
            self.nn = None;
        }
        let in_worker =
            matches!(kind, SiteStudyKind::Ica | SiteStudyKind::Efpsn | SiteStudyKind::VerticalVi);
        self.worker_study = in_worker.then_some(kind);
    }
}

impl SiteStudy {
    /// Attaches to `room` (inside the site component: it lives as long as the view).
    pub fn start(room: RoomState) -> Self {
        let view = SiteView {
            current: RwSignal::new(None),
            ledger: RwSignal::new(None),
            ledger_error: RwSignal::new(None),
            study: RwSignal::new(None),
            nn: RwSignal::new(None),
            ica: RwSignal::new(None),
            efpsn: RwSignal::new(None),
            vvi: RwSignal::new(None),
            ica_file: RwSignal::new(None),
            vvi_own: RwSignal::new(None),
            data: RwSignal::new(DataSource::Seeded { seed: fresh_seed() }),
            prepared: RwSignal::new(None),
            announced_bounds: RwSignal::new(None),
            allow_nonprivate: RwSignal::new(false),
            study_kinds: RwSignal::new(BTreeMap::new()),
        };
        let inner = Rc::new(RefCell::new(Inner {
            room,
            me: None,
            ledger: None,
            ledger_note: None,
            run: None,
            nn: None,
            ica: None,
            worker_study: None,
            efpsn_waiting: None,
            digits: None,
            vvi_data: None,
            saved: 0,
            bounds: None,
            log: Rc::new(RefCell::new(WireLog::default())),
        }));
        let this = SiteStudy { inner: StoredValue::new_local(inner), view };
        room.attach(move |event| this.on_event(event));
        // The consent switch: kept for this site's name and told to the dashboards at once.
        Effect::new(move |before: Option<bool>| {
            let allows = view.allow_nonprivate.get();
            if before.is_some_and(|b| b != allows)
                && let Some(name) = this.site_name()
            {
                ledger_store::save_consent(&name, allows);
                this.report_to(To::All);
            }
            allows
        });
        this
    }

    /// The name this site's ledger and settings are kept under, once the relay named it.
    fn site_name(&self) -> Option<String> {
        let inner = self.inner()?;
        let inner = inner.try_borrow().ok()?;
        inner.me.as_ref().map(display_name)
    }

    fn inner(&self) -> Option<Rc<RefCell<Inner>>> {
        self.inner.try_get_value()
    }

    fn on_event(&self, event: &TransportEvent) {
        match event {
            TransportEvent::Connected { you, peers, .. } => {
                self.welcomed(you);
                for peer in peers.iter().filter(|p| p.role == Role::Dashboard) {
                    self.report_to(To::One(peer.id));
                }
            }
            TransportEvent::PeerJoined(peer) | TransportEvent::PeerRejoined(peer)
                if peer.role == Role::Dashboard =>
            {
                self.report_to(To::One(peer.id));
            }
            TransportEvent::Message { from, kind: k, payload } if k == kind::START => {
                self.on_start(*from, payload, event);
            }
            TransportEvent::Message { from, kind: k, payload } if k == public_bounds::KIND => {
                self.on_bounds(*from, payload);
            }
            TransportEvent::Message { from, kind: k, payload } if k == iter_kind::START => {
                match peek_start(payload) {
                    Ok((id, c)) => {
                        self.view.study_kinds.update(|k| {
                            k.insert(iter_ledger_study_name(id), c.clone());
                        });
                        if c == NnSite::NAME {
                            self.on_nn_start(*from, payload, event);
                        } else {
                            self.on_ica_start(*from, c, payload);
                        }
                    }
                    Err(e) => web_sys::console::warn_1(
                        &format!("capelab: unreadable study start from {from}: {e}").into(),
                    ),
                }
            }
            TransportEvent::Message { from, kind: k, payload } if k.starts_with("efpsn/") => {
                self.on_efpsn(*from, k, payload);
            }
            TransportEvent::Message { from, kind: k, payload } if k == vvi_run::DATA_KIND => {
                self.on_vvi_data(*from, payload);
            }
            TransportEvent::Message { from, kind: k, payload } if k.starts_with("vvi/") => {
                self.on_vvi(*from, k, payload);
            }
            TransportEvent::Message { kind: k, .. } if is_study_kind(k) => self.feed(event),
            TransportEvent::PeerLeft(peer) => {
                self.forward_efpsn(ToWorker::EfpsnDeparture { who: peer.id });
                self.forward_vvi(ToWorker::VviDeparture { who: peer.id });
                self.feed(event);
            }
            _ => {}
        }
    }

    /// The relay welcomed us: load this name's ledger and seed (once).
    fn welcomed(&self, you: &Peer) {
        let name = display_name(you);
        let Some(inner) = self.inner() else { return };
        {
            let mut inner = inner.borrow_mut();
            inner.me = Some(you.clone());
            if inner.ledger.is_some() {
                return;
            }
            let loaded = ledger_store::load_ledger(&name);
            inner.ledger = Some(Rc::new(RefCell::new(loaded.ledger)));
            inner.ledger_note = loaded.note;
        }
        self.view.allow_nonprivate.set(ledger_store::load_consent(&name));
        match ledger_store::load_seed(&name) {
            Some(seed) => self.view.data.set(DataSource::Seeded { seed }),
            None => {
                if let DataSource::Seeded { seed } = self.view.data.get_untracked() {
                    ledger_store::save_seed(&name, seed);
                }
            }
        }
        self.publish_ledger();
    }

    /// A dashboard opened a study: a fresh site role for it.
    fn on_start(&self, from: ParticipantId, payload: &[u8], event: &TransportEvent) {
        let Some(inner) = self.inner() else { return };
        let from_dashboard = is_dashboard(&inner.borrow().room, from);
        let params = match MeanMessage::decode(payload) {
            Ok(MeanMessage { study, body: MeanBody::Start(params) }) => Some((study, params)),
            _ => None,
        };
        let Some((study, params)) = params.filter(|_| from_dashboard) else {
            web_sys::console::warn_1(
                &format!("capelab: ignored a study start from participant {from}").into(),
            );
            return;
        };
        {
            let mut inner = inner.borrow_mut();
            let same = inner.run.as_ref().is_some_and(|d| d.machine.study() == Some(study));
            if !same {
                let (Some(me), Some(ledger), Some(ws)) =
                    (inner.me.clone(), inner.ledger.clone(), inner.room.transport())
                else {
                    return;
                };
                let bounds = inner.bounds.as_ref().filter(|b| b.study == study);
                let source = self.view.data.get_untracked();
                let (rows, note) =
                    public_bounds::site_rows(&source, &params, bounds.map(|b| &b.bounds));
                self.view.prepared.set(note);
                let site = MeanSite::new(me.id, from, rows, ledger, os_rng());
                inner.take_part(SiteStudyKind::Round);
                let transport =
                    StudyTransport { ws, gate: None, log: inner.log.clone(), now: wall_ms };
                inner.run = Some(Driver::new(transport, site));
                self.view.current.set(Some(SiteStudyKind::Round));
                inner.saved = 0;
            }
        }
        self.feed(event);
    }

    /// A dashboard announced the public bounds of the regression study it is about to start.
    fn on_bounds(&self, from: ParticipantId, payload: &[u8]) {
        let Some(inner) = self.inner() else { return };
        let mut inner = inner.borrow_mut();
        let from_dashboard = is_dashboard(&inner.room, from);
        match BoundsAnnouncement::decode(payload) {
            Ok(announced) if from_dashboard => {
                self.view.announced_bounds.set(Some(announced.clone()));
                inner.bounds = Some(announced);
            }
            _ => web_sys::console::warn_1(
                &format!("capelab: ignored public bounds from participant {from}").into(),
            ),
        }
    }

    /// A dashboard opened an NN study: a fresh iterative site role on this tab's records.
    fn on_nn_start(&self, from: ParticipantId, payload: &[u8], event: &TransportEvent) {
        let Some(inner) = self.inner() else { return };
        let from_dashboard = is_dashboard(&inner.borrow().room, from);
        let start = match IterMessage::<NnTask, Vec<f64>>::decode(payload) {
            Ok(IterMessage { study, body: IterBody::Start { params, task, .. } }) => {
                Some((study, params, task))
            }
            _ => None,
        };
        let Some((study, params, task)) = start.filter(|_| from_dashboard) else {
            web_sys::console::warn_1(
                &format!("capelab: ignored an NN study start from participant {from}").into(),
            );
            return;
        };
        {
            let mut inner = inner.borrow_mut();
            let same = inner.nn.as_ref().is_some_and(|d| d.machine.study() == Some(study));
            if !same {
                let (Some(me), Some(ledger), Some(ws)) =
                    (inner.me.clone(), inner.ledger.clone(), inner.room.transport())
                else {
                    return;
                };
                // Δ = 2C/N_s: the announced sensitivity says how many records each site uses.
                let records = (2.0 * task.clip / params.sensitivity).round();
                let records =
                    if records.is_finite() && records >= 1.0 { records as usize } else { 0 };
                let data = self.view.data.get_untracked().nn_dataset(records, task.features);
                let site = IterativeSite::new(
                    me.id,
                    from,
                    NnSite::new(data),
                    ledger,
                    os_rng(),
                    SiteSettings { allow_nonprivate: self.view.allow_nonprivate.get_untracked() },
                );
                let transport =
                    StudyTransport { ws, gate: None, log: inner.log.clone(), now: wall_ms };
                inner.nn = Some(Driver::new(transport, site));
                self.view.current.set(Some(SiteStudyKind::Nn));
                inner.take_part(SiteStudyKind::Nn);
                inner.saved = 0;
            }
        }
        self.feed(event);
    }

    fn feed(&self, event: &TransportEvent) {
        let Some(inner) = self.inner() else { return };
        if self.feed_ica(&inner, event) {
            return;
        }
        let recorded = {
            let mut inner = inner.borrow_mut();
            let spent = if let Some(driver) = inner.nn.as_mut() {
                driver.feed(wall_ms(), event.clone());
                driver.machine.spent().len()
            } else {
                let Some(driver) = inner.run.as_mut() else { return };
                driver.feed(wall_ms(), event.clone());
                driver.machine.spent().len()
            };
            let recorded = spent > inner.saved;
            inner.saved = spent;
            recorded
        };
        if recorded {
            self.ledger_changed();
        }
        self.publish_study();
    }

    /// A dashboard opened a capePCA or capeDJICA step: its worker gets the start (and the
    /// ledger, the seed, the loaded file) and answers through [`Self::on_worker`].
    fn on_ica_start(&self, from: ParticipantId, computation: String, payload: &[u8]) {
        let Some(inner) = self.inner() else { return };
        let from_dashboard = is_dashboard(&inner.borrow().room, from);
        if !from_dashboard {
            web_sys::console::warn_1(
                &format!("capelab: ignored a study start from participant {from}").into(),
            );
            return;
        }
        let mut guard = inner.borrow_mut();
        let (Some(me), Some(ledger)) = (guard.me.clone(), guard.ledger.clone()) else { return };
        if self.worker(&mut guard).is_none() {
            return;
        }
        guard.take_part(SiteStudyKind::Ica);
        self.view.current.set(Some(SiteStudyKind::Ica));
        let seed = match self.view.data.get_untracked() {
            DataSource::Seeded { seed } => seed,
            DataSource::Table { .. } => fresh_seed(),
        };
        let start = ToWorker::Start {
            me: me.id,
            dashboard: from,
            computation,
            payload: payload.to_vec(),
            ledger_json: ledger.borrow().to_json(),
            seed,
            allow_nonprivate: self.view.allow_nonprivate.get_untracked(),
            own_data: self.view.ica_file.get_untracked(),
        };
        if let Some(host) = guard.ica.as_ref() {
            host.post(&start);
        }
    }

    /// EFPSN traffic: a dashboard's `efpsn/start` makes this tab an agent (in its worker, once
    /// the data set is here); everything else goes to that agent.
    fn on_efpsn(&self, from: ParticipantId, kind: &str, payload: &[u8]) {
        use capelab_core::study::efpsn::kind as efpsn_kind;
        let Some(inner) = self.inner() else { return };
        if kind != efpsn_kind::START {
            self.forward_efpsn(ToWorker::EfpsnMessage { from, payload: payload.to_vec() });
            return;
        }
        if !is_dashboard(&inner.borrow().room, from) {
            web_sys::console::warn_1(
                &format!("capelab: ignored an EFPSN start from participant {from}").into(),
            );
            return;
        }
        let this = *self;
        {
            let mut guard = inner.borrow_mut();
            let (Some(me), Some(ledger)) = (guard.me.clone(), guard.ledger.clone()) else { return };
            if self.worker(&mut guard).is_none() {
                return;
            }
            guard.take_part(SiteStudyKind::Efpsn);
            // The last study's agent is no news: the panel says this one is starting.
            self.view.efpsn.set(None);
            self.view.current.set(Some(SiteStudyKind::Efpsn));
            // A tab with a table of its own optimises on it (its label in the `target` column or
            // the last); the others take their part of the shared digits, fetched once.
            let own = self.view.data.get_untracked().efpsn_rows();
            let needs_digits = own.is_none();
            let start = |csv: String| ToWorker::EfpsnStart {
                me: me.id,
                dashboard: from,
                payload: payload.to_vec(),
                ledger_json: ledger.borrow().to_json(),
                csv,
                own: own.clone(),
                allow_nonprivate: self.view.allow_nonprivate.get_untracked(),
            };
            if !needs_digits {
                if let Some(host) = guard.ica.as_ref() {
                    host.post(&start(String::new()));
                }
                return;
            }
            if let Some(csv) = guard.digits.clone() {
                if let Some(host) = guard.ica.as_ref() {
                    host.post(&start((*csv).clone()));
                }
                return;
            }
            let start = start(String::new());
            guard.efpsn_waiting = Some(vec![start]);
        }
        leptos::task::spawn_local(async move {
            let fetched = crate::fetch::text(crate::studies::efpsn::run::DIGITS_URL).await;
            let Some(inner) = this.inner() else { return };
            let mut guard = inner.borrow_mut();
            let waiting = guard.efpsn_waiting.take().unwrap_or_default();
            let csv = match fetched {
                Ok(csv) => Rc::new(csv),
                Err(e) => {
                    web_sys::console::error_1(&format!("capelab: {e}").into());
                    // The worker's start fails on the empty table and says so in the panel.
                    Rc::new(String::new())
                }
            };
            if !csv.is_empty() {
                guard.digits = Some(csv.clone());
            }
            if let Some(host) = guard.ica.as_ref() {
                for mut message in waiting {
                    if let ToWorker::EfpsnStart { csv: c, .. } = &mut message {
                        *c = (*csv).clone();
                    }
                    host.post(&message);
                }
            }
        });
    }

    /// The tab's worker (Joint ICA, EFPSN, the vertical study), started on first use.
    fn worker<'a>(&self, guard: &'a mut Inner) -> Option<&'a WorkerHost> {
        if guard.ica.is_none() {
            let this = *self;
            match WorkerHost::spawn(move |message| this.on_worker(message)) {
                Ok(host) => guard.ica = Some(host),
                Err(e) => {
                    web_sys::console::error_1(&format!("capelab: no worker: {e}").into());
                    return None;
                }
            }
        }
        guard.ica.as_ref()
    }

    /// A dashboard announced the table of its next vertical study.
    fn on_vvi_data(&self, from: ParticipantId, payload: &[u8]) {
        let Some(inner) = self.inner() else { return };
        let mut inner = inner.borrow_mut();
        let from_dashboard = is_dashboard(&inner.room, from);
        match DataAnnouncement::decode(payload) {
            Ok(announced) if from_dashboard => inner.vvi_data = Some(announced),
            _ => web_sys::console::warn_1(
                &format!("capelab: ignored a data announcement from participant {from}").into(),
            ),
        }
    }

    /// Vertical-study traffic: a dashboard's `vvi/start` makes this tab a party (on its block of
    /// the announced table) or the dealer, in its worker; everything else goes to that role.
    fn on_vvi(&self, from: ParticipantId, kind: &str, payload: &[u8]) {
        use capelab_vertical_vi::study::{VviMessage, kind as vvi_kind};
        let Some(inner) = self.inner() else { return };
        if kind != vvi_kind::START {
            self.forward_vvi(ToWorker::VviMessage { from, payload: payload.to_vec() });
            return;
        }
        if !is_dashboard(&inner.borrow().room, from) {
            web_sys::console::warn_1(
                &format!("capelab: ignored a vertical study start from participant {from}").into(),
            );
            return;
        }
        let mut guard = inner.borrow_mut();
        let (Some(me), Some(ledger)) = (guard.me.clone(), guard.ledger.clone()) else { return };
        let study = VviMessage::decode(payload).map(|m| m.study).ok();
        let announced = guard.vvi_data.as_ref().filter(|d| Some(d.study) == study);
        let (data, twin_seed) = (announced.map(|d| d.data), announced.map(|d| d.twin_seed));
        // A party on CPS1988 fetches the file in its worker, which keeps only its own columns.
        let file_url = data.and_then(|d| d.file()).and_then(|f| crate::fetch::absolute(f).ok());
        // A party on its own columns hands their text to its worker; no other run sees them.
        let own = match data {
            Some(VviData::Own { .. }) => self.view.vvi_own.get_untracked().map(|o| o.text),
            _ => None,
        };
        // The names people gave the room's members, for the panel's sentences.
        let mut names: BTreeMap<ParticipantId, String> = guard.room.roster.with_untracked(|r| {
            r.members().iter().map(|m| (m.peer.id, display_name(&m.peer))).collect()
        });
        names.insert(me.id, display_name(&me));
        let start = ToWorker::VviStart(Box::new(VviStart {
            me: me.id,
            aggregator: from,
            payload: payload.to_vec(),
            ledger_json: ledger.borrow().to_json(),
            data,
            file_url,
            own,
            twin_seed,
            names,
        }));
        let Some(host) = self.worker(&mut guard) else { return };
        host.post(&start);
        guard.take_part(SiteStudyKind::VerticalVi);
        self.view.current.set(Some(SiteStudyKind::VerticalVi));
    }

    /// Hands `message` to the vertical study's role, if it is the running one.
    fn forward_vvi(&self, message: ToWorker) {
        let Some(inner) = self.inner() else { return };
        let guard = inner.borrow();
        if let (true, Some(host)) =
            (guard.worker_study == Some(SiteStudyKind::VerticalVi), guard.ica.as_ref())
        {
            host.post(&message);
        }
    }

    /// Hands `message` to the EFPSN agent (queued while the data set is on its way).
    fn forward_efpsn(&self, message: ToWorker) {
        let Some(inner) = self.inner() else { return };
        let mut guard = inner.borrow_mut();
        if guard.worker_study != Some(SiteStudyKind::Efpsn) {
            return;
        }
        if let Some(waiting) = guard.efpsn_waiting.as_mut() {
            waiting.push(message);
        } else if let Some(host) = guard.ica.as_ref() {
            host.post(&message);
        }
    }

    /// Study traffic for the Joint ICA worker, if it is the running role.
    fn feed_ica(&self, inner: &Rc<RefCell<Inner>>, event: &TransportEvent) -> bool {
        let inner = inner.borrow();
        let (true, Some(host)) =
            (inner.worker_study == Some(SiteStudyKind::Ica), inner.ica.as_ref())
        else {
            return false;
        };
        match event {
            TransportEvent::Message { from, payload, .. } => {
                host.post(&ToWorker::Message { from: *from, payload: payload.clone() });
            }
            TransportEvent::PeerLeft(who) => host.post(&ToWorker::Departure { who: who.id }),
            _ => {}
        }
        true
    }

    /// What the worker answered: envelopes to send, the ledger to keep, the panel's view.
    fn on_worker(&self, message: FromWorker) {
        let Some(inner) = self.inner() else { return };
        match message {
            FromWorker::Send { to, kind, payload } => {
                let inner = inner.borrow();
                let Some(ws) = inner.room.transport() else { return };
                let mut transport =
                    StudyTransport { ws, gate: None, log: inner.log.clone(), now: wall_ms };
                if let Err(e) = transport.send(to, &kind, &payload) {
                    web_sys::console::warn_1(&format!("capelab: {kind} not sent: {e}").into());
                }
            }
            FromWorker::Ledger { json } => {
                let result = self.with_ledger(|l| l.load_json(&json).map_err(|e| e.to_string()));
                match result {
                    Ok(()) => self.ledger_changed(),
                    Err(e) => web_sys::console::error_1(
                        &format!("capelab: the worker's ledger was not kept: {e}").into(),
                    ),
                }
            }
            FromWorker::View(view) => self.view.ica.set(Some(*view)),
            FromWorker::EfpsnView(mut view) => {
                // The panel names the other agents as their users typed them.
                view.names = inner.borrow().room.roster.with_untracked(|r| {
                    r.with_role(Role::Site).map(|m| (m.peer.id, display_name(&m.peer))).collect()
                });
                self.view.efpsn.set(Some(*view));
            }
            FromWorker::VviView(view) => self.view.vvi.set(Some(*view)),
            FromWorker::Refused(reason) => {
                web_sys::console::warn_1(&format!("capelab worker: {reason}").into());
            }
            FromWorker::Crashed(what) => crate::crash::report(&format!("in its worker: {what}")),
            FromWorker::Ready
            | FromWorker::IcaLive(_)
            | FromWorker::Deadline(_)
            | FromWorker::IcaStartFailed(_)
            | FromWorker::Fetch { .. } => {}
        }
    }

    /// Sets the site's budget (ε at δ); refused below what is already spent.
    pub fn set_budget(&self, epsilon: f64, delta: f64) {
        let result = self.with_ledger(|l| {
            let budget = Budget::new(epsilon, delta).map_err(|e| e.to_string())?;
            l.set_budget(budget).map_err(|e| e.to_string())
        });
        self.after_change(result);
    }

    /// Replaces the ledger with an exported one of the same site; on any error it is untouched.
    pub fn import_ledger(&self, json: &str) {
        let result = self.with_ledger(|l| l.load_json(json).map_err(|e| e.to_string()));
        self.after_change(result);
    }

    /// The ledger as JSON (its export format), with the file name to save it under.
    pub fn export_ledger(&self) -> Option<(String, String)> {
        let inner = self.inner()?;
        let inner = inner.borrow();
        let ledger = inner.ledger.as_ref()?.borrow();
        Some((format!("capelab-ledger-{}.json", file_safe(ledger.site())), ledger.to_json()))
    }

    fn with_ledger(&self, f: impl FnOnce(&mut Ledger) -> Result<(), String>) -> Result<(), String> {
        let ledger = self.inner().and_then(|i| i.borrow().ledger.clone());
        match ledger {
            Some(ledger) => f(&mut ledger.borrow_mut()),
            None => {
                Err("not in a room yet: the ledger is loaded once the relay names this site".into())
            }
        }
    }

    fn after_change(&self, result: Result<(), String>) {
        let ok = result.is_ok();
        self.view.ledger_error.set(result.err());
        if ok {
            self.ledger_changed();
        }
    }

    /// Saves, shows and reports the ledger.
    fn ledger_changed(&self) {
        let Some(inner) = self.inner() else { return };
        let saved = inner.borrow().ledger.as_ref().map(|l| ledger_store::save_ledger(&l.borrow()));
        if let Some(Err(reason)) = saved {
            inner.borrow_mut().ledger_note = Some(format!("The ledger was not saved: {reason}."));
        }
        self.publish_ledger();
        self.report_to(To::All);
    }

    /// Sends the ledger report to `to` (`To::All`: every dashboard present).
    fn report_to(&self, to: To) {
        let Some(inner) = self.inner() else { return };
        let inner = inner.borrow();
        let (Some(ledger), Some(mut ws)) = (inner.ledger.as_ref(), inner.room.transport()) else {
            return;
        };
        let allows = self.view.allow_nonprivate.get_untracked();
        let payload = LedgerReport::of(&ledger.borrow()).with_consent(allows).encode();
        let targets: Vec<ParticipantId> = match to {
            To::One(id) => vec![id],
            To::All => inner.room.roster.with_untracked(|r| {
                r.with_role(Role::Dashboard)
                    .filter(|m| m.presence == crate::roster::Presence::Present)
                    .map(|m| m.peer.id)
                    .collect()
            }),
        };
        for id in targets {
            // A dashboard that has just left misses this one and gets the next on its return.
            let _ = ws.send(To::One(id), ledger_report::KIND, &payload);
        }
    }

    fn publish_ledger(&self) {
        let Some(inner) = self.inner() else { return };
        let view = {
            let inner = inner.borrow();
            inner.ledger.as_ref().map(|l| {
                let l = l.borrow();
                LedgerView {
                    site: l.site().to_owned(),
                    budget: l.budget(),
                    spent: l.spent(),
                    spend: l.spend(),
                    remaining: l.remaining(),
                    entries: l.entries().to_vec(),
                    note: inner.ledger_note.clone(),
                }
            })
        };
        self.view.ledger.set(view);
    }

    fn publish_study(&self) {
        let Some(inner) = self.inner() else { return };
        let view = inner.borrow().run.as_ref().map(|driver| study_view(&driver.machine));
        let nn = inner.borrow().nn.as_ref().map(|driver| nn_view(&driver.machine));
        if view.is_some() {
            self.view.study.set(view);
        }
        self.view.nn.set(nn);
    }
}

type NnDriver = Driver<StudyTransport, IterativeSite<NnSite, SharedLedger>>;

fn nn_view(site: &IterativeSite<NnSite, SharedLedger>) -> NnSiteView {
    let data = site.step().data();
    let preview = (0..data.len().min(3))
        .map(|i| {
            let x: Vec<String> =
                (0..data.features().min(4)).map(|j| format!("{:.2}", data.x[(i, j)])).collect();
            let more = if data.features() > 4 { ", …" } else { "" };
            format!("x = ({}{more}), y = {}", x.join(", "), data.y[i])
        })
        .collect();
    NnSiteView {
        phase: nn_phase_text(site.phase()),
        records: data.len(),
        features: data.features(),
        positives: data.y.iter().filter(|&&y| y == 1.0).count(),
        preview,
        released: site.iterations().last().map_or(0, |it| it.iteration),
        max_iterations: site.params().map_or(0, |p| p.max_iterations),
        end: match site.shortfall() {
            Some(s) => Some(crate::frame::budget::own_decline(s)),
            None => site.end_reason().map(str::to_owned),
        },
    }
}

/// Where the site is in an NN study, in words for the tab.
pub fn nn_phase_text(phase: IterSitePhase) -> String {
    match phase {
        IterSitePhase::AwaitingStart => "Waiting for the dashboard".into(),
        IterSitePhase::Accepted => "Accepted: the ledger allows all J iterations".into(),
        IterSitePhase::Summing(_) => {
            "Upfront SecureAgg: summing the noise of every iteration at once".into()
        }
        IterSitePhase::Iterating { released } => {
            format!("Released the noisy gradient of iteration {released}")
        }
        IterSitePhase::Repairing { from_iteration, .. } => format!(
            "Zero-sum repair: a site left; summing fresh noise for iterations {from_iteration} on"
        ),
        IterSitePhase::Excluded => "Not in the noise sum: waiting for the end".into(),
        IterSitePhase::Done => "Done: training ended".into(),
        IterSitePhase::Declined => "Declined: nothing but the refusal was sent".into(),
        IterSitePhase::NotInvited => "Not invited to this study".into(),
        IterSitePhase::Aborted => "The study ended early".into(),
    }
}

fn study_view(site: &MeanSite<SharedLedger>) -> SiteStudyView {
    let attempts = site
        .attempts()
        .iter()
        .map(|a| AttemptView {
            attempt: a.attempt,
            survivors: a.survivors.clone(),
            quantised_noise: a.quantised_noise.clone(),
            zero_sum_noise: a.zero_sum_noise.clone(),
            fresh_noise: site.fresh_noise(a),
            release: a.release.clone(),
            conventional: a.conventional.clone(),
        })
        .collect();
    let end = site.outcome().map(|o| match o {
        SiteOutcome::Done(result) => SiteEnd::Done(result.clone()),
        SiteOutcome::Declined(DeclineReason::Budget { shortfall: Some(s), .. }) => {
            SiteEnd::Declined(crate::frame::budget::own_decline(s))
        }
        SiteOutcome::Declined(reason) => {
            SiteEnd::Declined(format!("This site declined the study: {reason}"))
        }
        SiteOutcome::NotInvited => SiteEnd::NotInvited,
        SiteOutcome::Aborted(reason) => SiteEnd::Aborted(reason.to_string()),
    });
    SiteStudyView {
        study: site.study(),
        params: site.params().cloned(),
        announced: site.announced_params().cloned(),
        noise: site.noise_plan().copied(),
        phase: site.phase(),
        local_mean: site.local_value().map(<[f64]>::to_vec),
        attempts,
        end,
    }
}

/// Whether `from` is one of the room's dashboards: only a dashboard opens studies.
fn is_dashboard(room: &RoomState, from: ParticipantId) -> bool {
    room.roster.with_untracked(|r| {
        r.members().iter().any(|m| m.peer.id == from && m.peer.role == Role::Dashboard)
    })
}

/// Study traffic a running site role takes: the study's own kinds and SecureAgg's.
fn is_study_kind(kind: &str) -> bool {
    kind.starts_with("mean/") || kind.starts_with("secagg/") || kind.starts_with("iter/")
}

/// A name fit for a download's file name.
fn file_safe(name: &str) -> String {
    name.chars().map(|c| if c.is_alphanumeric() || c == '-' { c } else { '-' }).collect()
}

/// Where the site is, in words for the tab.
pub fn phase_text(phase: SitePhase) -> String {
    match phase {
        SitePhase::AwaitingStart => "Waiting for the dashboard to start a study".into(),
        SitePhase::Accepted => "Accepted: waiting for the first SecureAgg round".into(),
        SitePhase::Summing { attempt, secagg } => {
            let step = match secagg {
                SecAggPhase::AwaitingBegin => "starting",
                SecAggPhase::AdvertisedKeys => "R0: sent its public keys",
                SecAggPhase::SharedKeys => "R1: sent its sealed key shares",
                SecAggPhase::SentMaskedInput => "R2: sent its masked noise",
                SecAggPhase::SentUnmaskShares => "R3: sent its unmasking shares",
                SecAggPhase::Excluded => "left out of this sum (missed a round)",
                SecAggPhase::Done => "received the noise sum",
                SecAggPhase::Aborted => "SecureAgg stopped",
            };
            format!("SecureAgg, attempt {attempt}: {step}")
        }
        SitePhase::Released { attempt } => {
            format!("Released â_s (attempt {attempt}); waiting for the result")
        }
        SitePhase::Excluded { attempt } => {
            format!("Not in attempt {attempt}'s sum (missed a round); waiting for the result")
        }
        SitePhase::Done => "Done: the dashboard published the result".into(),
        SitePhase::Declined => "Declined: nothing but the refusal was sent".into(),
        SitePhase::NotInvited => "Not invited to this study".into(),
        SitePhase::Aborted => "The study ended without a result".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_read_as_sentences_and_kinds_route() {
        assert_eq!(
            phase_text(SitePhase::Summing { attempt: 1, secagg: SecAggPhase::SharedKeys }),
            "SecureAgg, attempt 1: R1: sent its sealed key shares"
        );
        assert!(phase_text(SitePhase::Released { attempt: 2 }).contains("attempt 2"));
        assert!(is_study_kind("secagg/key-directory") && is_study_kind(kind::RESULT));
        assert!(!is_study_kind(ledger_report::KIND));
        assert_eq!(file_safe("Clinic North/2"), "Clinic-North-2");
    }
}
