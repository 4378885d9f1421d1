"""DP variational inference on CPS1988 split between two parties (demographics, financial), the
privacy each player gets, and a synthetic twin as a DataFrame. Run from the repository root
(scripts/setup.sh writes data/cps1988.csv)."""

import sys

from capelab import vertical_vi as vvi

path = sys.argv[1] if len(sys.argv) > 1 else "data/cps1988.csv"
df, parties = vvi.cps1988(path)
print(f"{len(df)} rows; parties: " + ", ".join(f"{p} {list(cols)}" for p, cols in parties.items()))

fit = vvi.fit(df, parties, mode="fixed", steps=300, seed=1)
print(f"test NLL {fit.test_nll[0]['test_nll']:.3f} → {fit.final_test_nll:.3f} after {fit.settings['steps']} steps")
for g in fit.privacy:
    print(f"  ε = {g.epsilon:8.4f} at δ = {g.delta:g} for {g.viewer} ({g.adjacency}; {g.accountant})")

twin = fit.synthetic(1000)
print(twin.head())
print("share part-time: real {:.3f}, twin {:.3f}".format((df["parttime"] == "yes").mean(), (twin["parttime"] == "yes").mean()))
