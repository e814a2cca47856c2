"""Every command block of README.md and docs/*.md runs in a test (issue 26 item 7).

Each ```sh and ```python block is listed here once, with the test that runs it: one of this module's, run as
written where `make serve` ran (the only changes: `.venv/bin/` is this interpreter's, a placeholder like DIR or
tools.jsonl is a real path, a URL is a server on loopback), or another module's that runs it as written. The few
that need AWS credentials, Docker or half an hour are PARSED: each of their `toolrec` lines is read by toolrec's own
argument parser, so a renamed option still fails. A block added to a page without a test fails the first test.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from build_index.cli import parser
from build_index.ingest.catalog_files import read_catalogs
from build_index.ops.loopback import serve_subprocess
from build_index.ops.serve import DEMO_DIR
from tests.support.docs import DOC_PAGES, REPO_ROOT, Block, runnable_blocks
from tests.support.servers import serve
from tests.support.workers import bearer_protected, upstream_mcp_app

BIN = Path(sys.executable).parent
DEMO_CATALOG = str(DEMO_DIR / "tools.jsonl")
KEY = "dev-key"
HERE = "test_doc_commands.py"
AS_WRITTEN = "test_readme_as_written.py"
FIRST_CURL = f"{AS_WRITTEN}::test_readmes_first_curl_works_with_what_make_serve_printed"
FRESH_INSTALL = "test_serving_http.py::test_the_first_install_says_how_long_it_takes_and_shows_pips_progress"
# (page, how the block's first line starts) -> the test that runs the block as written.
RUN_BY = {
    ("README.md", "make serve"): FIRST_CURL,
    # The suite is what it runs; this test holds what it runs first on a fresh clone.
    (
        "README.md",
        "make test",
    ): "test_serving_http.py::test_the_first_install_says_how_long_it_takes_and_shows_pips_progress",
    (
        "README.md",
        "export TOOLREC_API_KEY=",
    ): f"{AS_WRITTEN}::test_readmes_first_curl_works_with_what_make_serve_printed",
    ("README.md", "curl -s http://127.0.0.1:8000/v1/tools/search"): (
        f"{AS_WRITTEN}::test_every_curl_of_readme_answers_with_the_fields_readme_names"
    ),
    ("README.md", "import asyncio"): f"{AS_WRITTEN}::test_readme_python_blocks_run_against_toolrec_serve",
    ("README.md", ".venv/bin/toolrec lint"): f"{AS_WRITTEN}::test_readme_serves_ones_own_catalog_as_written",
    ("README.md", ".venv/bin/toolrec policy list"): f"{HERE}::test_readmes_policy_commands",
    ("README.md", ".venv/bin/toolrec build --from-index"): f"{HERE}::test_readmes_learning_from_use_build",
    ("README.md", "python -m infra.deploy"): f"{HERE}::test_readmes_deploy_commands",
    ("docs/catalogs.md", ".venv/bin/toolrec lint"): f"{HERE}::test_catalogs_lint_and_build",
    ("docs/catalogs.md", "UPSTREAM_TOKEN=..."): f"{HERE}::test_catalogs_upstream_build_and_refresh",
    ("docs/deploy.md", ".venv/bin/toolrec drift --url http://127.0.0.1:8000"): f"{HERE}::test_deploys_drift_record",
    ("docs/providers.md", '"""Claude'): "test_provider_examples.py::test_claude_example",
    ("docs/providers.md", '"""GPT'): "test_provider_examples.py::test_gpt_example",
    ("docs/reliability.md", ".venv/bin/toolrec loadtest"): f"{HERE}::test_reliabilitys_load_test",
}
# (page, how the block's first line starts) -> why it cannot run here; its toolrec lines are parsed instead.
PARSED = {
    ("docs/deploy.md", ".venv/bin/moto_server"): (
        "`sam local` needs Docker; tests/infra/test_package.py answers the same events with build/lambda in a clean"
        " python3.12 against moto_server"
    ),
    ("docs/deploy.md", 'toolrec drift --url "$(python -m infra.deploy'): (
        f"needs a deployed stage; {HERE}::test_deploys_drift_record runs drift against toolrec serve"
    ),
    ("docs/quality.md", "B=../shared/benchmarks"): (
        "about 40 minutes over eleven shared sets; tests/integration/test_eval_*.py run eval and calibrate-score on"
        " smaller ones"
    ),
    ("docs/scale.md", ".venv/bin/toolrec bench --sizes 1000000"): (
        "builds a 1M-tool index first (about an hour on 2 cores); tests/integration/test_bench.py runs the same steps"
        " on 200 tools"
    ),
    ("docs/quality.md", ".venv/bin/pip install -e '.[train]'"): (
        "installs torch and trains for about 16 minutes; tests/unit/test_finetune_data.py holds the recipe's data"
    ),
}


def listed_as(found: Block) -> list[tuple[str, str]]:
    page = str(found.page.relative_to(REPO_ROOT))
    return [key for key in (*RUN_BY, *PARSED) if key[0] == page and found.first_line.startswith(key[1])]


def block(page: str, starts: str) -> Block:
    found = [b for b in runnable_blocks() if listed_as(b) == [(page, starts)]]
    assert len(found) == 1, f"{page} has {len(found)} blocks starting {starts!r}"
    return found[0]


def test_every_command_block_of_readme_and_docs_runs_in_a_test() -> None:
    found = runnable_blocks()
    assert len(DOC_PAGES) > 1 and found
    unlisted = [b.where for b in found if len(listed_as(b)) != 1]
    assert unlisted == [], "a block with no test (or two): list it once, in RUN_BY with its test or in PARSED"
    gone = [key for key in (*RUN_BY, *PARSED) if not any(key in listed_as(b) for b in found)]
    assert gone == [], "a listed block is gone from its page: remove it here"
    for node in RUN_BY.values():
        module, function = node.split("::")
        assert f"def {function}(" in (Path(__file__).parent / module).read_text(), node


@pytest.mark.parametrize(("page", "starts"), sorted(PARSED))
def test_each_toolrec_line_of_a_block_that_cannot_run_here_parses(page: str, starts: str) -> None:
    lines = toolrec_lines(block(page, starts))
    assert lines, f"{page}: {starts!r} has no toolrec line to parse"
    for argv in lines:
        try:
            parser().parse_args(argv)
        except SystemExit as refused:
            pytest.fail(f"{page}: `toolrec {shlex.join(argv)}` does not parse (exit {refused.code})")


def toolrec_lines(doc_block: Block) -> list[list[str]]:
    """The arguments of each toolrec command of the block, its own shell variables expanded."""
    variables: dict[str, str] = {}
    found = []
    for line in doc_block.commands():
        expanded = re.sub(r"\$\{?(\w+)\}?", lambda m: variables.get(m.group(1), m.group(0)), line)
        words = shlex.split(expanded)
        if words and all(re.fullmatch(r"\w+=.*", word) for word in words):
            variables.update(word.split("=", 1) for word in words)
            continue
        starts = [i for i, word in enumerate(words) if word == "toolrec" or word.endswith("/toolrec")]
        if starts:
            arguments = words[starts[0] + 1 :]
            redirected = [i for i, word in enumerate(arguments) if word in (">", ">>", "|")]
            found.append(arguments[: redirected[0]] if redirected else arguments)
    return found


@dataclass(frozen=True)
class Served:
    """Where `make serve` ran: the folder holding .toolrec (the demo, a policy file and a query log), and its URL."""

    folder: Path
    url: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("where-make-serve-ran")
    root = ["--root", str(folder / ".toolrec")]
    with serve_subprocess(root, {"TOOLREC_API_KEY": KEY}, startup_timeout_s=120) as (url, _):
        asked = {"tasks": ["send a Slack message to #ops"], "user_id": "demo-user"}
        assert httpx.post(f"{url}/v1/tools/select", json=asked, headers={"Authorization": f"Bearer {KEY}"}).is_success
        yield Served(folder, url)


def run(doc_block: Block, cwd: Path, *replacements: tuple[str, str], env: dict[str, str] | None = None) -> str:
    """The block as one bash script (stopping at the first failing line), with ``replacements`` made; its output."""
    script = doc_block.text.replace(".venv/bin/", f"{BIN}/")
    for old, new in replacements:
        assert old in script, f"{doc_block.where} lost {old!r}"
        script = script.replace(old, new)
    ran = subprocess.run(
        ["bash", "-e", "-c", script], cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, f"{doc_block.where}\n{ran.stdout}\n{ran.stderr}"
    return ran.stdout + ran.stderr


@pytest.mark.slow
def test_readmes_policy_commands(served: Served) -> None:
    said = run(block("README.md", ".venv/bin/toolrec policy list"), served.folder)
    assert "gateway default: allows *" in said and "API key" in said and "created for gateway default" in said
    assert "every pattern and pin of the policy matches a tool of the index" in said
    policy = (served.folder / ".toolrec" / "policy.json").read_text()
    assert '"no-payments"' in policy and '"Slack.SendMessage"' in policy


@pytest.mark.slow
def test_readmes_learning_from_use_build(served: Served) -> None:
    said = run(block("README.md", ".venv/bin/toolrec build --from-index"), served.folder)
    assert "usage from .toolrec/policy.queries.jsonl" in said
    assert (served.folder / ".toolrec" / "warm-index" / "LATEST").is_file()


def test_readmes_deploy_commands(tmp_path: Path) -> None:
    dry_run, deploy = block("README.md", "python -m infra.deploy").commands()
    planned = subprocess.run(
        [sys.executable, *shlex.split(dry_run)[1:]], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
        check=True,
    )  # fmt: skip
    assert "# 1. package the function\nmake package" in planned.stdout
    # The real deploy needs AWS: it runs here until its first tool, a `make` that stops it.
    (tmp_path / "make").write_text("#!/bin/sh\necho 'stopped by the test' >&2\nexit 1\n")
    (tmp_path / "make").chmod(0o755)
    path = {"PATH": f"{tmp_path}:{os.environ['PATH']}"}
    stopped = subprocess.run(
        [sys.executable, *shlex.split(deploy)[1:]], cwd=REPO_ROOT, env={**os.environ, **path}, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert stopped.returncode == 1 and "[1/6] package the function: make package" in stopped.stdout
    assert "stopped by the test" in stopped.stderr


@pytest.mark.slow
def test_catalogs_lint_and_build(tmp_path: Path) -> None:
    doc_block = block("docs/catalogs.md", ".venv/bin/toolrec lint")
    said = run(doc_block, tmp_path, ("tools.jsonl", DEMO_CATALOG), ("--out DIR", f"--out {tmp_path / 'index'}"))
    assert "no problems in 96 tools" in said and (tmp_path / "index" / "LATEST").is_file()


@pytest.mark.slow
def test_catalogs_example_row_lints_and_builds(tmp_path: Path) -> None:
    """The row docs/catalogs.md gives to copy is one the build takes whole, executor and requirements included, and
    the page's own lint and build commands pass on it as it stands."""
    page = (REPO_ROOT / "docs" / "catalogs.md").read_text()
    (row,) = re.findall(r"^```json\n(.*?)^```$", page, re.M | re.S)
    (tmp_path / "tools.jsonl").write_text(row)
    (tool,) = read_catalogs([tmp_path / "tools.jsonl"])
    assert tool.executor is not None and tool.requirements is not None and tool.input_schema["properties"]
    said = run(block("docs/catalogs.md", ".venv/bin/toolrec lint"), tmp_path, ("--out DIR", "--out index"))
    assert "no problems in 1 tools" in said and (tmp_path / "index" / "LATEST").is_file()


@pytest.mark.slow
def test_catalogs_upstream_build_and_refresh(tmp_path: Path) -> None:
    doc_block = block("docs/catalogs.md", "UPSTREAM_TOKEN=...")
    with serve(bearer_protected(upstream_mcp_app(), "crm-secret")) as upstream:
        said = run(
            doc_block, tmp_path,
            ("UPSTREAM_TOKEN=...", "UPSTREAM_TOKEN=crm-secret"), ("https://crm.example.com/mcp", f"{upstream}/mcp"),
            ("tools.jsonl", DEMO_CATALOG), ("DIR", str(tmp_path / "index")),
            env={"UPSTREAM_TOKEN": "crm-secret"},  # the refresh line reads it from the environment
        )  # fmt: skip
    assert re.search(r"built \d+ tools as ", said) and "tools unchanged, kept build" in said, said


@pytest.mark.slow
def test_deploys_drift_record(served: Served, tmp_path: Path) -> None:
    """As written, from a checkout's root (a copy of the query set it reads): it writes a new file, and the tracked
    golden is left alone (issue 34: the block used to record over it, with a bare `toolrec` not on PATH)."""
    tracked = REPO_ROOT / "infra" / "tenants" / "acme.golden.json"
    before = tracked.read_bytes()
    (tmp_path / "infra" / "tenants").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "infra" / "tenants" / "queries.txt", tmp_path / "infra" / "tenants" / "queries.txt")
    doc_block = block("docs/deploy.md", ".venv/bin/toolrec drift --url http://127.0.0.1:8000")
    said = run(doc_block, tmp_path, ("http://127.0.0.1:8000", served.url), env={"TOOLREC_DRIFT_API_KEY": KEY})
    recorded = tmp_path / "acme.golden.new.json"
    assert "acme.golden.new.json" in said and json.loads(recorded.read_text())
    assert tracked.read_bytes() == before


@pytest.mark.slow
def test_reliabilitys_load_test(tmp_path: Path) -> None:
    doc_block = block("docs/reliability.md", ".venv/bin/toolrec loadtest")
    # 10,000 requests take minutes on two cores: the same command with fewer.
    said = run(doc_block, tmp_path, ("--requests 10000 --concurrency 32", "--requests 200 --concurrency 8"))
    assert "200 select requests at 8 concurrent" in said and "PASS" in said
