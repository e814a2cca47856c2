"""Where the benchmark sets, training sets and large catalogs live: ``../shared`` beside the repository.

They are read in place, never copied into the repository. ``TOOLREC_SHARED_DIR`` points elsewhere (a clone in
another folder, or a missing folder to check what runs without them); the tests and ``toolrec bench`` read it here.
"""

from __future__ import annotations

import os
from pathlib import Path

SHARED_DIR_VARIABLE = "TOOLREC_SHARED_DIR"
BESIDE_THE_REPOSITORY = Path(__file__).resolve().parents[2].parent / "shared"


def shared_dir() -> Path:
    configured = os.environ.get(SHARED_DIR_VARIABLE)
    return Path(configured) if configured else BESIDE_THE_REPOSITORY
