"""capePCA + capeDJICA on your own per-site arrays (voxels × time points), without ground truth:
normalise with a public scale, run, and read the unmixing, the maps and the privacy account.
Here the arrays are random stand-ins of the right shape."""

import numpy as np

import capelab

rng = np.random.default_rng(0)
voxels, timepoints = 100, 60
sites = [rng.standard_normal((voxels, 4 * timepoints)) * 50 for _ in range(3)]  # 4 subjects per site

result = capelab.djica.run(
    sites, components=5, timepoints=timepoints, normalise=True, data_scale=0.002,
    pca="cape", eps_pca=1.0, target_epsilon=100.0, max_iterations=200, seed=7,
)
print(f"unmixing {result.unmixing.shape}, maps {result.maps.shape}, stopped: {result.stop}")
print(f"capeDJICA: ε = {result.epsilon_at_max:.2f} at δ = {result.delta:g} over J_max in the {result.guarantee_view} view "
      f"({result.accountant}); ε_i = {result.eps_iter:.4f} per iteration")
print(f"capePCA's own budget: ε_p = {result.privacy['pca']['epsilon_per_release']}, "
      f"δ_p = {result.privacy['pca']['delta_per_release']}")
