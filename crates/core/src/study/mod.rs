/*!
Studies: what a dashboard asks a room of sites to compute, each as a pair of sans-IO roles (a site
role for every tab, an aggregator role for the dashboard) composed from the protocols of this
crate: [`crate::secagg`], [`crate::cape`] and the per-site [`crate::accountant::Ledger`].

- [`mean`]: the private mean of the sites' rows, CAPE over the real SecureAgg (spec
  cape-secagg-pca-djica §2–§3).
- [`regression`]: capeFM (spec cape-fm §4) run by the mean study's roles with
  [`mean::Query::Regression`]: what a site releases, the model the dashboard fits.
- [`iterative`]: J rounds of state → noisy local statistic → average → update, with all CAPE
  noise from one upfront SecureAgg run; first instance: the network of [`crate::nn`].
- [`efpsn`]: EFPSN (seed 003) with every site an agent on a graph, peer to peer; the dashboard
  announces and observes.
- [`admission`]: how an invitation ends when fewer than t sites accept (every study's count).
- [`gate`]: how a site role reaches its privacy ledger, and the all-or-nothing spend that stands
  between a computed release and the message that carries it.
- [`ledger_report`]: the totals a site reports to the dashboards (`ledger/report`).

Every study is named by a random [`StudyId`] that travels in each of its messages, so messages of
two studies in one room never mix.
*/

pub mod admission;
pub mod efpsn;
pub mod gate;
pub mod iterative;
pub mod ledger_report;
pub mod mean;
pub mod regression;

use serde::{Deserialize, Serialize};

/// The 128-bit id of one study, chosen at random by the aggregator. In JSON it is a hex string;
/// on the wire (postcard) 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StudyId(pub [u8; 16]);

impl StudyId {
    /// All 32 hex digits.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Parses the 32 hex digits of [`Self::to_hex`].
    pub fn from_hex(hex: &str) -> Option<Self> {
        if hex.len() != 32 || !hex.is_ascii() {
            return None;
        }
        let mut id = [0u8; 16];
        for (i, byte) in id.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(StudyId(id))
    }
}

impl std::fmt::Display for StudyId {
    /// The first 8 hex digits, enough to tell studies apart on screen.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex()[..8])
    }
}

impl Serialize for StudyId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.serialize_str(&self.to_hex())
        } else {
            self.0.serialize(serializer)
        }
    }
}

impl<'de> Deserialize<'de> for StudyId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            let hex = String::deserialize(deserializer)?;
            StudyId::from_hex(&hex).ok_or_else(|| {
                serde::de::Error::custom(format!("study id {hex:?} is not 32 hex digits"))
            })
        } else {
            <[u8; 16]>::deserialize(deserializer).map(StudyId)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_hex_in_json_and_bytes_on_the_wire() {
        let id = StudyId([0xab; 16]);
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, format!("\"{}\"", "ab".repeat(16)));
        assert_eq!(serde_json::from_str::<StudyId>(&json).unwrap(), id);
        assert_eq!(crate::codec::encode(&id).len(), 16);
        assert_eq!(crate::codec::decode::<StudyId>("id", &crate::codec::encode(&id)).unwrap(), id);
        assert!(serde_json::from_str::<StudyId>("\"abc\"").is_err());
        assert_eq!(id.to_string(), "abababab");
    }
}
