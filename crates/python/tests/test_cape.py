"""capelab.cape: Theorem 1 equal to `cape mean`'s, the spec's test vector, and the privacy and
utility claims measured numerically on simulated rounds."""

from __future__ import annotations

import numpy as np
import pytest

from capelab import cape


def test_release_privacy_equals_cape_mean(cli):
    report = cli("mean", "--sites", "7", "--epsilon", "0.5", "--delta", "1e-5", "--trials", "1",
                  "--seed", "4", "--values-per-site", "40", "--json")
    ours = cape_release(report)
    assert ours.full_view.c_s == report["c_s_full_view"]
    assert ours.full_view.mu_z == report["mu_z"]
    assert ours.full_view.delta == report["delta_cape"]
    assert ours.full_view.delta_phi_bound == report["delta_cape_phi_bound"]
    assert ours.theorem1.c_s == report["c_s_theorem1"]
    assert ours.theorem1.mu_z == report["mu_z_theorem1"]
    assert ours.theorem1.delta == report["delta_cape_theorem1"]
    assert ours.paper_eq1_c_s == report["c_s_paper_eq1"]
    assert ours.paper_eq1_delta_phi_bound == report["delta_cape_paper_eq1"]
    assert ours.delta_conv == report["delta_conv"] and ours.delta_pool == report["delta_pool"]
    assert ours.colluders == report["colluders"] and ours.delta == report["delta_cape"]


def cape_release(report):
    return cape.release_privacy(report["sites"] - report["dropouts"], report["noise_multiplier"], report["epsilon"])


def test_the_spec_test_vector():
    # spec §2: S = 4, z = 10, ε = 0.5: Theorem 1 (exact) μ_z = 0.0064762, δ_pool = 4.658e-6,
    # δ_conv = 5.492e-2; the full view's c_S = 4·7/(5·3).
    r = cape.release_privacy(4, 10.0, 0.5)
    assert r.colluders == 1
    assert abs(r.theorem1.mu_z - 0.0064762) < 1e-7
    assert abs(r.full_view.c_s - 28 / 15) < 1e-12
    assert abs(r.delta_pool / 4.658e-6 - 1) < 1e-3 and abs(r.delta_conv / 5.492e-2 - 1) < 1e-3
    assert r.full_view.delta > r.theorem1.delta  # the full view knows more
    assert cape.collusion_factor(4) == r.full_view.c_s
    assert cape.collusion_factor(4, view="theorem1") == r.theorem1.c_s
    assert abs(cape.collusion_factor(4, view="paper_eq1") - 1.474510) < 1e-6


def test_beyond_the_trust_model_needs_saying_so():
    with pytest.raises(ValueError, match="colluders"):
        cape.release_privacy(6, 10.0, 0.5, colluders=3)
    r = cape.release_privacy(6, 10.0, 0.5, colluders=3, beyond_trust_model=True)
    assert not r.within_trust_model


def test_epsilon_at_or_below_the_loss_mean_has_no_delta():
    with pytest.raises(ValueError, match="epsilon"):
        cape.release_privacy(4, 0.5, 0.01)


def test_zero_sum_noise_cancels_exactly_and_the_estimate_is_the_mean():
    values = np.random.default_rng(0).random((5, 7))
    r = cape.simulate_round(values, 0.3, seed=11)
    assert r.contributors == [0, 1, 2, 3, 4] and r.refusal is None
    assert (r.zero_sum_noise.sum(axis=0) == 0).all()
    releases = np.stack(r.releases)
    assert np.array_equal(r.estimate, cape.estimate(releases, r.sites, r.contributors))
    again = cape.simulate_round(values, 0.3, seed=11)
    assert np.array_equal(again.estimate, r.estimate)


def test_a_site_leaving_after_its_noise_breaks_the_zero_sum():
    values = np.ones((5, 3))
    r = cape.simulate_round(values, 0.3, seed=2, drop_after_noise=[3])
    assert r.estimate is None and r.releases[3] is None
    assert "re-run the round" in r.refusal and "[1, 2, 3, 5]" in r.refusal  # ids are site + 1
    survivors = [s for s, x in zip(r.sites, r.releases) if x is not None]
    with pytest.raises(ValueError, match="releases"):
        cape.estimate(np.stack([x for x in r.releases if x is not None]), survivors, r.contributors)
    left_before = cape.simulate_round(values, 0.3, seed=2, drop_before_noise=[3])
    assert left_before.contributors == [0, 1, 2, 4] and left_before.estimate is not None


def test_each_message_carries_the_full_noise_but_the_average_only_the_pooled():
    """Lemma 1 and Proposition 1 measured: Var(â_s) ≈ τ², Var(a_cape) ≈ τ²/S², conventional τ²/S."""
    s, d, tau, trials = 4, 250, 0.5, 40
    values = np.zeros((s, d))
    cape_est, conv_est, messages = [], [], []
    for t in range(trials):
        r = cape.simulate_round(values, tau, seed=100 + t)
        cape_est.append(r.estimate)
        messages.append(np.stack(r.releases))
        conv_est.append(cape.simulate_conventional_round(values, tau, seed=100 + t)["estimate"])
    n = trials * d
    var_msg = np.var(np.stack(messages)) * n * s / (n * s - 1)
    var_cape = np.mean(np.square(cape_est))
    var_conv = np.mean(np.square(conv_est))
    # 10 000 samples: a variance is within ±5 % (about 3.5 standard errors)
    assert abs(var_msg / tau**2 - 1) < 0.05, var_msg
    assert abs(var_cape / (tau**2 / s**2) - 1) < 0.05, var_cape
    assert abs(var_conv / (tau**2 / s) - 1) < 0.05, var_conv


def test_classical_noise_multiplier():
    z = cape.classical_noise_multiplier(0.5, 1e-5)
    assert abs(z - np.sqrt(2 * np.log(1.25 / 1e-5)) / 0.5) < 1e-12
