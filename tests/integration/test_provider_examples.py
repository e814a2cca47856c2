"""docs/providers.md's tool search scripts, run as written against `toolrec serve` (a subprocess on loopback).

Only the providers' HTTP is replaced: each SDK client gets a mock transport playing a scripted model that checks
every request as the real API would (tests/support/fake_providers.py). toolrec answers the search and runs the
tool for real (an HTTP worker on loopback), so a page that drifts from the API fails here.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO_ROOT
from tests.support.fake_providers import ScriptedClaude, ScriptedGPT
from tests.support.gateway_app import USER, Backends, Prepared, toolrec_serve

RUFF = str(Path(sys.executable).parent / "ruff")
TASK = "Send a Slack message to #ops saying the deploy finished"
MESSAGE = {"channel_name": "ops", "text": "deploy finished"}


PAGE = REPO_ROOT / "docs" / "providers.md"


def page_script(file_name: str) -> str:
    """The python block that follows the line of docs/providers.md naming ``file_name``."""
    block = re.search(rf"`{re.escape(file_name)}`:\n\n```python\n(.*?)^```$", PAGE.read_text(), re.M | re.S)
    assert block, f"docs/providers.md lost its {file_name} example"
    return block.group(1).strip() + "\n"


def load(file_name: str, directory: Path) -> ModuleType:
    path = directory / file_name
    path.write_text(page_script(file_name), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # as an import: the __main__ block (a real API call) does not run
    return module


@pytest.fixture(scope="module")
def server(prepared: Prepared) -> Iterator[str]:
    with toolrec_serve(prepared) as base:
        yield base


@pytest.fixture
def toolrec_env(server: str, prepared: Prepared, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLREC_URL", server)
    monkeypatch.setenv("TOOLREC_API_KEY", prepared.api_key)


def ran(final_text: str) -> dict[str, object]:
    execution: dict[str, object] = json.loads(final_text)
    return execution


@pytest.mark.usefixtures("toolrec_env")
def test_claude_example(tmp_path: Path, backends: Backends) -> None:
    example = load("claude_toolrec.py", tmp_path)
    model = ScriptedClaude(TASK, MESSAGE)
    with example.toolrec_client() as toolrec:
        answer = example.run(TASK, model.client(), toolrec, user=USER)

    assert model.called == ["Toolrec_FindTools", "Slack_SendMessage"]
    execution = ran(answer)
    assert (execution["success"], execution["tool_name"]) == (True, "Slack.SendMessage")
    assert execution["output"] == {"posted": True, "channel": "ops", "chars": len(MESSAGE["text"])}
    assert backends.worker_calls[-1]["user_id"] == USER
    search_answer = model.requests[1]["messages"][-1]["content"][0]
    assert search_answer["content"][0] == {"type": "tool_reference", "tool_name": "Slack_SendMessage"}


@pytest.mark.usefixtures("toolrec_env")
def test_gpt_example(tmp_path: Path, backends: Backends) -> None:
    example = load("gpt_toolrec.py", tmp_path)
    model = ScriptedGPT(TASK, MESSAGE)
    with example.toolrec_client() as toolrec:
        answer = example.run(TASK, model.client(), toolrec, user=USER)

    assert model.called == ["Slack_SendMessage"]
    execution = ran(answer)
    assert (execution["success"], execution["tool_name"]) == (True, "Slack.SendMessage")
    assert backends.worker_calls[-1] == {**backends.worker_calls[-1], "user_id": USER}
    search_output = model.requests[1]["input"][-1]
    assert (search_output["type"], search_output["call_id"]) == ("tool_search_output", "call_search")
    assert search_output["tools"][0]["name"] == "Slack_SendMessage"


@pytest.mark.parametrize("file_name", ["claude_toolrec.py", "gpt_toolrec.py"])
def test_each_example_is_a_whole_clean_script(file_name: str, tmp_path: Path) -> None:
    source = page_script(file_name)
    assert 'if __name__ == "__main__":' in source  # runnable as it stands, with a real API key
    (tmp_path / file_name).write_text(source, encoding="utf-8")
    config = ["--config", str(REPO_ROOT / "pyproject.toml")]
    for command in (["check", *config], ["format", "--check", *config]):
        linted = subprocess.run([RUFF, *command, file_name], cwd=tmp_path, capture_output=True, text=True, check=False)
        assert linted.returncode == 0, linted.stdout + linted.stderr
