#!/usr/bin/env python3
"""The PLD workload of `cape bench pld` in Google's dp-accounting 0.6.0 (PLDAccountant, add/remove
neighbours, pessimistic connect-the-dots): T = 20000 Poisson-subsampled Gaussian releases,
z = 2.042, q = 100/30162, delta = 1e-5, grid steps 1e-4 and 1e-3. Prints one JSON line
{"bench":"pld","runner":"dp-accounting","cases":[...]} with the median time of the whole query."""

import json
import statistics
import sys
import time

from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant


def time_case(interval, repetitions):
    """The whole query at one grid step, `repetitions` times: its ε and the median time.
    scripts/bench_python.py times dp-accounting with this too."""
    times, eps = [], None
    for _ in range(repetitions):
        start = time.perf_counter()
        acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=interval)
        acc.compose(dp_event.PoissonSampledDpEvent(100 / 30162, dp_event.GaussianDpEvent(2.042)),
                    20000)
        eps = acc.get_epsilon(1e-5)
        times.append((time.perf_counter() - start) * 1e3)
    return {"interval": interval, "epsilon": eps,
            "median_ms": statistics.median(times), "repetitions": repetitions}


def main():
    repetitions = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    cases = [time_case(interval, repetitions) for interval in (1e-4, 1e-3)]
    print(json.dumps({"bench": "pld", "runner": "dp-accounting", "cases": cases}))


if __name__ == "__main__":
    main()
