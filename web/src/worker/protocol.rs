//! The messages between a site tab and its worker. They cross `postMessage` as plain JS objects
//! ([`serde_wasm_bindgen`]); protocol payloads travel as `Uint8Array`s, not arrays of numbers.

use std::collections::BTreeMap;

use capelab_core::accountant::Ledger;
use capelab_core::driver::Outgoing;
use capelab_core::wire::{ParticipantId, To};
use serde::{Deserialize, Serialize};

use crate::studies::ica::form::IcaForm;
use crate::studies::ica::run::IcaLive;

/// Main thread → worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ToWorker {
    /// An `iter/start` of capePCA or capeDJICA: a fresh site role for it, fed this payload.
    Start {
        me: ParticipantId,
        dashboard: ParticipantId,
        computation: String,
        #[serde(with = "bytes")]
        payload: Vec<u8>,
        /// The site's ledger (its export format): the role's gate reads and records in it.
        ledger_json: String,
        /// The seed of the site's own subjects (used when the study names a synthetic data set).
        seed: u64,
        allow_nonprivate: bool,
        /// The site's own data file, if it loaded one.
        own_data: Option<OwnData>,
    },
    /// A study message from the room.
    Message {
        from: ParticipantId,
        #[serde(with = "bytes")]
        payload: Vec<u8>,
    },
    Departure {
        who: ParticipantId,
    },
    /// A dashboard's Joint ICA study: its aggregators run in this worker from now on, and the
    /// room's messages go to them.
    IcaStart {
        number: usize,
        form: Box<IcaForm>,
        names: BTreeMap<ParticipantId, String>,
    },
    /// The page's timer fired (the last [`FromWorker::Deadline`] passed).
    IcaTimer,
    /// The teacher stopped the study.
    IcaStop {
        reason: String,
    },
    /// An `efpsn/start`: this tab's agent, on its part of the data set (`csv`: the app's copy),
    /// or on its own labelled rows (`own`, or why the tab's table cannot be used).
    EfpsnStart {
        me: ParticipantId,
        dashboard: ParticipantId,
        #[serde(with = "bytes")]
        payload: Vec<u8>,
        ledger_json: String,
        csv: String,
        own: Option<Result<crate::local_data::LabelledRows, String>>,
        allow_nonprivate: bool,
    },
    /// An EFPSN message from a neighbour or the dashboard.
    EfpsnMessage {
        from: ParticipantId,
        #[serde(with = "bytes")]
        payload: Vec<u8>,
    },
    EfpsnDeparture {
        who: ParticipantId,
    },
    /// A `vvi/start`: this tab is a party or the dealer of the vertical synthetic-data study.
    VviStart(Box<VviStart>),
    /// The worker's own fetch of the vertical study's table finished (never sent by the tab).
    VviTable {
        joined: Result<String, String>,
    },
    /// A `vvi/…` message from a member of the run.
    VviMessage {
        from: ParticipantId,
        #[serde(with = "bytes")]
        payload: Vec<u8>,
    },
    VviDeparture {
        who: ParticipantId,
    },
}

/// A `vvi/start` for the worker: this tab is a party (its block of the announced table, `data`)
/// or the dealer of the vertical synthetic-data study.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VviStart {
    pub me: ParticipantId,
    pub aggregator: ParticipantId,
    #[serde(with = "bytes")]
    pub payload: Vec<u8>,
    pub ledger_json: String,
    pub data: Option<crate::studies::vertical_vi::run::VviData>,
    /// The absolute address of the table's file, when the party fetches one (a worker started
    /// from a `blob:` URL cannot resolve the page's relative addresses).
    pub file_url: Option<String>,
    /// The tab's own columns (CSV text), only for a run on them (`VviData::Own`).
    pub own: Option<String>,
    /// The seed the dashboard announced for the synthetic twin: every tab draws the same one.
    pub twin_seed: Option<u64>,
    /// The names people gave the room's participants, for the panel's sentences.
    pub names: BTreeMap<ParticipantId, String>,
}

/// A site's own data, loaded in its tab: never sent, demeaned, scaled by the public `scale` and
/// clipped at ‖x‖ = 1 in the worker (as the CLI's `--data`/`--nifti-site` with `--data-scale`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OwnData {
    pub files: OwnFiles,
    /// The public scale applied after demeaning (choose it from units, not from the data).
    pub scale: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum OwnFiles {
    /// D voxels × N time points (CSV, or `.npy` by name), subjects of `timepoints` columns.
    Matrix {
        name: String,
        #[serde(with = "bytes")]
        bytes: Vec<u8>,
        timepoints: usize,
    },
    /// One 4-D NIfTI image per subject (`.nii` or `.nii.gz`) and a 3-D brain mask: D = the
    /// voxels inside the mask.
    Nifti { subjects: Vec<NamedBytes>, mask: NamedBytes },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NamedBytes {
    pub name: String,
    #[serde(with = "bytes")]
    pub bytes: Vec<u8>,
}

impl OwnData {
    /// What the files are, for the tab and the data's cache key.
    pub fn describe(&self) -> String {
        let files = match &self.files {
            OwnFiles::Matrix { name, timepoints, .. } => {
                format!("{name} (subjects of {timepoints} time points)")
            }
            OwnFiles::Nifti { subjects, mask } => {
                let names: Vec<&str> = subjects.iter().map(|s| s.name.as_str()).collect();
                format!(
                    "{} NIfTI subject(s) [{}] under mask {}",
                    subjects.len(),
                    names.join(", "),
                    mask.name
                )
            }
        };
        format!("{files}, public scale {}", self.scale)
    }
}

/// Worker → main thread.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum FromWorker {
    /// The worker has loaded the app's module and listens.
    Ready,
    /// An envelope for the room.
    Send {
        to: To,
        kind: String,
        #[serde(with = "bytes")]
        payload: Vec<u8>,
    },
    /// The ledger after the role recorded a release: the tab saves and reports it.
    Ledger { json: String },
    /// What the site's panel shows.
    View(Box<crate::studies::ica::site_view::IcaSiteView>),
    /// An input the role refused, in words.
    Refused(String),
    /// The worker hit an internal error (a panic) and can do nothing more: the page reports it.
    Crashed(String),
    /// The dashboard's study as it stands (after every input).
    IcaLive(Box<IcaLive>),
    /// When the aggregators next need the timer (`Date.now()` milliseconds), if ever.
    Deadline(Option<u64>),
    /// The study could not start (nothing was sent).
    IcaStartFailed(String),
    /// What the site's EFPSN panel shows.
    EfpsnView(Box<crate::studies::efpsn::worker::EfpsnSiteView>),
    /// What the site's vertical synthetic-data panel shows.
    VviView(Box<crate::studies::vertical_vi::worker::VviSiteView>),
    /// The worker should fetch this file and hand it back as [`ToWorker::VviTable`] (done in
    /// the worker's entry, never posted to the tab).
    Fetch { url: String },
}

impl FromWorker {
    /// A role's envelopes, as the page sends them.
    pub fn sends(out: Vec<Outgoing>) -> impl Iterator<Item = FromWorker> {
        out.into_iter().map(|o| FromWorker::Send {
            to: o.to,
            kind: o.kind.to_owned(),
            payload: o.payload,
        })
    }
}

/// Posts a role's ledger when its entries changed since the last look: the tab saves it (before
/// the envelopes of the same input leave, when put first).
#[derive(Debug, Default)]
pub struct LedgerWatch(usize);

impl LedgerWatch {
    /// The ledger the role starts from.
    pub fn reset(&mut self, ledger: &Ledger) {
        self.0 = ledger.entries().len();
    }

    pub fn changed(&mut self, ledger: &Ledger) -> Option<FromWorker> {
        let entries = ledger.entries().len();
        (entries != self.0).then(|| {
            self.0 = entries;
            FromWorker::Ledger { json: ledger.to_json() }
        })
    }
}

/// `Vec<u8>` as serde bytes, which `serde_wasm_bindgen` maps to `Uint8Array` both ways.
mod bytes {
    use serde::de::{Error, SeqAccess, Visitor};
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        struct Bytes;
        impl<'de> Visitor<'de> for Bytes {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_byte_buf<E: Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
                Ok(v)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(b) = seq.next_element()? {
                    out.push(b);
                }
                Ok(out)
            }
        }
        d.deserialize_byte_buf(Bytes)
    }
}
