//! The dashboard's "Vertical synthetic data (DP-VI + MPC)" form, read and checked when Start is
//! pressed, before anything is sent or charged: the three roles among the sites present, every
//! size a tab would allocate (N, K, B, B·D), the noise the MPC's exact sampler must represent
//! (the vertical-vi crate's own check, [`check_party_noise`]), and the run's ε (the accountant's
//! PLD, what every party's ledger records). Each refusal names its field in the form's words.

use std::collections::BTreeMap;

use capelab_core::wire::ParticipantId;
use capelab_vertical_vi::cps1988;
use capelab_vertical_vi::mpc::noise::{check_party_noise, max_noise_std};
use capelab_vertical_vi::study::VviTask;

use crate::frame::form::{Field, FormError};
use crate::numbers::{group, show};
use crate::studies::vertical_vi::data::VviSource;
use crate::studies::vertical_vi::run::VviFields;
use crate::studies::vertical_vi::view::{PlayerEpsilon, epsilons};

pub const ROWS: Field = Field::new("vvi-rows", "rows N");
pub const COMPONENTS: Field = Field::new("vvi-components", "components K");
pub const SIGMA: Field = Field::new("vvi-sigma", "noise σ");
pub const CLIP: Field = Field::new("vvi-clip", "clip C");
pub const BATCH: Field = Field::new("vvi-batch", "batch B (expected, Poisson)");
pub const STEPS: Field = Field::new("vvi-steps", "steps T");
pub const DEALER: Field = Field::new("vvi-dealer", "dealer");
pub const PARTY_A: Field = Field::new("vvi-party-a", "party A");
pub const PARTY_B: Field = Field::new("vvi-party-b", "party B");

/// The fewest rows: a fifth is held out, and the test NLL needs some.
pub const MIN_ROWS: usize = 20;
/// σ below this gives an ε no ledger should be asked for (σ = 0.2, T = 20 on the default table:
/// ε ≈ 30); above [`MAX_SIGMA`] nothing is learned.
pub const MIN_SIGMA: f64 = 0.2;
pub const MAX_SIGMA: f64 = 10_000.0;
/// C from here: the circuit's inverse square root is accurate for ‖g‖/C < 2¹¹ (spec B3), and a
/// record's gradient norm reaches tens.
pub const MIN_CLIP: f64 = 0.1;
pub const MAX_CLIP: f64 = 1_000.0;

/// The form as typed, and the roles picked (`None`: the default).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VviText {
    pub rows: String,
    pub components: String,
    pub sigma: String,
    pub clip: String,
    pub batch: String,
    pub steps: String,
    pub source: VviSource,
    pub dealer: Option<ParticipantId>,
    pub parties: [Option<ParticipantId>; 2],
}

impl Default for VviText {
    fn default() -> Self {
        let d = VviFields::default();
        VviText {
            rows: d.rows.to_string(),
            components: d.components.to_string(),
            sigma: show(d.noise_multiplier),
            clip: show(d.clip),
            batch: d.batch.to_string(),
            steps: d.steps.to_string(),
            source: d.source,
            dealer: None,
            parties: [None, None],
        }
    }
}

/// The checked form: the run's settings, its roles and what each party's ledger will record.
#[derive(Clone, Debug, PartialEq)]
pub struct VviForm {
    pub fields: VviFields,
    /// Party A's and party B's tabs, in schema order.
    pub parties: Vec<ParticipantId>,
    pub dealer: ParticipantId,
    /// ε per player at the task's δ (the first row, the outside analyst's, is what every
    /// party's ledger records).
    pub players: Vec<PlayerEpsilon>,
}

impl VviForm {
    /// The run's roles are still in the room (`sites`: those present now), else which left.
    pub fn still_present(
        &self,
        sites: &[ParticipantId],
        names: &BTreeMap<ParticipantId, String>,
    ) -> Result<(), FormError> {
        let picks = [(PARTY_A, self.parties[0]), (PARTY_B, self.parties[1]), (DEALER, self.dealer)];
        match picks.into_iter().find(|(_, id)| !sites.contains(id)) {
            Some((field, id)) => Err(field.error(format!(
                "{} left the room: press Start again to pick another site",
                name_of(names, id)
            ))),
            None => Ok(()),
        }
    }
}

fn name_of(names: &BTreeMap<ParticipantId, String>, id: ParticipantId) -> String {
    names.get(&id).cloned().unwrap_or_else(|| format!("site {id}"))
}

impl VviText {
    /// Reads the form for the `sites` present (`names`: what people called them).
    pub fn read(
        &self,
        sites: &[ParticipantId],
        names: &BTreeMap<ParticipantId, String>,
    ) -> Result<VviForm, FormError> {
        let (parties, dealer) = self.roles(sites, names)?;
        let rows = match self.source {
            VviSource::Cps1988 => cps1988::ROWS,
            VviSource::Generated | VviSource::Own => {
                ROWS.count(&self.rows, MIN_ROWS, VviTask::MAX_ROWS)?
            }
        };
        let components =
            COMPONENTS.count(&self.components, VviTask::MIN_COMPONENTS, VviTask::MAX_COMPONENTS)?;
        let noise_multiplier = SIGMA.positive(&self.sigma, MIN_SIGMA, MAX_SIGMA)?;
        let clip = CLIP.positive(&self.clip, MIN_CLIP, MAX_CLIP)?;
        let batch = BATCH.count(&self.batch, 1, VviTask::MAX_BATCH)?;
        let steps = STEPS.count(&self.steps, 1, VviTask::MAX_STEPS as usize)? as u32;
        let fields = VviFields {
            rows,
            components,
            noise_multiplier,
            clip,
            batch,
            steps,
            source: self.source,
            ..VviFields::default()
        };
        // The task as every tab will check it (seeds do not matter to the checks).
        let data = fields.source.data(rows, 0);
        let aggregator = sites.iter().max().map_or(1, |m| m + 1);
        let task = fields.task_unchecked(&data, parties.clone(), dealer, 0);
        let train = task.train_rows();
        if batch > train {
            return Err(BATCH.error(format!(
                "B = {} is more than the {} training rows (N = {} less the fifth held out for \
                 the test): lower B{}",
                group(batch),
                group(train),
                group(rows),
                if self.source == VviSource::Cps1988 { "" } else { " or raise N" }
            )));
        }
        let d = task.gradient_len();
        if batch.saturating_mul(d) > VviTask::MAX_STEP_VALUES {
            return Err(BATCH.error(format!(
                "B = {} records of D = {} gradient values (at K = {components}) are {} \
                 secret-shared values a step, more than a tab computes ({}): lower B or K",
                group(batch),
                group(d),
                group(batch * d),
                group(VviTask::MAX_STEP_VALUES)
            )));
        }
        let party_count = task.schema.parties.len();
        if check_party_noise(clip, noise_multiplier, party_count).is_err() {
            return Err(SIGMA.error(format!(
                "C·σ = {} is more noise than the MPC's exact sampler can draw (it must stay \
                 below {} with {party_count} parties): lower σ or C",
                show(clip * noise_multiplier),
                show(max_noise_std(party_count))
            )));
        }
        // Whatever else a tab would refuse (nothing, if the checks above are the task's).
        task.check(aggregator)
            .map_err(|e| FormError::whole(format!("This run cannot start: {e}.")))?;
        let players = epsilons(&task).map_err(|e| {
            SIGMA.error(format!(
                "no ε can be computed for σ = {} over T = {} steps ({e}): raise σ or lower T",
                show(noise_multiplier),
                group(steps as usize)
            ))
        })?;
        Ok(VviForm { fields, parties, dealer, players })
    }

    /// Party A, party B and the dealer among `sites`: each picked one, else the default (the
    /// dealer the last site not picked as a party, the parties the first free ones). Three
    /// distinct tabs; a site picked twice is named on the second pick.
    fn roles(
        &self,
        sites: &[ParticipantId],
        names: &BTreeMap<ParticipantId, String>,
    ) -> Result<(Vec<ParticipantId>, ParticipantId), FormError> {
        if sites.len() < 3 {
            return Err(FormError::too_few_sites(
                sites.len(),
                3,
                "two parties and a dealer, each its own tab",
            ));
        }
        let picks = [(PARTY_A, self.parties[0]), (PARTY_B, self.parties[1]), (DEALER, self.dealer)];
        let mut taken: Vec<(Field, ParticipantId)> = Vec::new();
        for (field, pick) in picks {
            let Some(id) = pick else { continue };
            if !sites.contains(&id) {
                return Err(field.error(format!(
                    "{} is not in the room: pick a site present",
                    name_of(names, id)
                )));
            }
            if let Some((other, _)) = taken.iter().find(|(_, t)| *t == id) {
                return Err(field.error(format!(
                    "{} is already {}: each role needs its own tab",
                    name_of(names, id),
                    role_words(*other)
                )));
            }
            taken.push((field, id));
        }
        let free = |taken: &[(Field, ParticipantId)]| -> Vec<ParticipantId> {
            sites.iter().copied().filter(|s| !taken.iter().any(|(_, t)| t == s)).collect()
        };
        let dealer = match self.dealer {
            Some(id) => id,
            None => {
                let last = *free(&taken).last().expect("three sites, at most two taken");
                taken.push((DEALER, last));
                last
            }
        };
        let mut parties = Vec::with_capacity(2);
        for (field, pick) in [(PARTY_A, self.parties[0]), (PARTY_B, self.parties[1])] {
            let id = match pick {
                Some(id) => id,
                None => {
                    let first = free(&taken)[0];
                    taken.push((field, first));
                    first
                }
            };
            parties.push(id);
        }
        Ok((parties, dealer))
    }
}

/// "the dealer", "party A": a role as the form names it.
fn role_words(field: Field) -> String {
    if field == DEALER { "the dealer".into() } else { field.label.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> BTreeMap<ParticipantId, String> {
        [(2, "Lab A"), (3, "Lab B"), (4, "Lab C"), (5, "Lab D")]
            .into_iter()
            .map(|(id, n)| (id, n.to_owned()))
            .collect()
    }

    #[test]
    fn the_defaults_pick_three_tabs_and_read_as_the_task_every_tab_checks() {
        let form = VviText::default().read(&[2, 3, 4], &names()).unwrap();
        assert_eq!((form.parties.clone(), form.dealer), (vec![2, 3], 4));
        assert_eq!(form.fields, VviFields::default());
        assert_eq!(form.players[0].viewer, "outside analyst");
        // a party picked as the last site: the dealer is the last one left
        let a_last = VviText { parties: [Some(4), None], ..VviText::default() };
        let f = a_last.read(&[2, 3, 4], &names()).unwrap();
        assert_eq!((f.parties, f.dealer), (vec![4, 2], 3));
        let cps = VviText { source: VviSource::Cps1988, rows: "x".into(), ..VviText::default() };
        assert_eq!(cps.read(&[2, 3, 4], &names()).unwrap().fields.rows, 28_155, "its own N");
    }

    #[test]
    fn roles_are_three_distinct_tabs_named_as_people_named_them() {
        let few = VviText::default().read(&[2, 3], &names()).unwrap_err();
        assert_eq!(few.field, None);
        assert!(few.message.starts_with("2 sites are present: this study needs at least 3"));
        let twice = VviText { dealer: Some(2), parties: [Some(2), None], ..VviText::default() };
        let e = twice.read(&[2, 3, 4], &names()).unwrap_err();
        assert_eq!(e.field, Some(DEALER.id));
        assert_eq!(e.message, "dealer: Lab A is already party A: each role needs its own tab");
        let both = VviText { parties: [Some(3), Some(3)], ..VviText::default() };
        let e = both.read(&[2, 3, 4], &names()).unwrap_err();
        assert_eq!(e.field, Some(PARTY_B.id));
        let gone = VviText { dealer: Some(5), ..VviText::default() };
        let e = gone.read(&[2, 3, 4], &names()).unwrap_err();
        assert_eq!(e.message, "dealer: Lab D is not in the room: pick a site present");
        let form = VviText::default().read(&[2, 3, 4], &names()).unwrap();
        let e = form.still_present(&[2, 4], &names()).unwrap_err();
        assert_eq!(e.field, Some(PARTY_B.id));
        assert!(e.message.contains("Lab B left the room"), "{e}");
    }

    #[test]
    fn sizes_and_noise_are_refused_before_anything_is_allocated_or_charged() {
        let read = |f: fn(&mut VviText)| {
            let mut t = VviText::default();
            f(&mut t);
            t.read(&[2, 3, 4], &names())
        };
        // issue 30: N = 10⁸ killed the dashboard (capacity overflow)
        let e = read(|t| t.rows = "100000000".into()).unwrap_err();
        assert_eq!(e.message, "rows N: 10⁸ is too many: the most it takes is 100\u{202f}000");
        // issue 30: σ or C = 10¹² charged the ledgers, then failed in the MPC
        let e = read(|t| t.sigma = "1e12".into()).unwrap_err();
        assert_eq!(e.field, Some(SIGMA.id));
        let e = read(|t| {
            t.sigma = "5000".into();
            t.clip = "100".into();
        })
        .unwrap_err();
        assert_eq!(e.field, Some(SIGMA.id));
        assert!(
            e.message.contains("C·σ = 500\u{202f}000 is more noise")
                && e.message.contains("below 262\u{202f}144 with 2 parties"),
            "{e}"
        );
        let e = read(|t| t.batch = "900".into()).unwrap_err();
        assert!(e.message.contains("B = 900 is more than the 800 training rows"), "{e}");
        let e = read(|t| {
            t.source = VviSource::Cps1988;
            t.components = "64".into();
            t.batch = "200".into();
        })
        .unwrap_err();
        assert_eq!(e.field, Some(BATCH.id));
        assert!(e.message.contains("secret-shared values a step"), "{e}");
        let e = read(|t| t.steps = "1e12".into()).unwrap_err();
        assert_eq!(e.message, "steps T: 10¹² is too many: the most it takes is 20\u{202f}000");
        // the extremes the form takes: ε is computed (PLD) for each
        for (sigma, steps, batch) in [("0.2", "20000", "800"), ("10000", "1", "1")] {
            let mut t = VviText::default();
            (t.sigma, t.steps, t.batch) = (sigma.into(), steps.into(), batch.into());
            let form = t.read(&[2, 3, 4], &names()).unwrap();
            assert!(
                form.players.iter().all(|p| p.epsilon.is_finite() && p.epsilon >= 0.0),
                "{sigma} {steps} {batch}: {:?}",
                form.players
            );
        }
    }

    /// What a person types into any field, as the browser's form fuzzer does: a form whose task
    /// every tab accepts, or a refusal about that field, in the form's words.
    #[test]
    fn typed_nonsense_in_any_field_is_a_named_refusal_never_a_panic() {
        let fields: [crate::frame::form::FuzzField<VviText>; 6] = [
            (ROWS.id, |f| &mut f.rows),
            (COMPONENTS.id, |f| &mut f.components),
            (SIGMA.id, |f| &mut f.sigma),
            (CLIP.id, |f| &mut f.clip),
            (BATCH.id, |f| &mut f.batch),
            (STEPS.id, |f| &mut f.steps),
        ];
        for source in [VviSource::Generated, VviSource::Cps1988, VviSource::Own] {
            let base = || VviText { source, ..VviText::default() };
            crate::frame::form::each_mistake(&fields, base, |id, typed, f| {
                match f.read(&[2, 3, 4], &names()) {
                    Ok(form) => {
                        let data = form.fields.source.data(form.fields.rows, 1);
                        let task = form.fields.task(&data, form.parties, form.dealer, 1, 1);
                        assert!(task.is_ok(), "{id} {typed}: {task:?}");
                    }
                    Err(e) => {
                        assert_eq!(e.field, Some(id), "{id} {typed}: {e:?}");
                        for code in ["..=", "task refused", "parameter:", "Err("] {
                            assert!(!e.message.contains(code), "{id} {typed}: {e}");
                        }
                    }
                }
            });
        }
    }
}
