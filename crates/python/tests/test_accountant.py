"""capelab.accountant: the issue's test vector, equality with `cape account`, and the cross-check
against Google's dp-accounting through the package (the settings of tests/accounting/crosscheck.py)."""

from __future__ import annotations

import math
import sys
import time

import pytest
from conftest import REPO, plain

from capelab import accountant

sys.path.insert(0, str(REPO / "tests" / "accounting"))
import crosscheck  # noqa: E402  (its grids and tolerances, and dp-accounting through it)

DPVI = dict(noise_multiplier=2.042, compositions=20_000, delta=1e-5, sampling_rate=100 / 30162)


def test_the_dp_vi_setting_is_0_909_under_pld_and_0_995_under_rdp():
    pld = accountant.epsilon(**DPVI)
    assert pld.accountant == "PLD" and pld.interval == accountant.DEFAULT_PLD_INTERVAL
    assert abs(pld.epsilon - 0.909) < 1e-3, pld
    rdp = accountant.epsilon(**DPVI, accountant="rdp")
    assert rdp.accountant == "RDP" and abs(rdp.epsilon - 0.995) < 1e-3, rdp
    assert "PLD" in str(pld) and "δ = 1e-05" in str(pld)


def test_unsampled_gaussians_compose_exactly_under_pld():
    e = accountant.epsilon(6.215, 200, 1e-5)
    assert e.exact and e.interval is None
    # 200 releases at z are one release at z/√200: the same ε.
    one = accountant.epsilon(6.215 / math.sqrt(200), 1, 1e-5)
    assert abs(e.epsilon - one.epsilon) < 1e-9


def test_delta_inverts_epsilon():
    for kind in ("pld", "rdp"):
        e = accountant.epsilon(**DPVI, accountant=kind)
        d = accountant.delta(DPVI["noise_multiplier"], DPVI["compositions"], e.epsilon,
                             sampling_rate=DPVI["sampling_rate"], accountant=kind)
        assert d.accountant == e.accountant
        assert d.delta <= 1e-5 * (1 + 1e-6), (kind, d)


def test_calibration_meets_the_target_with_the_least_noise():
    c = accountant.calibrate(0.909, 1e-5, 20_000, sampling_rate=100 / 30162)
    assert c.accountant == "PLD" and c.epsilon <= 0.909
    assert abs(c.noise_multiplier - 2.042) / 2.042 < 5e-3, c
    rdp = accountant.calibrate(0.909, 1e-5, 20_000, sampling_rate=100 / 30162, accountant="rdp")
    assert rdp.noise_multiplier > c.noise_multiplier  # PLD saves noise


@pytest.mark.parametrize(
    "flags, kwargs",
    [
        (["--noise-multiplier", "6.215", "--compositions", "200", "--delta", "1e-5", "--collusion-factor", "1.295238", "--curve"],
         dict(noise_multiplier=6.215, compositions=200, delta=1e-5, collusion_factor=1.295238, curve=True)),
        (["--noise-multiplier", "2.042", "--compositions", "20000", "--delta", "1e-5", "--sampling-rate", repr(100 / 30162),
          "--target-epsilon", "1.0"],
         dict(noise_multiplier=2.042, compositions=20_000, delta=1e-5, sampling_rate=100 / 30162, target_epsilon=1.0)),
        (["--noise-multiplier", "0.8", "--compositions", "10", "--delta", "1e-3", "--orders", "1.5,2..64,128", "--accountant", "rdp"],
         dict(noise_multiplier=0.8, compositions=10, delta=1e-3, orders=[1.5, *range(2, 65), 128], accountant="rdp")),
    ],
)
def test_compare_equals_cape_account(cli, flags, kwargs):
    expected = cli("account", *flags, "--json")
    ours = plain(accountant.compare(**kwargs))
    expected.pop("time_ms")
    assert ours == expected


def test_epsilon_equals_the_comparisons_pld_and_rdp_figures():
    report = accountant.compare(2.042, 20_000, 1e-5, sampling_rate=100 / 30162, collusion_factor=1.295238)
    assert accountant.epsilon(**DPVI).epsilon == report["pld"]["aggregator"]["epsilon"]
    colluding = accountant.epsilon(**DPVI, collusion_factor=1.295238)
    assert colluding.epsilon == report["pld"]["collusion_aware"]["epsilon"]
    rdp = accountant.epsilon(**DPVI, accountant="rdp")
    assert rdp.epsilon == report["epsilon_rdp_improved"]


PLD_CASES = [
    (z, q, t, d)
    for z in crosscheck.PLD_GRID_Z
    for q in crosscheck.PLD_GRID_Q
    for t in crosscheck.PLD_GRID_T
    for d in crosscheck.PLD_GRID_DELTA[:1]
    if (z, t) != (0.5, 20_000)  # ε is in the hundreds there; the CLI's cross-check covers it
]


@pytest.mark.parametrize("z, q, t, delta", PLD_CASES)
def test_pld_against_dp_accounting(z, q, t, delta):
    """crosscheck.py's `pld_vs_dpacc` check, on the package: within 1e-3 absolute or 0.5 %."""
    ours = accountant.epsilon(z, t, delta, sampling_rate=q, pld_interval=crosscheck.PLD_INTERVAL)
    h = crosscheck.PLD_INTERVAL
    if q is None:
        sd = z / math.sqrt(t)
        h = max(h, 2 * (19.5 / sd + 1 / sd**2) / crosscheck.PLD_MAX_POINTS)
    acc = crosscheck.pld_privacy_accountant.PLDAccountant(value_discretization_interval=h)
    acc.compose(crosscheck.dp_event(z, q), t)
    theirs = acc.get_epsilon(delta)
    assert abs(ours.epsilon - theirs) <= max(crosscheck.PLD_ABS, crosscheck.PLD_REL * abs(theirs)), (ours, theirs)
    rdp = accountant.epsilon(z, t, delta, sampling_rate=q, accountant="rdp")
    assert ours.epsilon <= rdp.epsilon * (1 + 1e-9)


@pytest.mark.parametrize("z, q", [(2.042, None), (6.215, None), (2.042, 0.01), (1.0, 100 / 30162)])
def test_rdp_against_dp_accounting_on_integer_orders(z, q):
    """crosscheck.py's `eps_*_int_orders`: the same curve and conversion on orders 2..256."""
    orders = list(range(2, 257))
    ours = accountant.compare(z, 200, 1e-5, sampling_rate=q, orders=orders, accountant="rdp")
    acc = crosscheck.rdp_privacy_accountant.RdpAccountant(orders)
    acc.compose(crosscheck.dp_event(z, q), 200)
    theirs = acc.get_epsilon(1e-5)
    assert abs(ours["epsilon_rdp_improved_grid"] - theirs) / theirs < crosscheck.TIGHT


def test_the_gil_is_released_while_accounting():
    """A PLD composition runs on another thread while this one keeps counting."""
    import threading

    ticks = 0
    done = threading.Event()

    def work():
        accountant.epsilon(1.0, 20_000, 1e-5, sampling_rate=0.02, pld_interval=5e-5)
        done.set()

    thread = threading.Thread(target=work)
    start = time.monotonic()
    thread.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    thread.join()
    assert time.monotonic() - start > 0.02 and ticks > 5, ticks


class TestLedger:
    def test_charges_the_tighter_accountant_and_names_it(self):
        ledger = accountant.Ledger("Clinic North", 2.0, 1e-5)
        entry = ledger.spend_gaussian("dpvi", 2.042, count=20_000, sampling_rate=100 / 30162, time_ms=1)
        assert entry["bound"] == "pld"
        assert abs(ledger.spent - accountant.epsilon(**DPVI).epsilon) < 1e-12
        assert ledger.spend()["rdp"] > ledger.spent
        assert abs(ledger.remaining - (2.0 - ledger.spent)) < 1e-12
        assert "PLD" in repr(ledger)

    def test_refuses_a_release_over_budget_and_records_nothing(self):
        ledger = accountant.Ledger("site", 1.0, 1e-5)
        ledger.spend_gaussian("a", 20.0, count=5, time_ms=5)
        before = ledger.to_json()
        preview = ledger.preview_gaussian("b", 1.0, count=100)
        assert not preview["within_budget"]
        with pytest.raises(accountant.InsufficientBudget, match="nothing was recorded"):
            ledger.spend_gaussian("b", 1.0, count=100, time_ms=6)
        assert ledger.to_json() == before and len(ledger) == 1

    def test_json_round_trip_is_the_browsers_format(self):
        ledger = accountant.Ledger("Clinic North", 3.0, 1e-5)
        ledger.spend_gaussian("mean", 10.0, collusion_factor=1.8666666666666667, label="round 1", time_ms=10)
        ledger.spend_approximate("efpsn", 0.5, 1e-7, count=2, label="run", time_ms=20)
        text = ledger.to_json()
        import json

        file = json.loads(text)
        assert file["version"] == 3 and file["site"] == "Clinic North"
        assert set(file) == {"version", "site", "budget", "accounting", "releases"}
        back = accountant.Ledger.from_json(text)
        assert back.to_json() == text and back.spent == ledger.spent
        file["releases"][0]["epsilon_after"] += 0.1
        with pytest.raises(ValueError, match="json"):
            accountant.Ledger.from_json(json.dumps(file))

    def test_time_must_not_go_backwards(self):
        ledger = accountant.Ledger("site", 5.0, 1e-5)
        ledger.spend_gaussian("a", 10.0, time_ms=100)
        with pytest.raises(ValueError, match="time_ms"):
            ledger.spend_gaussian("b", 10.0, time_ms=50)
