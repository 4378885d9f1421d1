import capelab
print(capelab.accountant.epsilon(2.042, 20_000, 1e-5, sampling_rate=100 / 30162))  # DP-VI's setting: ε ≈ 0.909 under PLD
study = capelab.djica.synthetic(sites=3, subjects=24, seed=1)  # three numpy arrays (voxels × time) and the true maps
result = capelab.djica.run(study.sites, study.truth, timepoints=study.timepoints, seed=1)  # capePCA + capeDJICA
print(f"q_NGI = {result.q_ngi:.3f} at ε = {result.epsilon:.1f}, δ = {result.delta:g} ({result.accountant})")
