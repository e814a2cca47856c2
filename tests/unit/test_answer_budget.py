"""How many tools one answer carries (issue 22 item 7): pages always move on, tasks keep their best tool, and what
is kept beyond that stays within the budget, rank by rank."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from handler.catalog.answer_budget import fitting, fitting_per_task

SIZES = st.lists(st.integers(1, 50), max_size=12)
BUDGET = st.integers(1, 200)


@given(SIZES, BUDGET)
def test_a_page_holds_the_longest_prefix_that_fits_and_never_nothing(sizes: list[int], budget: int) -> None:
    count = fitting(sizes, budget)
    assert count == len(sizes) or sum(sizes[: count + 1]) > budget
    assert count >= min(1, len(sizes)) and (count <= 1 or sum(sizes[:count]) <= budget)


@given(st.lists(SIZES, max_size=6), BUDGET)
def test_each_task_keeps_its_best_and_the_rest_is_taken_rank_by_rank(sizes: list[list[int]], budget: int) -> None:
    kept = fitting_per_task(sizes, budget)
    assert all(count >= min(1, len(task)) and count <= len(task) for count, task in zip(kept, sizes, strict=True))
    beyond_best = sum(sum(task[1:count]) for task, count in zip(sizes, kept, strict=True))
    best = sum(task[0] for task in sizes if task)
    assert beyond_best == 0 or best + beyond_best <= budget
    # Rank by rank: once a task loses its tool of rank r, no task keeps one ranked below r.
    cut_at = [count for count, task in zip(kept, sizes, strict=True) if count < len(task)]
    assert all(count <= rank + 1 for rank in cut_at for count in kept)


def test_a_select_of_sixteen_tasks_cut_rank_by_rank() -> None:
    assert fitting_per_task([[60] * 20] * 16, budget=60 * 34) == [3, 3] + [2] * 14
