/*!
Step-by-step mode for teaching: the dashboard holds its outgoing protocol messages between
SecureAgg rounds until the teacher clicks "Next round".

[`StepGate`] sits between the aggregator role and the websocket: every message the role wants sent
is [`offered`](StepGate::offer) to it. A message that opens a new round (SecureAgg's `begin`,
`key-directory`, `forwarded-shares`, `unmask-request`, and the noise sum `result` that opens the
release) starts a held [`Batch`]; what the role sends while a batch is held joins the last batch,
so the order on the wire never changes. [`StepGate::next`] lets the first batch go.

A message that ends the study (`mean/result`, `mean/abort`, `secagg/abort`) is never held: the
rounds the held batches would open no longer exist, so they are dropped and the end goes out at
once.

While anything is held the aggregator's clock stands still ([`PausableClock`]): a round's deadline
counts from the moment the teacher lets it start, not from when the role asked for it.

Pure logic, tested natively; `frame/dashboard.rs` applies it.
*/

use std::collections::VecDeque;

use capelab_core::secagg::messages::kind as secagg_kind;
use capelab_core::study::mean::kind as mean_kind;
use capelab_core::wire::To;

/// The five steps a teacher walks through, in protocol order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    AdvertiseKeys,
    ShareKeys,
    MaskedInput,
    Unmask,
    Release,
}

impl Step {
    pub const ALL: [Step; 5] =
        [Step::AdvertiseKeys, Step::ShareKeys, Step::MaskedInput, Step::Unmask, Step::Release];

    /// The step a message of envelope kind `kind` opens, if it opens one.
    pub fn opened_by(kind: &str) -> Option<Step> {
        match kind {
            secagg_kind::BEGIN => Some(Step::AdvertiseKeys),
            secagg_kind::KEY_DIRECTORY => Some(Step::ShareKeys),
            secagg_kind::FORWARDED_SHARES => Some(Step::MaskedInput),
            secagg_kind::UNMASK_REQUEST => Some(Step::Unmask),
            secagg_kind::RESULT => Some(Step::Release),
            _ => None,
        }
    }

    /// A stable token for `data-step` attributes.
    pub fn token(self) -> &'static str {
        match self {
            Step::AdvertiseKeys => "advertise-keys",
            Step::ShareKeys => "share-keys",
            Step::MaskedInput => "masked-input",
            Step::Unmask => "unmask",
            Step::Release => "release",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Step::AdvertiseKeys => "R0 · Advertise keys",
            Step::ShareKeys => "R1 · Share keys",
            Step::MaskedInput => "R2 · Masked input",
            Step::Unmask => "R3 · Unmask",
            Step::Release => "Release",
        }
    }

    /// One sentence for the class: what happens in this round and what the dashboard learns.
    pub fn explanation(self) -> &'static str {
        match self {
            Step::AdvertiseKeys => {
                "Each site draws its private noise ê_s, makes two key pairs and sends only the \
                 public halves; the dashboard publishes the list. Nothing about the data leaves \
                 a site."
            }
            Step::ShareKeys => {
                "Each site splits its masking secrets into Shamir shares (any t of them rebuild a \
                 secret) and sends one sealed share to every other site through the dashboard, \
                 which cannot open them."
            }
            Step::MaskedInput => {
                "Each site hides ê_s under masks: pairwise masks that cancel in the sum and a \
                 self-mask. The dashboard receives numbers that look uniformly random."
            }
            Step::Unmask => {
                "The sites still here send the shares that remove the self-masks of those \
                 present and the pairwise masks of those who dropped: the dashboard learns the \
                 sum Σê_s and nothing else."
            }
            Step::Release => {
                "The dashboard broadcasts Σê_s. Each site turns its ê_s into zero-sum noise \
                 e_s = ê_s − Σê/|U|, adds a little fresh noise g_s and releases \
                 â_s = f(x_s) + e_s + g_s once its ledger has recorded the release. Averaging the \
                 â_s cancels every e_s."
            }
        }
    }
}

/// A message on its way out (the aggregator's [`capelab_core::driver::Outgoing`], owned).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldMessage {
    pub to: To,
    pub kind: String,
    pub payload: Vec<u8>,
}

/// The messages that open one step, with whatever the role sent after them while they waited.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub step: Step,
    pub messages: Vec<HeldMessage>,
}

/// What [`StepGate::offer`] decided.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Offer {
    /// Send these now, in order.
    pub send: Vec<HeldMessage>,
    /// Held messages dropped because the study ended before their round opened.
    pub dropped: usize,
}

/// Holds outgoing messages between rounds while step-by-step mode is on.
#[derive(Debug, Default)]
pub struct StepGate {
    enabled: bool,
    held: VecDeque<Batch>,
}

impl StepGate {
    pub fn new(enabled: bool) -> Self {
        Self { enabled, held: VecDeque::new() }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The step the first held batch opens, if anything is held.
    pub fn held_step(&self) -> Option<Step> {
        self.held.front().map(|b| b.step)
    }

    pub fn is_holding(&self) -> bool {
        !self.held.is_empty()
    }

    /// The role wants `message` sent.
    pub fn offer(&mut self, message: HeldMessage) -> Offer {
        if !self.enabled {
            return Offer { send: vec![message], dropped: 0 };
        }
        if ends_the_study(&message.kind) {
            let dropped = self.held.drain(..).map(|b| b.messages.len()).sum();
            return Offer { send: vec![message], dropped };
        }
        match (Step::opened_by(&message.kind), self.held.back_mut()) {
            // More openers of the same step (one `forwarded-shares` per site) join its batch.
            (Some(step), Some(last)) if last.step == step => last.messages.push(message),
            (Some(step), _) => self.held.push_back(Batch { step, messages: vec![message] }),
            (None, Some(last)) => last.messages.push(message),
            (None, None) => return Offer { send: vec![message], dropped: 0 },
        }
        Offer::default()
    }

    /// Lets the first held batch go.
    pub fn next(&mut self) -> Vec<HeldMessage> {
        self.held.pop_front().map(|b| b.messages).unwrap_or_default()
    }

    /// Turns step-by-step mode off and lets everything held go, in order.
    pub fn release_all(&mut self) -> Vec<HeldMessage> {
        self.enabled = false;
        self.held.drain(..).flat_map(|b| b.messages).collect()
    }
}

fn ends_the_study(kind: &str) -> bool {
    matches!(kind, mean_kind::RESULT | mean_kind::ABORT | secagg_kind::ABORT)
}

/// A wall clock that stands still while paused: `now` is wall time minus every pause so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PausableClock {
    paused_total_ms: u64,
    paused_since: Option<u64>,
}

impl PausableClock {
    /// The clock's time at wall time `wall_ms`.
    pub fn now(&self, wall_ms: u64) -> u64 {
        let running_pause = self.paused_since.map_or(0, |since| wall_ms.saturating_sub(since));
        wall_ms.saturating_sub(self.paused_total_ms + running_pause)
    }

    pub fn is_paused(&self) -> bool {
        self.paused_since.is_some()
    }

    /// Pauses or resumes at wall time `wall_ms`; a no-op if already in that state.
    pub fn set_paused(&mut self, paused: bool, wall_ms: u64) {
        match (paused, self.paused_since) {
            (true, None) => self.paused_since = Some(wall_ms),
            (false, Some(since)) => {
                self.paused_total_ms += wall_ms.saturating_sub(since);
                self.paused_since = None;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: &str, to: To) -> HeldMessage {
        HeldMessage { to, kind: kind.into(), payload: kind.as_bytes().to_vec() }
    }

    fn kinds(messages: &[HeldMessage]) -> Vec<&str> {
        messages.iter().map(|m| m.kind.as_str()).collect()
    }

    #[test]
    fn without_step_mode_everything_goes_at_once() {
        let mut gate = StepGate::new(false);
        for kind in ["mean/start", "secagg/begin", "secagg/key-directory", "mean/result"] {
            let offer = gate.offer(msg(kind, To::All));
            assert_eq!(kinds(&offer.send), [kind]);
        }
        assert!(!gate.is_holding());
    }

    #[test]
    fn each_round_opener_waits_for_next_and_keeps_the_wire_order() {
        let mut gate = StepGate::new(true);
        assert_eq!(kinds(&gate.offer(msg("mean/start", To::All)).send), ["mean/start"]);
        assert!(gate.offer(msg("secagg/begin", To::All)).send.is_empty());
        assert_eq!(gate.held_step(), Some(Step::AdvertiseKeys));
        assert_eq!(kinds(&gate.next()), ["secagg/begin"]);
        assert!(!gate.is_holding());

        // one forwarded-shares per site: one batch, one step
        for site in 2..=5 {
            assert!(gate.offer(msg("secagg/forwarded-shares", To::One(site))).send.is_empty());
        }
        assert_eq!(gate.held_step(), Some(Step::MaskedInput));
        // a message of no step that comes meanwhile waits behind the batch, in order
        assert!(gate.offer(msg("mean/other", To::One(3))).send.is_empty());
        // a second opener queues a second batch
        assert!(gate.offer(msg("secagg/unmask-request", To::All)).send.is_empty());
        let first = gate.next();
        assert_eq!(first.len(), 5);
        assert_eq!(first[0].to, To::One(2));
        assert_eq!(first[4].kind, "mean/other");
        assert_eq!(gate.held_step(), Some(Step::Unmask));
        assert_eq!(kinds(&gate.next()), ["secagg/unmask-request"]);
        assert!(gate.next().is_empty(), "nothing left");
    }

    #[test]
    fn the_end_of_the_study_drops_held_rounds_and_goes_out_at_once() {
        let mut gate = StepGate::new(true);
        for site in 2..=4 {
            gate.offer(msg("secagg/forwarded-shares", To::One(site)));
        }
        let abort = gate.offer(msg("secagg/abort", To::All));
        assert_eq!((kinds(&abort.send), abort.dropped), (vec!["secagg/abort"], 3));
        let end = gate.offer(msg("mean/abort", To::All));
        assert_eq!((kinds(&end.send), end.dropped), (vec!["mean/abort"], 0));
        assert!(!gate.is_holding());
    }

    #[test]
    fn release_all_turns_step_mode_off() {
        let mut gate = StepGate::new(true);
        gate.offer(msg("secagg/begin", To::All));
        gate.offer(msg("secagg/key-directory", To::All));
        assert_eq!(kinds(&gate.release_all()), ["secagg/begin", "secagg/key-directory"]);
        assert!(!gate.enabled());
        assert_eq!(gate.offer(msg("secagg/result", To::All)).send.len(), 1);
    }

    #[test]
    fn the_clock_stands_still_while_paused() {
        let mut clock = PausableClock::default();
        assert_eq!(clock.now(1_000), 1_000);
        clock.set_paused(true, 1_000);
        clock.set_paused(true, 1_500); // already paused: the pause started at 1000
        assert_eq!(clock.now(4_000), 1_000);
        clock.set_paused(false, 4_000);
        assert_eq!(clock.now(4_250), 1_250);
        clock.set_paused(true, 5_000);
        clock.set_paused(false, 6_000);
        assert_eq!(clock.now(7_000), 3_000, "two pauses of 3 s and 1 s");
        assert!(!clock.is_paused());
    }
}
