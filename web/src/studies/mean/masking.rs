//! How a private-mean study masks, in words for the dashboard: SecAgg+'s neighbourhoods and the
//! failure bound of [`capelab_core::secagg::graph`] for the room's size (issue 14 item 3).

use capelab_core::secagg;
use capelab_core::study::mean::Masking;

use crate::components::charts::scale::format_value;

/// What SecAgg+ with these parameters does among `sites` sites, with the failure bound of
/// [`capelab_core::secagg::graph`] for one dropout and one colluder; `None` on the complete graph.
pub fn masking_sentence(masking: Masking, sites: usize) -> Option<String> {
    let Masking::SecAggPlus { k, threshold } = masking else { return None };
    let (drop, corrupt, split) = secagg::failure_bound_log2(sites, k, threshold, 1, 1);
    let log2 = (drop.exp2() + corrupt.exp2() + split.exp2()).log2();
    let bound = if log2 == f64::NEG_INFINITY {
        "0: one dropout and one colluder can neither empty a neighbourhood below t nor split \
         the graph"
            .to_owned()
    } else if log2 < 0.0 {
        format!("at most 2^{}", format_value(log2))
    } else {
        "not bounded below 1 at this size (the complete graph is the safer choice for a small \
         room)"
            .to_owned()
    };
    Some(format!(
        "SecAgg+: each site exchanges keys, shares and masks with k = {k} of the other {} sites \
         (a Harary graph over a permutation the dashboard draws for every attempt), and each \
         neighbourhood of k + 1 = {} sites must keep t = {threshold} of them to the end. With one \
         site dropping out and one colluding with the dashboard, the chance that a round fails or \
         exposes a site is {bound}.",
        sites - 1,
        k + 1,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_masking_sentence_states_the_graph_and_an_honest_bound() {
        assert_eq!(masking_sentence(Masking::Complete, 5), None);
        // a classroom: four sites, k = 2: no useful bound, and the page says so
        let small = masking_sentence(Masking::secagg_plus_for(4).unwrap(), 4).unwrap();
        assert!(small.contains("k = 2 of the other 3 sites"), "{small}");
        assert!(small.contains("not bounded below 1"), "{small}");
        // a large room: the default degree gives a bound well below 1
        let masking = Masking::secagg_plus_for(200).unwrap();
        let large = masking_sentence(masking, 200).unwrap();
        assert!(large.contains("is 0: one dropout"), "{large}");
        // in between, a bound below 1 but above 0: S = 6, k = 4 (two removed sites can cover
        // k/2 = 2 consecutive places of the cycle)
        let six = masking_sentence(Masking::secagg_plus_for(6).unwrap(), 6).unwrap();
        assert!(six.contains("is at most 2^-"), "{six}");
    }
}
