"""The dense signal of a large catalog: a coarse scan of every tool, then exact cosines for the few that can matter.

One exact int8 scan reads 384 bytes per tool, and the scan is bound by memory bandwidth: ~30 ms at a million tools on
one core, more than a whole select may take (issue #27). A build of ``COARSE_MIN_TOOLS`` or more tools also stores
each tool's vector in the ``COARSE_DIMENSIONS`` principal directions of the catalog's vectors (the directions that
hold most of their variance, found on a sample; int8, a sixth of the bytes). A query scans those, keeps the allowed
tools whose estimate is among the best ``COARSE_SHARE`` of the catalog (at least ``MIN_CANDIDATES``) and the tools the
caller names (the lexical signal's voters), and scores exactly those, bit for bit as the full int8 scan would. Every
other tool keeps its estimate, capped below the candidates' threshold: it takes no semantic vote (those go to the
best 100) and enters the mean and spread the fusion standardizes by only where those are not in closed form (below).
What the approximation costs is measured against the exact scan: docs/performance.md "A million tools".

The mean and spread the fusion standardizes the semantic signal by are the whole catalog's exact cosines' even so, in
closed form (``CoarseSemantic.moments``: the query against the catalog's mean vector and second moment, which the
build stores): read from the estimates instead, they moved the fused order, which is what bounded how coarse the
codes could be (docs/performance.md "A million tools, fourth step").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from handler.ranking.arrays import BoolArray, DoubleArray, FloatArray, IndexArray
from handler.ranking.dense import DenseScorer, QuantizedVectors, RowScorer, quantize, quantize_query
from handler.ranking.fusion import mean_and_spread
from handler.ranking.topk import at_least

# At 100k tools the coarse scan answers a one-action select 0.5-1.2 ms faster than the exact one, with the same top 10
# on 300 of 300 bench tasks and 40 MB less memory; at 30k 3-4 ms slower: below 4 x topk.SAMPLE scores no threshold is
# sampled, and every tool is rescored (docs/performance.md "A million tools, fourth step").
COARSE_MIN_TOOLS = 100_000
# 64 directions with the moments in closed form: the exhaustive scan's top 10 on 299 of 300 1M bench tasks (128: 300)
COARSE_DIMENSIONS = 64
COARSE_SHARE = 0.005  # of the catalog rescored exactly (docs/performance.md: 0.02 before, the same top 10)
MIN_CANDIDATES = 2_000
FIT_SAMPLE = 20_000  # rows the principal directions are found on
_CHUNK = 65_536  # rows projected at a time at build, so a million tools never need a float copy of every vector


@dataclass(frozen=True)
class CoarseCodes:
    """A catalog's vectors in its principal directions, as the build stores them."""

    projection: FloatArray  # (d, m): the directions, unit columns
    mean: FloatArray  # (d,): the catalog's mean vector, which the codes are centred on
    codes: QuantizedVectors  # (n, m): each tool's centred vector along the directions
    second_moment: DoubleArray  # (d, d): the mean of v vᵀ over the catalog's vectors as scored (int8)


def fit_coarse(vectors: QuantizedVectors, dimensions: int = COARSE_DIMENSIONS, seed: int = 0) -> CoarseCodes:
    """The principal directions of the tool vectors (from a fixed sample of rows), every tool's codes, and the
    vectors' mean and second moment (every row, in float64: the moments ``CoarseSemantic.moments`` reads)."""
    count, width = vectors.values.shape
    dimensions = min(dimensions, width)
    mean = np.zeros(width, dtype=np.float64)
    second = np.zeros((width, width), dtype=np.float64)
    for start in range(0, count, _CHUNK):
        rows = _rows(vectors, start, start + _CHUNK).astype(np.float64)
        mean += rows.sum(axis=0)
        second += rows.T @ rows
    second /= max(count, 1)
    mean = (mean / max(count, 1)).astype(np.float32)
    rng = np.random.default_rng(seed)
    picked = np.sort(rng.choice(count, size=min(count, FIT_SAMPLE), replace=False)) if count else np.empty(0, int)
    sample = vectors.values[picked].astype(np.float32) * vectors.scales[picked, None] - mean
    covariance = sample.T.astype(np.float64) @ sample.astype(np.float64) / max(len(sample), 1)
    _, directions = np.linalg.eigh(covariance)  # ascending eigenvalues
    projection = np.ascontiguousarray(directions[:, ::-1][:, :dimensions]).astype(np.float32)
    codes = [quantize((_rows(vectors, s, s + _CHUNK) - mean) @ projection) for s in range(0, count, _CHUNK)]
    values = np.concatenate([c.values for c in codes]) if codes else np.zeros((0, dimensions), dtype=np.int8)
    scales = np.concatenate([c.scales for c in codes]) if codes else np.zeros(0, dtype=np.float32)
    return CoarseCodes(projection, mean, QuantizedVectors(values, scales), second)


@dataclass(frozen=True)
class CoarseSemantic:
    """The two-stage dense signal over one build: ``scan`` scores the codes, ``exact`` the candidates' vectors."""

    projection: FloatArray
    mean: FloatArray
    scan: DenseScorer
    exact: RowScorer
    second_moment: DoubleArray | None = None  # (d, d); None in a build written before it was stored

    def moments(self, query_vector: FloatArray) -> tuple[float, float] | None:
        """The mean and spread of every tool's exact cosine with the query (what fusion.moments reads from a full
        scan), from the catalog's mean vector and second moment: the query as the exact scan quantizes it, q, gives
        mean q·μ and variance qᵀMq - (q·μ)². None where the build holds no second moment."""
        if self.second_moment is None:
            return None
        levels, step = quantize_query(np.asarray(query_vector, dtype=np.float32))
        query = levels.astype(np.float64) * step
        mean = float(query @ self.mean.astype(np.float64))
        return mean_and_spread(mean, float(query @ self.second_moment @ query) - mean * mean)

    def score(self, query_vector: FloatArray, allowed: BoolArray | None, named: IndexArray) -> FloatArray:
        """Every tool's cosine with the query: exact for the candidates and the ``named`` tools, a capped
        estimate for the others."""
        query = np.asarray(query_vector, dtype=np.float32)
        estimate = self.scan.score(query @ self.projection)
        estimate += np.float32(query @ self.mean)
        picked = candidates(estimate, allowed, _candidate_count(len(estimate)))
        chosen = _with_others(picked, named)
        if len(chosen) == len(estimate):
            return self.exact.score(query)
        cap = np.nextafter(estimate[picked].min(initial=np.inf), -np.inf)  # no estimate reaches a candidate's place
        scores: FloatArray = np.minimum(estimate, cap, out=estimate)
        scores[chosen] = self.exact.score_rows(query, chosen)
        return scores


def _candidate_count(tools: int) -> int:
    return max(MIN_CANDIDATES, int(COARSE_SHARE * tools))


def candidates(estimate: FloatArray, allowed: BoolArray | None, count: int) -> IndexArray:
    """About ``count`` allowed tools (ascending), every one whose estimate reaches a threshold read from a sample of
    the estimates (topk.at_least, which keeps about twice what it is asked for); every allowed tool when fewer are
    allowed."""
    eligible = estimate if allowed is None else np.where(allowed, estimate, -np.inf)
    return at_least(eligible, max(1, count // 2))


def _with_others(ascending: IndexArray, others: IndexArray) -> IndexArray:
    """np.union1d of distinct ascending positions and a few others, without sorting the thousands again."""
    at = np.minimum(np.searchsorted(ascending, others), max(len(ascending) - 1, 0))
    held = ascending[at] == others if len(ascending) else np.zeros(len(others), dtype=bool)
    extra = np.unique(others[~held])
    return np.insert(ascending, np.searchsorted(ascending, extra), extra) if len(extra) else ascending


def _rows(vectors: QuantizedVectors, start: int, end: int) -> FloatArray:
    return vectors.values[start:end].astype(np.float32) * vectors.scales[start:end, None]
