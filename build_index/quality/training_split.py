"""Which training tools the fine-tuned model never sees, so no-match can be calibrated on unseen tools.

Every customer catalog is made of tools the model was not trained on; a no-match threshold read from
queries about trained-on tools would sit too high (their cosines are inflated) and refuse real requests.
So one tool in five of each training set is held out of `toolrec model finetune`, and
`toolrec calibrate-score` reads only the queries that need such a tool.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

HELD_OUT_ONE_IN = 5
# The sets the shipped model was fine-tuned on; the order is part of the recipe: it fixes the shuffle.
TRAINING_SETS = ("metatool", "bfcl", "toolalpaca", "callnavi", "nestful", "restbench")


def is_held_out(set_name: str, tool_id: str) -> bool:
    """Chosen by hash of "set/tool_id": the same split on every run, machine and Python version."""
    digest = hashlib.sha256(f"{set_name}/{tool_id}".encode()).hexdigest()
    return int(digest, 16) % HELD_OUT_ONE_IN == 0


def needs_held_out_tool(set_name: str, groups: Iterable[Iterable[str]]) -> bool:
    """True for a query (its groups of acceptable tools) that the fine-tune must not train on."""
    return any(is_held_out(set_name, tool_id) for group in groups for tool_id in group)


def unseen_by_model(set_name: str, groups: Iterable[Iterable[str]]) -> bool:
    """True for a query the model never trained on: every query of a set outside TRAINING_SETS, and the
    held-out queries of those inside it."""
    return set_name not in TRAINING_SETS or needs_held_out_tool(set_name, groups)
