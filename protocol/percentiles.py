"""Percentiles by the method a document declares (docs/protocol.md): the one percentile helper, used by the checks,
the statistics and the runners (which report nearest-rank percentiles).

Every declared method but one is a numpy `quantile` method. MLPerf LoadGen's is not: it sorts the samples and
takes the one at 0-based index floor(n·q), which numpy names no method for ("higher" picks another sample when
n·q has a fraction above q), so it is computed here as LoadGen does.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

LOADGEN = "loadgen"

# Declared method -> how it is computed: numpy's method name, or LOADGEN for LoadGen's own rule.
NUMPY_METHOD = {
    "nearest-rank": "inverted_cdf",
    "linear": "linear",
    "lower": "lower",
    "higher": "higher",
    "midpoint": "midpoint",
    "hazen": "hazen",
    "weibull": "weibull",
    "median-unbiased": "median_unbiased",
    "normal-unbiased": "normal_unbiased",
    "loadgen": LOADGEN,
}


def quantile(samples: npt.ArrayLike, q: float, method: str) -> npt.NDArray[np.float64]:
    """Quantile q (0-1, not 0-100) along the last axis; `method` is a numpy method name or LOADGEN.

    There is no default method: the checks follow what a document declares, the runners report nearest-rank
    (NUMPY_METHOD["nearest-rank"]), and numpy's own default (linear) is right for neither.
    """
    a = np.asarray(samples, dtype=np.float64)
    if method == LOADGEN:
        n = a.shape[-1]
        return np.asarray(np.sort(a, axis=-1)[..., min(int(n * q), n - 1)], dtype=np.float64)
    return np.asarray(np.quantile(a, q, axis=-1, method=method), dtype=np.float64)  # type: ignore[call-overload]
