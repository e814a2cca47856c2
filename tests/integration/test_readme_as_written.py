"""README's blocks, run as written against a live server on a free 127.0.0.1 port (only the port differs): the first
request with the key `make serve` printed, every curl, the MCP script, serving one's own catalog; and README's
statements of the API's limits, held to the constants that enforce them."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from build_index.ops.loopback import free_port, serve_subprocess, wait_healthy
from build_index.ops.serve import DEMO_DIR
from handler.api.schemas import (
    MAX_CONTEXT_CHARS,
    MAX_TASK_CHARS,
    MAX_TASKS,
    SEARCH_TOP_K_DEFAULT,
    SEARCH_TOP_K_MAX,
    SELECT_TOP_K_DEFAULT,
    SELECT_TOP_K_MAX,
)
from tests.integration.test_serving_http import toolrec_serve
from tests.support.docs import DOC_PAGES, README, block_starting, blocks

BIN = Path(sys.executable).parent
TOOLREC = str(BIN / "toolrec")
README_TEXT = README.read_text(encoding="utf-8")
KEY_PLACEHOLDER = "<the key make serve printed>"
FIRST_REQUEST = "export TOOLREC_API_KEY="
OWN_CATALOG = ".venv/bin/toolrec lint --catalog tools.jsonl"


@contextmanager
def make_serve(root: Path, env: dict[str, str]) -> Iterator[tuple[str, Path]]:
    """`make serve` as README runs it, on a free port and in ``root``: its URL and the file of what it printed."""
    port = free_port()
    log_path = root.parent / "make-serve.log"
    command = ["make", "serve", f"PORT={port}", f"ROOT={root}"]
    with log_path.open("wb") as log:
        process = subprocess.Popen(  # its own session: make and the toolrec serve it runs stop together
            command, cwd=README.parent, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            wait_healthy(f"http://127.0.0.1:{port}", process, log, timeout_s=180)
            yield f"http://127.0.0.1:{port}", log_path
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)


def printed_first_request(output: str) -> str:
    """The request `make serve` printed on the run that generated its key, as README shows it."""
    block = re.search(r"^Try it from another terminal:\n((?:  .*\n)+)", output, re.M)
    assert block, output
    return "\n".join(line.removeprefix("  ") for line in block.group(1).splitlines())


def run_curl(command: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    assert shutil.which("curl"), "README's examples need curl"
    ran = subprocess.run(
        ["bash", "-c", command], env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=30,
        check=True,
    )  # fmt: skip
    body: dict[str, Any] = json.loads(ran.stdout)
    return body


@pytest.mark.slow
def test_readmes_first_curl_works_with_what_make_serve_printed(tmp_path: Path) -> None:
    with make_serve(tmp_path / ".toolrec", {"TOOLREC_API_KEY": "", "TOOLREC_POLICY_CACHE_SECONDS": "0"}) as served:
        url, log_path = served
        printed = printed_first_request(log_path.read_text(encoding="utf-8"))
        key = re.match(rf"{FIRST_REQUEST}(\S+)\n", printed)
        assert key, printed
        readme = block_starting(README, FIRST_REQUEST).text.rstrip("\n").replace("http://127.0.0.1:8000", url)
        assert printed == readme.replace(KEY_PLACEHOLDER, key.group(1))  # make serve prints README's request, ready
        command = readme.replace(KEY_PLACEHOLDER, key.group(1))
        first, second = run_curl(command)["results"]
        assert first["suggestions"][0]["tool_name"] == "Slack.SendMessage"
        assert "GitHub.CreateIssue" in [s["tool_name"] for s in second["suggestions"]]

        # `toolrec policy` edits the running server's policy file; the change applies on the next request.
        policy = ["--file", str(tmp_path / ".toolrec" / "policy.json")]
        subprocess.run(
            [TOOLREC, "policy", *policy, "rule", "put", "--subject", "demo-user", "--rule-id", "quiet",
             "--effect", "deny", "--tools", "Slack.*"],
            check=True, capture_output=True,
        )  # fmt: skip
        found = [s["tool_name"] for s in run_curl(command)["results"][0]["suggestions"]]
        assert found and not any(name.startswith("Slack.") for name in found)


@pytest.mark.slow
def test_readme_serves_ones_own_catalog_as_written(tmp_path: Path) -> None:
    *setup, serve_line = [
        line.replace(".venv/bin/", f"{BIN}/")
        .replace("tools.jsonl", str(DEMO_DIR / "tools.jsonl"))
        .replace("mine/", f"{tmp_path}/mine/")
        for line in block_starting(README, OWN_CATALOG).commands()
    ]
    for line in setup:
        subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, timeout=120, check=True)
    env_part, _, command = serve_line.partition(" ")
    assert env_part == "TOOLREC_API_KEY=dev-key" and " serve " in command
    args = command.split(" serve ", 1)[1].split()
    with serve_subprocess(args, {"TOOLREC_API_KEY": "dev-key"}, startup_timeout_s=120) as (url, _):
        body = {"tasks": ["send a Slack message to #ops"], "user_id": "anyone"}
        answer = httpx.post(f"{url}/v1/tools/select", json=body, headers={"Authorization": "Bearer dev-key"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["results"][0]["suggestions"][0]["tool_name"] == "Slack.SendMessage"


def test_readme_states_the_limits_the_api_enforces() -> None:
    assert f"**1 to {MAX_TASKS} `tasks`**" in README_TEXT and f"at most {MAX_TASK_CHARS:,} characters" in README_TEXT
    assert f"(at most {MAX_CONTEXT_CHARS:,} characters" in README_TEXT
    # A top_k past the most is answered with the most, not refused (PRODUCT.md §2; README said a 400, issue 26).
    select, search = (SELECT_TOP_K_DEFAULT, SELECT_TOP_K_MAX), (SEARCH_TOP_K_DEFAULT, SEARCH_TOP_K_MAX)
    for default, most in (select, search):
        assert f"`top_k` (default {default}; above {most} returns {most})" in README_TEXT


def readme_curls() -> list[str]:
    commands = [line for block in blocks(README, "sh") for line in block.commands() if line.startswith("curl ")]
    assert len(commands) >= 3, "README.md lost its curl examples"
    return commands


@pytest.mark.slow
def test_every_curl_of_readme_answers_with_the_fields_readme_names(tmp_path: Path) -> None:
    env = {"TOOLREC_API_KEY": "dev-key"}
    with toolrec_serve(tmp_path / ".toolrec", env) as (url, _):
        answers = {}
        for command in readme_curls():
            answer = run_curl(command.replace("http://127.0.0.1:8000", url), env)
            assert "name" not in answer, (command, answer)  # not the error body
            route = re.search(r"/v1/[a-z/]+", command)
            assert route, command
            answers[route.group(0)] = answer
        too_many = {"tasks": ["send a Slack message"], "user_id": "demo-user", "top_k": SELECT_TOP_K_MAX + 1}
        clamped = httpx.post(f"{url}/v1/tools/select", json=too_many, headers={"Authorization": "Bearer dev-key"})
    assert clamped.status_code == 200 and len(clamped.json()["results"][0]["suggestions"]) == SELECT_TOP_K_MAX
    select, search = answers["/v1/tools/select"], answers["/v1/tools/search"]
    named = [*select, *select["results"][0], *select["results"][0]["suggestions"][0], *search["results"][0]]
    assert [field for field in named if f"`{field}`" not in README_TEXT] == []  # README names every field answered
    assert answers["/v1/apps"]["apps"] and "`connected`" in README_TEXT


@pytest.mark.slow
def test_readme_python_blocks_run_against_toolrec_serve(tmp_path: Path) -> None:
    env = {"TOOLREC_API_KEY": "dev-key"}
    scripts = [block.text for block in blocks(README, "python")]
    assert scripts, "README.md lost its python examples"
    with toolrec_serve(tmp_path / ".toolrec", env) as (url, _):
        for number, script in enumerate(scripts):
            path = tmp_path / f"readme_{number}.py"
            path.write_text(script.replace("http://127.0.0.1:8000", url), encoding="utf-8")
            completed = subprocess.run(
                [sys.executable, str(path)], env={**os.environ, **env}, capture_output=True, text=True, timeout=60,
                check=False,
            )  # fmt: skip
            assert completed.returncode == 0, completed.stderr
            if "/mcp/default" in script:
                assert "send a Slack message to #ops -> ['Slack.SendMessage'" in completed.stdout, completed.stdout


def test_readme_is_a_guide_that_links_each_page_of_the_detail() -> None:
    """Issue 26 item 7: README was 826 lines of guide, figures and history; the figures live in docs/ now."""
    lines = README_TEXT.splitlines()
    assert len(lines) <= 300, len(lines)
    # Figures belong in docs/; the one table README keeps is learning from use, cold against warm (issue 36 item 5).
    learning = README_TEXT.split("\n## Learning from use\n", 1)[1].split("\n## ", 1)[0]
    elsewhere = README_TEXT.replace(learning, "")
    assert not [line for line in elsewhere.splitlines() if line.startswith("|")], "a table of figures belongs in docs/"
    assert "| requests asked | top-1 | C@5 | C@10 |" in learning.splitlines()
    pages = sorted(path.name for path in (README.parent / "docs").glob("*.md"))
    assert [page for page in pages if f"](docs/{page}" not in README_TEXT] == []


def _anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_between_readme_and_docs_lands() -> None:
    for page in DOC_PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # another site
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            assert linked.is_file(), f"{page.name} links {target}: no such file"
            headings = re.findall(r"^#+ (.*)$", linked.read_text(), re.M)
            assert not anchor or anchor in {_anchor(h) for h in headings}, f"{page.name} links {target}: no heading"
