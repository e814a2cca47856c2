"""``toolrec stats --per-tool``: for each tool, how often select suggested it, how often it ran after a suggestion,
and, given the index, how warm ranking moved it on the tasks it ran for (issue 25 item 4).

The counts come from the query log alone. The rank movement replays each distinct task a tool ran for through the
index twice, text alone (cold) and with its usage (warm): a tool whose warm rank is better on its own tasks is one
learning from use lifts; a worse one says another tool's history outranks it there.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from handler.index.load import Index
from handler.policy.model import QueryRecord
from handler.ranking.query import Embedder
from handler.ranking.recommend import recommend

NOT_RANKED = 11  # a tool outside the first 10 counts as rank 11 in the mean, so a mean stays finite


@dataclass
class ToolUse:
    suggested: int = 0  # tasks whose suggestions held the tool
    run_after_suggestion: int = 0  # successful executions of it linked to a select that suggested it
    tasks: list[str] = field(default_factory=list)  # the distinct tasks it ran for after a suggestion
    cold_rank: float | None = None  # mean rank over ``tasks``, text alone (given the index)
    warm_rank: float | None = None  # ... with the index's usage

    def as_json(self) -> dict[str, object]:
        return {
            "suggested": self.suggested,
            "run_after_suggestion": self.run_after_suggestion,
            "tasks": len(self.tasks),
            "cold_rank": self.cold_rank,
            "warm_rank": self.warm_rank,
        }


def tool_uses(records: Iterable[QueryRecord]) -> dict[str, ToolUse]:
    """Per tool name: suggestions and runs after a suggestion, with the tasks it ran for."""
    uses: dict[str, ToolUse] = defaultdict(ToolUse)
    for record in records:
        for suggestions in record.recommended:
            for name in dict.fromkeys(suggestions):
                uses[name].suggested += 1
        for execution in record.executions:
            if execution.outcome != "ok":
                continue
            task = next((t for t, names in enumerate(record.recommended) if execution.tool_name in names), None)
            if task is None:
                continue
            use = uses[execution.tool_name]
            use.run_after_suggestion += 1
            if record.tasks[task] not in use.tasks:
                use.tasks.append(record.tasks[task])
    return dict(uses)


def mean_rank(ranked: Iterable[list[str]], tool: str) -> float:
    """The tool's mean 1-based rank over several rankings (``NOT_RANKED`` where it is not in the first 10)."""
    places = [names.index(tool) + 1 if tool in names[:10] else NOT_RANKED for names in ranked]
    return sum(places) / len(places)


def tool_report(uses: dict[str, ToolUse], limit: int) -> str:
    """The ``limit`` most suggested tools, one line each."""
    ranked = any(u.cold_rank is not None for u in uses.values())
    header = f"{'tool':<40}{'suggested':>10}{'run after':>10}"
    lines = [header + (f"{'tasks':>7}  mean rank on its tasks, cold -> warm" if ranked else "")]
    for name, use in sorted(uses.items(), key=lambda item: (-item[1].suggested, item[0]))[:limit]:
        line = f"{name[:39]:<40}{use.suggested:>10}{use.run_after_suggestion:>10}"
        if use.cold_rank is not None and use.warm_rank is not None:
            line += f"{len(use.tasks):>7}  {use.cold_rank:.1f} -> {use.warm_rank:.1f}"
        lines.append(line)
    return "\n".join(lines)


def with_rank_movement(uses: dict[str, ToolUse], index: Index, embedder: Embedder, limit: int) -> None:
    """Fill ``cold_rank`` and ``warm_rank`` of the ``limit`` most suggested tools the index holds, over the tasks
    each ran for (select's own path, ``recommend``: the no match applied, top 10)."""
    cold = index.without_usage()
    names = list(index.ranking.names)
    held = set(names)
    for name, use in sorted(uses.items(), key=lambda item: (-item[1].suggested, item[0]))[:limit]:
        if not use.tasks or name not in held:
            continue
        rankings: dict[str, list[list[str]]] = {"cold": [], "warm": []}
        for task in use.tasks:
            for label, which in (("cold", cold), ("warm", index)):
                hits = recommend(which.ranking, embedder, task, None, 10).hits
                rankings[label].append([names[h.index] for h in hits])
        use.cold_rank = mean_rank(rankings["cold"], name)
        use.warm_rank = mean_rank(rankings["warm"], name)
