/*!
The dashboard's side of a Joint ICA study in its worker: the core's capePCA and capeDJICA
aggregators ([`IcaRun`]) with their heavy steps (capePCA's D×D eigendecomposition, the maps'
pseudo-inverse every iteration) off the page's thread. The page forwards the room's messages and
its timer; the worker answers with the envelopes to send, the live view and the next deadline.
*/

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use capelab_core::transport::{Transport, TransportError, TransportEvent};
use capelab_core::wire::{ParticipantId, To};

use crate::studies::ica::form::IcaForm;
use crate::studies::ica::run::IcaRun;
use crate::worker::protocol::FromWorker;

/// What the aggregators send, kept (as the page's `Send`s) until the page takes it.
#[derive(Clone, Default)]
pub struct Outbox(Rc<RefCell<Vec<FromWorker>>>);

impl Transport for Outbox {
    fn send(&mut self, to: To, kind: &str, payload: &[u8]) -> Result<(), TransportError> {
        let send = FromWorker::Send { to, kind: kind.to_owned(), payload: payload.to_vec() };
        self.0.borrow_mut().push(send);
        Ok(())
    }

    /// Events come from the page, never through here.
    fn poll_event(&mut self) -> Option<TransportEvent> {
        None
    }
}

/// One dashboard's Joint ICA study in the worker.
pub struct DashboardRun {
    run: IcaRun<Outbox>,
    outbox: Outbox,
}

impl DashboardRun {
    pub fn start(
        number: usize,
        form: IcaForm,
        names: BTreeMap<ParticipantId, String>,
        now_ms: u64,
    ) -> Result<(Self, Vec<FromWorker>), String> {
        let outbox = Outbox::default();
        let run = IcaRun::start(number, form, outbox.clone(), names, now_ms)?;
        let mut this = DashboardRun { run, outbox };
        let replies = this.replies();
        Ok((this, replies))
    }

    pub fn message(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        payload: Vec<u8>,
    ) -> Vec<FromWorker> {
        // The kind is the envelope's, which the roles do not read.
        let event = TransportEvent::Message { from, kind: String::new(), payload };
        self.run.feed(now_ms, &event);
        self.replies()
    }

    pub fn departure(&mut self, now_ms: u64, who: ParticipantId) -> Vec<FromWorker> {
        self.run.feed(now_ms, &TransportEvent::PeerLeft(departed(who)));
        self.replies()
    }

    pub fn timer(&mut self, now_ms: u64) -> Vec<FromWorker> {
        self.run.fire_timeout(now_ms);
        self.replies()
    }

    pub fn stop(&mut self, now_ms: u64, reason: &str) -> Vec<FromWorker> {
        self.run.stop(now_ms, reason);
        self.replies()
    }

    /// The envelopes sent since the last call, then the view and the next deadline.
    fn replies(&mut self) -> Vec<FromWorker> {
        let mut out: Vec<FromWorker> = self.outbox.0.borrow_mut().drain(..).collect();
        out.push(FromWorker::IcaLive(Box::new(self.run.live())));
        out.push(FromWorker::Deadline(self.run.poll_timeout()));
        out
    }
}

/// A departed participant as the roles need it: only its id is read.
fn departed(id: ParticipantId) -> capelab_core::wire::Peer {
    capelab_core::wire::Peer { id, role: capelab_core::wire::Role::Site, name: String::new() }
}
