"""SecureAgg with sites that vanish mid-round, and SecAgg+ on a sparse graph: the sum is exact
over the survivors, and a site's cost grows with its neighbourhood, not with the room."""

import numpy as np

from capelab import secagg

rng = np.random.default_rng(0)
inputs = rng.uniform(-1, 1, size=(10, 1000))  # 10 sites, 1000 values each, |x| ≤ 1

r = secagg.simulate(inputs, bound=1.0, seed=1, dropouts=[(3, "after_share_keys", "silent"), (7, "after_masked_input")])
exact = np.sum([r.sites[i].quantised_input for i in r.survivors], axis=0)
print(f"survivors {r.survivors}: sum exact = {np.array_equal(r.sum, exact)}, "
      f"virtual time {r.finished_at_ms} ms (site 3 cost a deadline)")
for d in r.dropouts:
    print(f"  site {d['site']} dropped in {d['phase']} ({d['reason']})")

sites = 60
choice = secagg.choose_harary(sites, dropout_fraction=0.05, corruption_fraction=0.05, sigma=20)
x = rng.uniform(-1, 1, size=(sites, 100))
complete = secagg.simulate(x, bound=1.0, seed=2)
plus = secagg.simulate(x, bound=1.0, seed=2, harary_k=choice["k"], threshold=choice["threshold"])
per_site = lambda round_: np.mean([s.bytes_sent for s in round_.sites]) / 1e3  # noqa: E731
print(f"S = {sites}: a site sends {per_site(complete):.0f} kB on the complete graph, "
      f"{per_site(plus):.0f} kB with SecAgg+ (k = {choice['k']}, t = {choice['threshold']}); "
      f"same sum: {np.array_equal(plus.sum, complete.sum)}")
