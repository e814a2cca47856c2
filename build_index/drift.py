"""Drift check: replay a fixed query set against a deployed (or local) endpoint and compare with a golden file.

Small details move results (text formatting, a model or onnxruntime change, a catalog edit), so every stage is
re-checked nightly against results recorded from a known-good build. Tolerance, per query, on the top 5:

- the top-1 tool must be the recorded one;
- at least 4 of the recorded top 5 must still be in the top 5 (order below the first may change: int8 kernels on
  another CPU can swap near-ties).

Anything beyond that is drift: the report names each query that moved, what it expected and what it got.

Each task of the query set names the tools a person checked as right for it (``task => App.Tool, ...``), and a
golden carries them: a recorded top-1 that is not one of them is marked ``known_wrong``, never passed off as
known-good, and a later build that answers it right has not drifted but improved.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import httpx
from pydantic import BaseModel, Field

from handler.api.schemas import SELECT_TOP_K_DEFAULT
from handler.ranking.recommend import recommend

if TYPE_CHECKING:
    from handler.index.load import Index
    from handler.ranking.query import Embedder

TOP_K = SELECT_TOP_K_DEFAULT  # the answer an agent receives by default
MIN_OVERLAP = 4
GOLDEN_VERSION = 1


class GoldenQuery(BaseModel):
    task: str = Field(min_length=1)
    right: list[str] = Field(min_length=1, description="the tools a person checked as right for the task")
    expected: list[str] = Field(description="tool names, best first, as recorded")
    known_wrong: bool = Field(default=False, description="the recorded top-1 is not one of the right tools")


@dataclass(frozen=True)
class CheckedTask:
    task: str
    right: list[str]


class Golden(BaseModel):
    version: int = GOLDEN_VERSION
    recorded_at: str
    recorded_from: str = Field(description="the build id healthz reported while recording")
    user_id: str
    gateway_id: str | None = None
    top_k: int = TOP_K
    queries: list[GoldenQuery] = Field(min_length=1)


@dataclass(frozen=True)
class Moved:
    task: str
    expected: list[str]
    got: list[str]
    reason: str


@dataclass(frozen=True)
class DriftReport:
    checked: int
    build_id: str | None
    moved: list[Moved]

    def format(self) -> str:
        lines = [f"{self.checked} queries against build {self.build_id}: {len(self.moved)} moved"]
        for item in self.moved:
            lines.append(f"  MOVED {item.task!r}: {item.reason}")
            lines.append(f"        expected {item.expected}")
            lines.append(f"        got      {item.got}")
        return "\n".join(lines)


class Endpoint:
    """The REST API of one stage: one task per select request, so no result depends on what it was batched with."""

    def __init__(self, url: str, api_key: str, client: httpx.Client | None = None) -> None:
        self._client = client or httpx.Client(base_url=url.rstrip("/"), timeout=30.0)
        self._headers = {"Authorization": f"Bearer {api_key}"}

    def __enter__(self) -> Endpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.close()

    def build_id(self) -> str | None:
        response = self._client.get("/healthz")
        response.raise_for_status()
        build_id: str | None = response.json().get("build_id")
        return build_id

    def top(self, task: str, user_id: str, gateway_id: str | None, top_k: int) -> list[str]:
        body = {"tasks": [task], "user_id": user_id, "gateway_id": gateway_id, "top_k": top_k}
        response = self._client.post("/v1/tools/select", json=body, headers=self._headers)
        response.raise_for_status()
        return [s["tool_name"] for s in response.json()["results"][0]["suggestions"]]


class IndexEndpoint:
    """A build not yet published, answering as select does over its whole catalog: what a refresh checks before
    LATEST moves (the goldens are recorded for a user who may use every tool, with no gateway)."""

    def __init__(self, index: Index, embedder: Embedder) -> None:
        self._index, self._embedder = index, embedder

    def build_id(self) -> str | None:
        return self._index.manifest.build_id

    def top(self, task: str, user_id: str, gateway_id: str | None, top_k: int) -> list[str]:
        found = recommend(self._index.ranking, self._embedder, task, None, top_k)
        return [self._index.ranking.names[h.index] for h in found.hits]


class Answers(Protocol):
    def build_id(self) -> str | None: ...

    def top(self, task: str, user_id: str, gateway_id: str | None, top_k: int) -> list[str]: ...


def read_queries(path: Path) -> list[CheckedTask]:
    """One ``task => App.Tool, ...`` per line (the tools right for it); blank lines and '#' lines are skipped."""
    tasks = []
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        task, arrow, names = line.partition("=>")
        right = [name.strip() for name in names.split(",") if name.strip()]
        if not arrow or not task.strip() or not right:
            raise ValueError(f"{path}:{number}: expected 'task => App.Tool, ...' (the tools right for the task)")
        tasks.append(CheckedTask(task.strip(), right))
    return tasks


def record(endpoint: Answers, tasks: Sequence[CheckedTask], user_id: str, gateway_id: str | None = None) -> Golden:
    """The endpoint's answers as a golden, each marked ``known_wrong`` when its top-1 is not a right tool."""
    build_id = endpoint.build_id() or "unknown"
    queries = []
    for task in tasks:
        got = endpoint.top(task.task, user_id, gateway_id, TOP_K)
        wrong = not got or got[0] not in task.right
        queries.append(GoldenQuery(task=task.task, right=task.right, expected=got, known_wrong=wrong))
    return Golden(
        recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
        recorded_from=build_id,
        user_id=user_id,
        gateway_id=gateway_id,
        queries=queries,
    )


def compare(expected: list[str], got: list[str], top_k: int = TOP_K) -> str | None:
    """Why a query drifted, or None when it is within tolerance."""
    if expected[:1] != got[:1]:
        return f"top-1 changed from {expected[0] if expected else None} to {got[0] if got else None}"
    kept = len(set(expected[:top_k]) & set(got[:top_k]))
    needed = min(MIN_OVERLAP, len(expected[:top_k]))
    if kept < needed:
        return f"only {kept} of the recorded top {len(expected[:top_k])} still in the top {top_k} (need {needed})"
    return None


def check(endpoint: Answers, golden: Golden) -> DriftReport:
    moved = []
    for query in golden.queries:
        got = endpoint.top(query.task, golden.user_id, golden.gateway_id, golden.top_k)
        if query.known_wrong and got[:1] and got[0] in query.right:
            continue  # answered right now: an improvement to record, not drift
        reason = compare(query.expected, got, golden.top_k)
        if reason:
            moved.append(Moved(query.task, query.expected, got, reason))
    return DriftReport(len(golden.queries), endpoint.build_id(), moved)


def load_golden(path: Path) -> Golden:
    return Golden.model_validate_json(path.read_text())


def write_golden(path: Path, golden: Golden) -> None:
    path.write_text(json.dumps(golden.model_dump(mode="json"), indent=2) + "\n")
