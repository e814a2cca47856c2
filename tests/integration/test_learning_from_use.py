"""Learning from use (PRODUCT.md §6) on the demo catalog with the real embedder: the query log folded into a build,
what it lifts, and what it must never do (pin a tool for unrelated tasks, outlive the log's expiry, stay on when
turned off, carry task text)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from build_index.build import embed_texts
from build_index.cli import main as toolrec
from build_index.ops.serve import DEMO_DIR, demo_policy
from build_index.publish import publish
from build_index.usage.fold import ExecutionGroup, UsageLog, fold_usage
from handler.composition import build_app
from handler.errors import IntegrityError
from handler.index.holder import IndexHolder
from handler.index.load import Index, load_build, rebuild_of
from handler.index.store import LocalIndexStore, load_latest
from handler.inference.embedder import OnnxEmbedder
from handler.inference.model_files import sha256_file
from handler.policy.file_store import FilePolicyStore, write_document
from handler.policy.keys import hash_key
from handler.policy.model import ExecutionRecord, QueryRecord
from handler.ranking.confidence import SHIPPED
from handler.ranking.recommend import ranked, recommend
from handler.ranking.retriever import score_rows
from tests.support.servers import serve
from tests.support.serving import demo_tools, file_settings, publish_tools
from tests.support.workers import http_worker_app

TOOLS = demo_tools()
NAMES = [t.name for t in TOOLS]
ACCEPTANCE = Path(__file__).parents[1] / "acceptance" / "demo_tasks.jsonl"


@pytest.fixture(scope="module")
def cold_root(tmp_path_factory: pytest.TempPathFactory, embedder: OnnxEmbedder) -> Path:
    root = tmp_path_factory.mktemp("cold")
    publish_tools(TOOLS, str(root), embedder)
    return root


def load(root: Path, embedder: OnnxEmbedder) -> Index:
    return load_latest(LocalIndexStore(root), root, embedder.fingerprint)


def warm_index(cold_root: Path, groups: list[ExecutionGroup], out: Path, embedder: OnnxEmbedder) -> Index:
    """The cold build republished with these groups as its usage, through the index format."""
    store = LocalIndexStore(cold_root)
    directory = store.fetch(store.latest_build_id(), cold_root)
    cold = rebuild_of(directory, load_build(directory, embedder.fingerprint), TOOLS)
    usage = fold_usage(UsageLog(groups), NAMES, lambda texts: embed_texts(texts, embedder), "test")
    publish(replace(cold, usage=usage), str(out))
    return load(out, embedder)


def top(index: Index, embedder: OnnxEmbedder, task: str, k: int = 5) -> list[str]:
    return [NAMES[h.index] for h in recommend(index.ranking, embedder, task, None, k).hits]


def acceptance_tasks() -> list[tuple[str, list[str]]]:
    """The demo acceptance set's possible tasks: (task, the tools that do it)."""
    rows = [json.loads(line) for line in ACCEPTANCE.read_text().splitlines() if line.strip()]
    return [(r["task"], r["relevant"]) for r in rows if r.get("relevant")]


def test_past_tasks_of_half_the_demo_tasks_lift_the_other_half(
    cold_root: Path, tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    """The demo acceptance set split in two (even lines history, odd lines test): warm never answers fewer test
    tasks right, first or in the top 5, than cold."""
    rows = acceptance_tasks()
    history, test = rows[::2], rows[1::2]
    groups = [ExecutionGroup(task, (relevant[0],)) for task, relevant in history]
    cold, warm = load(cold_root, embedder), warm_index(cold_root, groups, tmp_path / "warm", embedder)
    scores = {"cold": [0, 0], "warm": [0, 0]}
    for task, relevant in test:
        for name, index in (("cold", cold), ("warm", warm)):
            found = top(index, embedder, task)
            scores[name][0] += bool(found[:1] and found[0] in relevant)
            scores[name][1] += bool(set(relevant) & set(found))
    assert scores["warm"][0] >= scores["cold"][0] and scores["warm"][1] >= scores["cold"][1], scores


def test_a_burst_of_fake_executions_moves_only_its_own_task_and_never_above_the_text(
    cold_root: Path, tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    """Poisoning: 64 fake executions (8 users, 8 wordings) tie Stripe.RefundPayment to one Slack task. Bound: on that
    task the text's best tool stays first; no other demo task changes its first answer, and at most 2% of them
    change their top 5 (measured: none)."""
    tied = "send the standup notes to the team"
    wordings = [f"{tied} {w}" for w in ("now", "today", "please", "asap", "quickly", "again", "for me", "at 9")]
    groups = [ExecutionGroup(w, ("Stripe.RefundPayment",), f"mallory{i % 8}") for i, w in enumerate(wordings * 8)]
    cold, warm = load(cold_root, embedder), warm_index(cold_root, groups, tmp_path / "warm", embedder)
    assert warm.ranking.usage is not None and warm.ranking.usage.classifier is not None  # the classifier is in
    before, after = top(cold, embedder, tied), top(warm, embedder, tied)
    assert after[0] == before[0] == "Slack.SendMessage"
    others = [task for task, _ in acceptance_tasks()]
    changed_first = [t for t in others if top(cold, embedder, t)[:1] != top(warm, embedder, t)[:1]]
    changed_top5 = [t for t in others if set(top(cold, embedder, t)) != set(top(warm, embedder, t))]
    assert changed_first == []
    assert len(changed_top5) <= 0.02 * len(others), changed_top5


TIED = "send the standup notes to the team"
WORDINGS = [f"{TIED} {w}" for w in ("now", "today", "please", "asap", "quickly", "again", "for me", "at 9")]
MALLORY_KEY, VICTIM_KEY = "trk_learning-mallory-0123456789abcdef", "trk_learning-victim-0123456789abcdef0"


def _burst_policy() -> dict[str, Any]:
    """Mallory's key may use gateway "sms" only; the victim's gateway "team" allows Slack and Twilio."""
    return {
        "version": 1,
        "gateways": [
            {"gateway_id": "sms", "allowed": ["Twilio.*"], "recommendation": "on"},
            {"gateway_id": "team", "allowed": ["Slack.*", "Twilio.*"], "recommendation": "on"},
        ],
        "access_rules": [{"rule_id": "all", "subject": "*", "effect": "allow", "tools": ["*"]}],
        "api_keys": [
            {"key_id": "mallory", "key_hash": hash_key(MALLORY_KEY), "gateway_id": "sms"},
            {"key_id": "victim", "key_hash": hash_key(VICTIM_KEY), "gateway_id": "team"},
        ],
    }


def test_a_burst_from_one_gateway_key_never_changes_another_callers_first_answer(
    tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    """Issue 22 item 6, as the probe ran it: 64 selects and linked executions through one key limited to gateway
    "sms" (8 asserted user_ids x 8 wordings of one task), then `toolrec build --from-index --usage` of the local
    query log. Before, the per-user cap counted user_ids the key chose, and the victim's first answer on gateway
    "team" moved from Slack.SendMessage to the burst's Twilio.SendSms; now one key alone is no evidence."""
    rows = [t.model_dump(mode="json", exclude_none=True) for t in TOOLS]
    with serve(http_worker_app()) as worker:
        for row in rows:
            if row["name"] == "Twilio.SendSms":  # runnable, and no connection to grant the asserted users
                row.pop("requirements")
                row["executor"] = {"kind": "http", "target": f"{worker}/echo"}
        (tmp_path / "tools.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
        index, policy = tmp_path / "index", tmp_path / "policy.json"
        assert toolrec(["build", "--catalog", str(tmp_path / "tools.jsonl"), "--out", str(index), "--quiet"]) == 0
        policy.write_text(json.dumps(_burst_policy()))
        settings = file_settings(str(index), policy, tmp_path / "cache", index_refresh_seconds=0)
        with serve(build_app(settings, embedder=embedder)) as base:

            def post(key: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
                response = httpx.post(f"{base}{path}", json=body, headers={"Authorization": f"Bearer {key}"})
                assert response.status_code == 200, response.text
                answer: dict[str, Any] = response.json()
                return answer

            def victims_first() -> str:
                answer = post(VICTIM_KEY, "/v1/tools/select", {"tasks": [TIED], "user_id": "vic"})
                return str(answer["results"][0]["suggestions"][0]["tool_name"])

            assert victims_first() == "Slack.SendMessage"
            for user in range(8):
                for wording in WORDINGS:
                    select = {"tasks": [wording], "user_id": f"mallory{user}"}
                    found = post(MALLORY_KEY, "/v1/tools/select", select)
                    assert "Twilio.SendSms" in [t["tool_name"] for t in found["results"][0]["suggestions"]]
                    execute = {"tool_name": "Twilio.SendSms", "input": {"to": "+15550100", "body": "notes"},
                               "user_id": f"mallory{user}", "query_id": found["query_id"]}  # fmt: skip
                    assert post(MALLORY_KEY, "/v1/tools/execute", execute)["success"] is True
            cold = httpx.get(f"{base}/healthz").json()["build_id"]
            log = str(policy.with_suffix(".queries.jsonl"))
            assert toolrec(["build", "--from-index", str(index), "--usage", log, "--out", str(index), "--quiet"]) == 0
            assert httpx.get(f"{base}/healthz").json()["build_id"] != cold  # the warm build is the one served
            assert victims_first() == "Slack.SendMessage"


def _log_with_one_execution(policy_dir: Path, expires_at: int) -> Path:
    """The local file store's query log after one select and one successful execution linked to it, through each
    of three API keys on three days (the query log's evidence needs that many keys, over at least a day:
    build_index/usage/evidence.py KEYS_PER_EVIDENCE, EVIDENCE_SPAN)."""
    policy = policy_dir / "policy.json"
    write_document(policy, demo_policy())
    store = FilePolicyStore(policy)
    for days, key in enumerate(("k1", "k2", "k3")):
        now = datetime.now(UTC) - timedelta(days=days)
        store.put_query(
            QueryRecord(
                query_id=f"q-{key}",
                user_id="ada",
                key_id=key,
                tasks=("tell the on-call crew the database failover finished",),
                recommended=(("Twilio.SendSms", "Slack.SendMessage"),),
                created_at=now,
                expires_at=expires_at,
            )
        )
        execution = ExecutionRecord(tool_name="Slack.SendMessage", user_id="ada", key_id=key, at=now, outcome="ok")
        store.record_execution(f"q-{key}", execution)
    return store.query_log_path


def test_build_folds_the_local_query_log_and_records_it_in_the_manifest(
    tmp_path: Path, embedder: OnnxEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _log_with_one_execution(tmp_path, int(datetime.now(UTC).timestamp()) + 3600)
    out = tmp_path / "index"
    assert toolrec(["build", "--catalog", str(DEMO_DIR / "tools.jsonl"), "--usage", str(log), "--out", str(out)]) == 0
    assert "3 execution groups, 1 distinct tasks for 1 tools" in capsys.readouterr().out
    loaded = load(out, embedder)
    assert loaded.manifest.usage is not None
    assert loaded.manifest.usage.model_dump(exclude={"oldest", "newest", "evidence_sha256"}) == {
        "source": str(log),
        "execution_groups": 3,
        "distinct_tasks": 1,
        "past_task_rows": 1,
        "tools_with_usage": 1,
        "ignored": {},
        "classifier": True,
    }
    assert {"usage_vectors.npy", "co_usage_shares.npy", "usage_classifier.npy"} <= set(loaded.manifest.files)
    # No task text is stored: the index holds vectors and counts only, so no API answer can quote a task.
    for path in (out / "builds" / loaded.manifest.build_id).iterdir():
        assert b"failover" not in path.read_bytes(), path.name


def test_stats_per_tool_shows_suggestions_runs_and_how_warm_ranking_moved_each_tool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 25 item 4: `toolrec stats --per-tool --index` over the local query log and the build made from it."""
    log = _log_with_one_execution(tmp_path, int(datetime.now(UTC).timestamp()) + 3600)
    out = tmp_path / "index"
    assert toolrec(["build", "--catalog", str(DEMO_DIR / "tools.jsonl"), "--usage", str(log), "--out", str(out)]) == 0
    capsys.readouterr()
    policy = str(tmp_path / "policy.json")
    assert toolrec(["stats", "--per-tool", "--policy", policy, "--index", str(out), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows["Twilio.SendSms"] == {
        "suggested": 3, "run_after_suggestion": 0, "tasks": 0, "cold_rank": None, "warm_rank": None
    }  # fmt: skip
    slack = rows["Slack.SendMessage"]
    assert (slack["suggested"], slack["run_after_suggestion"], slack["tasks"]) == (3, 3, 1)
    assert slack["warm_rank"] is not None and slack["cold_rank"] is not None
    assert slack["warm_rank"] <= slack["cold_rank"]  # its own task: usage never ranks it lower there
    assert toolrec(["stats", "--per-tool", "--policy", policy]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[:3] in (
        ["Slack.SendMessage", "3", "3"],
        ["Twilio.SendSms", "3", "0"],
    )


def test_a_rebuild_after_the_log_expired_drops_that_usage(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    log = _log_with_one_execution(tmp_path, int((datetime.now(UTC) - timedelta(seconds=1)).timestamp()))
    out = tmp_path / "index"
    assert toolrec(["build", "--catalog", str(DEMO_DIR / "tools.jsonl"), "--usage", str(log), "--out", str(out)]) == 0
    usage = load(out, embedder).manifest.usage
    assert usage is not None and usage.execution_groups == 0 and usage.ignored == {"expired": 3}


def test_turned_off_a_warm_index_ranks_exactly_as_a_cold_one(
    cold_root: Path, tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    rows = acceptance_tasks()
    groups = [ExecutionGroup(task, tuple(relevant)) for task, relevant in rows]
    warm_root = tmp_path / "warm"
    warm_index(cold_root, groups, warm_root, embedder)
    off = IndexHolder(LocalIndexStore(warm_root), tmp_path / "cache", embedder.fingerprint, 3600, learn_from_use=False)
    on = IndexHolder(LocalIndexStore(warm_root), tmp_path / "cache2", embedder.fingerprint, 3600)
    cold = load(cold_root, embedder)
    differs = 0
    for task, _ in rows:
        assert top(off.current(), embedder, task, 10) == top(cold, embedder, task, 10)
        differs += top(on.current(), embedder, task, 10) != top(cold, embedder, task, 10)
    assert differs > 0  # the switch is what made the difference


def test_a_build_rebuilt_from_the_published_one_keeps_its_vectors_and_gains_the_usage(
    cold_root: Path, tmp_path: Path, embedder: OnnxEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    usage = tmp_path / "usage.jsonl"
    usage.write_text(json.dumps({"query": "ping the on-call crew", "relevant": ["Slack.SendMessage"]}) + "\n")
    out = tmp_path / "warm"
    assert toolrec(["build", "--from-index", str(cold_root), "--usage", str(usage), "--out", str(out)]) == 0
    cold, warm = load(cold_root, embedder), load(out, embedder)
    assert warm.manifest.usage is not None and warm.manifest.usage.tools_with_usage == 1
    for name in ("vectors.npy", "bm25_weights.npy", "tools.jsonl"):
        assert warm.manifest.files[name] == cold.manifest.files[name], name
    assert (
        toolrec(["build", "--from-index", str(cold_root), "--catalog", str(DEMO_DIR / "tools.jsonl"), "--out", "x"])
        == 2
    )
    assert "without --catalog/--from-mcp" in capsys.readouterr().err


def test_usage_arrays_that_do_not_fit_the_tools_are_refused(
    cold_root: Path, tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    """A build whose usage names a tool it does not hold is refused at load, even with matching checksums."""
    warm_root = tmp_path / "warm"
    warm = warm_index(cold_root, [ExecutionGroup("ping the team", ("Slack.SendMessage",))], warm_root, embedder)
    build = warm_root / "builds" / warm.manifest.build_id
    np.save(build / "usage_tools.npy", np.array([len(TOOLS)], dtype=np.int32), allow_pickle=False)
    manifest = json.loads((build / "manifest.json").read_text())
    manifest["files"]["usage_tools.npy"] = sha256_file(build / "usage_tools.npy")
    (build / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IntegrityError, match=rf"usage_tools\.npy holds a tool id outside 0\.\.{len(TOOLS) - 1}"):
        load_build(build, embedder.fingerprint)


def test_a_classifier_that_does_not_fit_or_match_its_checksum_is_refused(
    cold_root: Path, tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    """The classifier's weights are verified like every other file, and must have one row per tool with usage."""
    warm_root = tmp_path / "warm"
    warm = warm_index(cold_root, [ExecutionGroup("ping the team", ("Slack.SendMessage",))], warm_root, embedder)
    build = warm_root / "builds" / warm.manifest.build_id
    weights = np.load(build / "usage_classifier.npy")
    np.save(build / "usage_classifier.npy", np.concatenate([weights, weights]), allow_pickle=False)
    with pytest.raises(IntegrityError, match=r"usage_classifier\.npy does not match its sha256"):
        load_build(build, embedder.fingerprint)
    manifest = json.loads((build / "manifest.json").read_text())
    manifest["files"]["usage_classifier.npy"] = sha256_file(build / "usage_classifier.npy")
    (build / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IntegrityError, match=r"usage_classifier\.npy is int8\[2, \d+\], expected int8\[1, \d+\]"):
        load_build(build, embedder.fingerprint)


def test_a_warm_score_reads_the_similarity_its_past_tasks_raised(
    cold_root: Path, tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    """Issue 36 item 3: where past tasks raised a tool's similarity, its score is read from the raised one, as the
    ranking read it; the text's alone showed warm first answers 0.1-0.2 less likely than they are right."""
    task = "tell the on-call crew the database failover finished"
    warm = warm_index(cold_root, [ExecutionGroup(task, ("Slack.SendMessage",))], tmp_path / "warm", embedder)
    found = ranked(warm.ranking, embedder, task, None, 5)
    tool = NAMES.index("Slack.SendMessage")
    assert found.usage[tool].past_tasks > 0 and found.evidence is not None
    place = found.chosen.index(tool)
    scored = score_rows(found)
    assert scored is not None
    raised, text = SHIPPED.probabilities(scored)[place], SHIPPED.probabilities(found.evidence)[place]
    assert raised > text + 0.01
    assert recommend(warm.ranking, embedder, task, None, 5).hits[place].probability == pytest.approx(raised)
