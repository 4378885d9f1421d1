"""A site's privacy ledger: releases are charged at the tighter of RDP and PLD (and the ledger says
which), a release over budget is refused before it is made, and the ledger is saved as the same
JSON the browser app imports and exports."""

import capelab
from capelab.accountant import InsufficientBudget, Ledger

ledger = Ledger("Clinic North", epsilon=1.5, delta=1e-5)

# DP-VI's 20 000 steps on Poisson batches of 100 out of 30 162 records, noise multiplier 2.042.
entry = ledger.spend_gaussian("dp-vi", 2.042, count=20_000, sampling_rate=100 / 30162, label="DP-SGD step")
print(f"after DP-VI: ε = {ledger.spent:.3f} by {entry['bound'].upper()} (RDP alone: {ledger.spend()['rdp']:.3f})")

# One CAPE mean release, seen by colluding sites (c_S of the full view among 4 sites).
c_s = capelab.cape.collusion_factor(4)
ledger.spend_gaussian("private mean", 8.0, collusion_factor=c_s, label="CAPE round")
print(f"after a CAPE round: ε = {ledger.spent:.3f}, {ledger.remaining:.3f} left")

try:
    ledger.spend_gaussian("too much", 1.0, count=50)
except InsufficientBudget as refusal:
    print("refused:", str(refusal).split(":", 1)[1].strip()[:90], "…")

text = ledger.to_json()  # what the browser's "Export ledger" writes
again = Ledger.from_json(text)  # replayed and checked release by release
print(f"saved and read back: {len(again)} releases, ε = {again.spent:.3f}")
