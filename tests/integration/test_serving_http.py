"""`toolrec serve` as a user runs it: a subprocess on a free 127.0.0.1 port that builds the demo on first run,
answered over real HTTP — including README's curl example and every `python` block of README, run as written
(only the port differs)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from build_index.ops.loopback import serve_subprocess, stop
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
from tests.conftest import REPO_ROOT

TOOLREC = str(Path(sys.executable).parent / "toolrec")
README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


class Server:
    """A running ``toolrec serve`` and the file its output goes to."""

    def __init__(self, process: subprocess.Popen[bytes], log_path: Path) -> None:
        self.process = process
        self.log_path = log_path

    def stop(self) -> str:
        """Stop the server (stopping again is a no-op) and return everything it printed."""
        stop(self.process)
        return self.log_path.read_text(encoding="utf-8", errors="replace")


@contextmanager
def toolrec_serve(root: Path, env: dict[str, str], *args: str) -> Iterator[tuple[str, Server]]:
    log_path = root.parent / "serve.log"
    # 120 s: the first run loads the model and builds the demo index.
    with serve_subprocess(["--root", str(root), *args], env, startup_timeout_s=120, log_path=log_path) as running:
        url, process = running
        yield url, Server(process, log_path)


KEY_PLACEHOLDER = "<the key make serve printed>"


def readme_first_request() -> str:
    """README's first request: export the key `make serve` printed, then one curl."""
    block = re.search(r"^    (export TOOLREC_API_KEY=.*?)\n\n", README, re.M | re.S)
    assert block, "README.md lost its first request"
    return "\n".join(line.removeprefix("    ") for line in block.group(1).splitlines())


def printed_first_request(output: str) -> str:
    """The request `toolrec serve` printed on the run that generated its key, as README shows it."""
    block = re.search(r"^Try it from another terminal:\n((?:  .*\n)+)", output, re.M)
    assert block, output
    return "\n".join(line.removeprefix("  ") for line in block.group(1).splitlines())


def run_first_request(command: str) -> dict[str, Any]:
    assert shutil.which("curl"), "the README example needs curl"
    completed = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=30, check=True)
    body: dict[str, Any] = json.loads(completed.stdout)
    return body


@pytest.mark.slow
def test_readmes_first_curl_works_with_what_make_serve_printed(tmp_path: Path) -> None:
    env = {"TOOLREC_API_KEY": "", "TOOLREC_POLICY_CACHE_SECONDS": "0"}
    with toolrec_serve(tmp_path / ".toolrec", env) as (url, server):
        printed = printed_first_request(server.log_path.read_text(encoding="utf-8"))
        key = re.match(r"export TOOLREC_API_KEY=(\S+)\n", printed)
        assert key, printed
        readme = readme_first_request().replace("http://127.0.0.1:8000", url)
        assert printed == readme.replace(KEY_PLACEHOLDER, key.group(1))  # serve prints README's request, ready
        command = readme.replace(KEY_PLACEHOLDER, key.group(1))
        first, second = run_first_request(command)["results"]
        assert first["suggestions"][0]["tool_name"] == "Slack.SendMessage"
        assert "GitHub.CreateIssue" in [s["tool_name"] for s in second["suggestions"]]

        # `toolrec policy` edits the running server's policy file; the change applies on the next request.
        policy = ["--file", str(tmp_path / ".toolrec" / "policy.json")]
        subprocess.run(
            [TOOLREC, "policy", *policy, "rule", "put", "--subject", "demo-user", "--rule-id", "quiet",
             "--effect", "deny", "--tools", "Slack.*"],
            check=True, capture_output=True,
        )  # fmt: skip
        found = [s["tool_name"] for s in run_first_request(command)["results"][0]["suggestions"]]
        assert found and not any(name.startswith("Slack.") for name in found)


def readme_own_catalog_block() -> list[str]:
    block = re.search(
        r"^    (\.venv/bin/toolrec build --catalog tools\.jsonl --out mine/index\n.*?)\n\n", README, re.M | re.S
    )
    assert block, "README.md lost its own-catalog example"
    return [line.strip() for line in block.group(1).splitlines()]


@pytest.mark.slow
def test_readme_serves_ones_own_catalog_as_written(tmp_path: Path) -> None:
    *setup, serve_line = [
        line.replace(".venv/bin/", f"{Path(sys.executable).parent}/")
        .replace("tools.jsonl", str(DEMO_DIR / "tools.jsonl"))
        .replace("mine/", f"{tmp_path}/mine/")
        for line in readme_own_catalog_block()
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
    assert f"**1 to {MAX_TASKS} `tasks`**" in README and f"at most {MAX_TASK_CHARS:,} characters" in README
    assert f"(at most {MAX_CONTEXT_CHARS:,} characters" in README
    # A top_k past the most is answered with the most, not refused (PRODUCT.md §2; README said a 400, issue 26).
    select, search = (SELECT_TOP_K_DEFAULT, SELECT_TOP_K_MAX), (SEARCH_TOP_K_DEFAULT, SEARCH_TOP_K_MAX)
    for default, most in (select, search):
        assert f"`top_k` (default {default}; above {most} returns {most})" in README


def readme_curls() -> list[str]:
    """Every curl command of README, continuation lines joined."""
    commands = re.findall(r"^    (curl (?:.*\\\n)*.*)$", README, re.M)
    assert len(commands) >= 3, "README.md lost its curl examples"
    return [command.replace("\\\n", "") for command in commands]


@pytest.mark.slow
def test_every_curl_of_readme_answers_with_the_fields_readme_names(tmp_path: Path) -> None:
    env = {"TOOLREC_API_KEY": "dev-key"}
    with toolrec_serve(tmp_path / ".toolrec", env) as (url, _):
        answers = {}
        for command in readme_curls():
            ran = subprocess.run(
                ["bash", "-c", command.replace("http://127.0.0.1:8000", url)],
                env={**os.environ, **env}, capture_output=True, text=True, timeout=30, check=True,
            )  # fmt: skip
            answer = json.loads(ran.stdout)
            assert "name" not in answer, (command, answer)  # not the error body
            route = re.search(r"/v1/[a-z/]+", command)
            assert route, command
            answers[route.group(0)] = answer
        too_many = {"tasks": ["send a Slack message"], "user_id": "demo-user", "top_k": SELECT_TOP_K_MAX + 1}
        clamped = httpx.post(f"{url}/v1/tools/select", json=too_many, headers={"Authorization": "Bearer dev-key"})
    assert clamped.status_code == 200 and len(clamped.json()["results"][0]["suggestions"]) == SELECT_TOP_K_MAX
    select, search = answers["/v1/tools/select"], answers["/v1/tools/search"]
    named = [*select, *select["results"][0], *select["results"][0]["suggestions"][0], *search["results"][0]]
    assert [field for field in named if f"`{field}`" not in README] == []  # README names every field answered
    assert answers["/v1/apps"]["apps"] and "`connected`" in README


def readme_python_blocks() -> list[str]:
    blocks = re.findall(r"^```python\n(.*?)^```$", README, re.M | re.S)
    assert blocks, "README.md lost its python examples"
    return blocks


@pytest.mark.slow
def test_readme_python_blocks_run_against_toolrec_serve(tmp_path: Path) -> None:
    env = {"TOOLREC_API_KEY": "dev-key"}
    with toolrec_serve(tmp_path / ".toolrec", env) as (url, _):
        for number, block in enumerate(readme_python_blocks()):
            script = tmp_path / f"readme_{number}.py"
            script.write_text(block.replace("http://127.0.0.1:8000", url), encoding="utf-8")
            completed = subprocess.run(
                [sys.executable, str(script)], env={**os.environ, **env}, capture_output=True, text=True, timeout=60,
                check=False,
            )  # fmt: skip
            assert completed.returncode == 0, completed.stderr
            if "/mcp/default" in block:
                assert "send a Slack message to #ops -> ['Slack.SendMessage'" in completed.stdout, completed.stdout


@pytest.mark.slow
def test_serve_says_which_key_to_use_and_keeps_one_bootstrap_key(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with toolrec_serve(root, {"TOOLREC_API_KEY": ""}) as (url, server):
        output = server.stop()
    generated = re.search(r"API key \(shown once; only its sha256 is kept in \S+\): (\S+)", output)
    assert generated, output
    assert re.search(r"building the demo index \(96 tools\) in \S+ \(first run, a few seconds\)", output), output

    def apps_status(key: str) -> int:
        headers = {"Authorization": f"Bearer {key}"}
        return httpx.get(f"{url}/v1/apps", params={"user_id": "demo-user"}, headers=headers).status_code

    with toolrec_serve(root, {"TOOLREC_API_KEY": ""}) as (url, server):  # a restart says which key, not the key
        assert apps_status(generated.group(1)) == 200
        assert httpx.get(f"{url}/v1/apps", params={"user_id": "demo-user"}).status_code == 401
        output = server.stop()
    assert "API key: the one printed when it was generated, on the first run" in output, output
    assert generated.group(1) not in output and "building" not in output  # built once

    with toolrec_serve(root, {"TOOLREC_API_KEY": "trk_chosen-later"}) as (url, server):
        assert (apps_status("trk_chosen-later"), apps_status(generated.group(1))) == (200, 401)
        output = server.stop()
    assert "API key: the value of TOOLREC_API_KEY (it replaces bootstrap, which no longer works)" in output, output
    stored = json.loads((root / "policy.json").read_text())["api_keys"]
    assert [key["key_id"] for key in stored] == ["bootstrap"]  # one bootstrap key, not one per value ever used


def test_a_taken_port_is_said_first_with_how_to_pick_another(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ran = subprocess.run(
            [TOOLREC, "serve", "--port", str(port), "--root", str(tmp_path / ".toolrec")],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    said = ran.stdout + ran.stderr
    assert ran.returncode == 2, said
    assert f"127.0.0.1:{port} is already in use" in said and "make serve PORT=" in said, said
    assert "toolrec on" not in said and "Traceback" not in said and "Errno" not in said, said
    assert not (tmp_path / ".toolrec").exists()  # nothing built or written before it was said


def test_make_serve_takes_port_and_host() -> None:
    result = subprocess.run(
        ["make", "-n", "serve", "PORT=8123", "HOST=0.0.0.0"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert "toolrec serve --host 0.0.0.0 --port 8123" in result.stdout
    default = subprocess.run(["make", "-n", "serve"], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert "toolrec serve --host 127.0.0.1 --port 8000" in default.stdout


def test_the_first_install_says_how_long_it_takes_and_shows_pips_progress(tmp_path: Path) -> None:
    fresh = [f"VENV={tmp_path / '.venv'}", f"SAM_VENV={tmp_path / '.venv-sam'}"]  # as on a fresh clone
    for target, what in (("serve", "toolrec and its dependencies"), ("test", "the SAM CLI")):
        planned = subprocess.run(
            ["make", "-n", target, *fresh], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=True
        ).stdout.splitlines()
        said = next((line for line in planned if line.startswith(f'echo "make: installing {what}')), None)
        assert said is not None and "the first time" in said, planned
        after = planned[planned.index(said) :]
        install = next(line for line in after if " install " in line and "--upgrade pip" not in line)
        assert "--quiet" not in install, install  # pip's own lines show it moving
