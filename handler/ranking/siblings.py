"""The action among siblings: a second stage that reorders the first tool and its same-app siblings among the
leading candidates (issue 31 item 2; PRODUCT.md §1 lets it read their parameter *names*).

The ranking finds the right app more often than the right action of it (create vs update, search vs list, WhoAmI
for a question about someone else). Over the first ``CANDIDATES`` tools of one step, the first and the tools of its
app among them are rescored by a linear head over sibling_features.FEATURES (the ranking's own evidence, the action
the task asks against the one each name says, identity tools, the task's values against parameter names) and put
back, best first, into the places they held: a tool of another app keeps its place, nothing is added or dropped,
and a list without a sibling of its first tool is left alone, so the cost is paid only there. The score stays the
place's: each place keeps the probability it had (confidence.py), so it never rises down the list.

The head is fit listwise on training rows only (`toolrec train-siblings`, build_index/quality/siblings_fit.py) and
shipped as ``siblings_head.json``, read once when this module is imported (a cold start). Measured leave-one-set-out:
docs/quality.md "The action among siblings".
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from handler.ranking.sibling_features import FEATURES, asks_who_the_caller_is, candidate_rows, is_identity

CANDIDATES = 5  # the leading places the stage may reorder: never past select's default top_k
HEAD_FILE = Path(__file__).with_name("siblings_head.json")
SAME_APP = FEATURES.index("same_app_as_first")

Schemas = Callable[[int], Mapping[str, Any]]  # a tool's input schema by its position in the index


@dataclass(frozen=True)
class SiblingHead:
    """A fitted head: one weight per sibling_features.FEATURES (a bias would not change an order)."""

    weights: npt.NDArray[np.float64]

    def __post_init__(self) -> None:
        if self.weights.shape != (len(FEATURES),):
            raise ValueError(f"a sibling head needs {len(FEATURES)} weights, not {self.weights.shape}")

    @classmethod
    def from_json(cls, text: str) -> SiblingHead:
        """``{"weights": {feature: weight}}``; a missing or unknown feature is an error naming it."""
        given = json.loads(text)["weights"]
        unknown = sorted(set(given) - set(FEATURES))
        missing = [name for name in FEATURES if name not in given]
        if unknown or missing:
            raise ValueError(f"sibling head: unknown features {unknown}, missing {missing}")
        return cls(np.array([float(given[name]) for name in FEATURES], dtype=np.float64))

    def to_json(self, **about: Any) -> str:
        weights = {name: round(float(w), 6) for name, w in zip(FEATURES, self.weights, strict=True)}
        return json.dumps({**about, "weights": weights}, indent=1) + "\n"


def shipped_head() -> SiblingHead:
    """The shipped head: a package without it fails at its cold start, never ranks without the stage unsaid."""
    return SiblingHead.from_json(HEAD_FILE.read_text(encoding="utf-8"))


SHIPPED_HEAD = shipped_head()


def parameters_of(schema: Mapping[str, Any]) -> tuple[tuple[str, ...], int]:
    """A tool's parameter names and how many are required: all the stage reads of its schema."""
    properties = schema.get("properties")
    required = schema.get("required")
    names = tuple(str(name) for name in properties) if isinstance(properties, Mapping) else ()
    return names, len(required) if isinstance(required, list) else 0


def sibling_order(
    head: SiblingHead,
    task: str,
    names: Sequence[str],
    schemas: Schemas | None,
    chosen: Sequence[int],
    evidence: npt.NDArray[np.float64],
) -> list[int]:
    """The places of ``chosen`` (best first) in their new order: a permutation of range(len(chosen)) that moves only
    the first tool and its same-app siblings among the first CANDIDATES (the identity where it has none), then puts
    the first tool that is not an identity tool first unless the task asks who the caller is."""
    order = _by_head(head, task, names, schemas, chosen, evidence)
    return _identity_not_first(task, [names[chosen[p]] for p in order[:CANDIDATES]], order)


def _identity_not_first(task: str, leading: Sequence[str], order: list[int]) -> list[int]:
    """An identity tool (WhoAmI) answers only who the caller is (issue 31): for any other task the first of the
    leading tools that is not one goes before it. The head cannot learn this: no training catalog has such a tool,
    so its identity weights are fit to zero."""
    if not leading or not is_identity(leading[0]) or asks_who_the_caller_is(task):
        return order
    other = next((p for p, name in enumerate(leading) if not is_identity(name)), None)
    return order if other is None else [order[other], *order[:other], *order[other + 1 :]]


def _by_head(
    head: SiblingHead,
    task: str,
    names: Sequence[str],
    schemas: Schemas | None,
    chosen: Sequence[int],
    evidence: npt.NDArray[np.float64],
) -> list[int]:
    """The first tool and its same-app siblings among the first CANDIDATES, reordered by the head."""
    leading = list(chosen[:CANDIDATES])
    order = list(range(len(chosen)))
    if len(leading) < 2:
        return order
    own = [names[i] for i in leading]
    first_app = own[0].rsplit(".", 1)[0].lower() if "." in own[0] else ""
    if not first_app or not any(name.lower().startswith(first_app + ".") for name in own[1:]):
        return order  # no sibling of the first: the ranking's order stands, at no cost
    found = [parameters_of(schemas(i)) if schemas is not None else ((), 0) for i in leading]
    rows = candidate_rows(task, own, [p for p, _ in found], [r for _, r in found], evidence[: len(leading)])
    group = [0] + [p for p in range(1, len(leading)) if rows[p, SAME_APP] > 0]
    scores = (rows[group] * head.weights).sum(axis=1)  # row-wise, as confidence.py: no BLAS rounding by row count
    ranked = [group[i] for i in np.lexsort((np.arange(len(group)), -scores))]  # ties keep the ranking's order
    for place, moved in zip(group, ranked, strict=True):
        order[place] = moved
    return order
