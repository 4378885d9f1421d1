# Type stubs of the native module `capelab._capelab` (crates/python/src). The public API is the
# pure-Python modules beside this file, which check every argument and then call these; each
# returns plain Python objects (dicts, lists, floats) and float64 numpy arrays. tests/test_stubs.py
# checks that this file names exactly what the module exports.

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt

__version__: str

Array = npt.NDArray[np.float64]
Progress = Optional[Callable[[int, int], object]]

class InsufficientBudget(Exception): ...

class Ledger:
    def __init__(self, site: str, epsilon: float, delta: float) -> None: ...
    @staticmethod
    def from_json(json: str) -> Ledger: ...
    def to_json(self) -> str: ...
    @property
    def site(self) -> str: ...
    @property
    def budget(self) -> Tuple[float, float]: ...
    @property
    def spent(self) -> float: ...
    @property
    def remaining(self) -> float: ...
    @property
    def entries(self) -> List[Dict[str, Any]]: ...
    def spend(self) -> Dict[str, Any]: ...
    def spend_gaussian(
        self,
        study: str,
        noise_multiplier: float,
        *,
        count: int = 1,
        sampling_rate: Optional[float] = None,
        collusion_factor: float = 1.0,
        label: str = "",
        time_ms: Optional[int] = None,
    ) -> Dict[str, Any]: ...
    def spend_approximate(
        self,
        study: str,
        epsilon: float,
        delta: float,
        *,
        count: int = 1,
        label: str = "",
        time_ms: Optional[int] = None,
    ) -> Dict[str, Any]: ...
    def preview_gaussian(
        self,
        study: str,
        noise_multiplier: float,
        *,
        count: int = 1,
        sampling_rate: Optional[float] = None,
        collusion_factor: float = 1.0,
        label: str = "",
    ) -> Dict[str, Any]: ...
    def set_budget(self, epsilon: float, delta: float) -> None: ...
    def __len__(self) -> int: ...

class Posterior:
    def sample(self, rows: int, seed: Optional[int] = None) -> Tuple[List[str], List[List[str]], List[bool]]: ...
    def parameters(self) -> Dict[str, Any]: ...

def account_one(
    noise_multiplier: float,
    compositions: int,
    sampling_rate: Optional[float],
    collusion_factor: Optional[float],
    accountant: str,
    pld_interval: float,
    delta: Optional[float] = None,
    epsilon: Optional[float] = None,
) -> Dict[str, Any]: ...
def calibrate(
    target_epsilon: float,
    delta: float,
    compositions: int,
    sampling_rate: Optional[float],
    accountant: str,
    pld_interval: float,
) -> Dict[str, Any]: ...
def compare(
    noise_multiplier: float,
    compositions: int,
    delta: float,
    sampling_rate: Optional[float],
    collusion_factor: Optional[float],
    orders: Optional[Sequence[float]],
    curve: bool,
    accountant: str,
    target_epsilon: Optional[float],
    pld_interval: float,
) -> Dict[str, Any]: ...
def cape_collusion_factor(sites: int, colluders: Optional[int], beyond_trust_model: bool, view: str) -> Optional[float]: ...
def cape_release_privacy(
    sites: int, colluders: Optional[int], beyond_trust_model: bool, noise_multiplier: float, epsilon: float
) -> Dict[str, Any]: ...
def cape_classical_noise_multiplier(epsilon: float, delta: float) -> float: ...
def cape_round(
    values: Array, local_sd: Sequence[float], seed: int, round: int, drop_before: Sequence[int], drop_after: Sequence[int]
) -> Dict[str, Any]: ...
def cape_conventional_round(values: Array, local_sd: Sequence[float], seed: int, round: int) -> Dict[str, Any]: ...
def cape_estimate(releases: Array, senders: Sequence[int], contributors: Sequence[int]) -> List[float]: ...
def secagg_simulate(
    inputs: Array,
    bound: float,
    frac_bits: int,
    seed: int,
    threshold: Optional[int],
    harary_k: Optional[int],
    graph_seed: int,
    dropouts: Sequence[Tuple[int, str, str]],
    round_timeout_ms: int,
) -> Dict[str, Any]: ...
def secagg_choose_harary(sites: int, dropout: float, corruption: float, sigma: float) -> Dict[str, Any]: ...
def djica_synthetic(
    sites: int, subjects: int, components: int, grid: int, timepoints: int, preset: str, seed: int
) -> Dict[str, Any]: ...
def djica_normalise(x: Array, subject_lengths: Sequence[int], scale: float) -> Tuple[Array, int]: ...
def djica_pca(
    sites: Sequence[Array],
    subject_lengths: Sequence[Sequence[int]],
    components: int,
    private: bool,
    epsilon: float,
    delta: float,
    privacy_unit: str,
    rigorous: bool,
    method_name: str,
    normalise_scale: Optional[float],
    seed: int,
) -> Dict[str, Any]: ...
def djica_run(
    sites: Sequence[Array],
    subject_lengths: Sequence[Sequence[int]],
    truth: Optional[Array],
    settings: Dict[str, Any],
    progress: Progress = None,
) -> Dict[str, Any]: ...
def data_synthetic(task: str, total: int, train: int, features: int, seed: int) -> Dict[str, Any]: ...
def data_normalise(
    x_train: Array,
    y_train: Array,
    x_test: Array,
    y_test: Array,
    task: str,
    feature_bounds: Optional[Sequence[Tuple[float, float]]],
    target_bounds: Optional[Tuple[float, float]],
    data_dependent: bool,
) -> Dict[str, Any]: ...
def fm_fit(x: Array, y: Array, settings: Dict[str, Any]) -> Dict[str, Any]: ...
def fm_evaluate(
    model_name: str,
    w: Array,
    x_train: Array,
    y_train: Array,
    x_test: Array,
    y_test: Array,
    w_star: Optional[Array],
) -> Dict[str, Optional[float]]: ...
def nn_train(x_train: Array, y_train: Array, x_test: Array, y_test: Array, settings: Dict[str, Any]) -> Dict[str, Any]: ...
def efpsn_run(
    x: Optional[Array], labels: Optional[npt.NDArray[np.int64]], settings: Dict[str, Any], progress: Progress = None
) -> Dict[str, Any]: ...
def vvi_cps1988_schema() -> str: ...
def vvi_cps1988_split(csv: str) -> Tuple[List[str], List[int], List[int]]: ...
def vvi_fit(
    schema_json: str,
    train: Sequence[str],
    test: Optional[Sequence[str]],
    settings: Dict[str, Any],
    progress: Progress = None,
) -> Dict[str, Any]: ...
