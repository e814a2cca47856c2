"""The numpy array types the ranking core, the index and the build pass around, named once."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]
DoubleArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int32]
IndexArray = npt.NDArray[np.intp]  # positions into the index's tools
