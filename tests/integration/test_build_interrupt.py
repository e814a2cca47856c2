"""Ctrl-C during `toolrec build` says so in one line and exits 130, with no traceback (issue 33 item 12): it used to
print a 35-line traceback (and each embedding worker its own), though nothing was lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOLS = 4000  # above build.PARALLEL_MIN_TOOLS: the embedding runs in worker processes, which Ctrl-C reaches too


def _default_sigint() -> None:
    # A test runner started in the background inherits SIGINT ignored; a terminal's Ctrl-C reaches a default one.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_during_a_build_prints_one_line_and_exits_130(tmp_path: Path) -> None:
    catalog = tmp_path / "tools.jsonl"
    rows = (
        {
            "name": f"App{i // 50}.Tool{i}",
            "description": f"Update widget {i} of the team board",
            "input_schema": {"type": "object"},
            "app": f"App{i // 50}",
        }
        for i in range(TOOLS)
    )
    catalog.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    out, stderr_file = tmp_path / "index", tmp_path / "stderr.txt"
    command = [sys.executable, "-m", "build_index.cli", "build", "--catalog", str(catalog), "--out", str(out)]
    with stderr_file.open("w") as stderr:
        # Its own process group, signalled as a terminal's Ctrl-C signals the foreground one: parent and workers.
        build = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
            preexec_fn=_default_sigint,  # noqa: PLW1509 - no threads start before it in this test
        )
        try:
            deadline = time.monotonic() + 120
            while "embedding tools" not in stderr_file.read_text() and build.poll() is None:
                assert time.monotonic() < deadline, "the build never started embedding"
                time.sleep(0.1)
            assert build.poll() is None, f"the build ended before it was interrupted: {stderr_file.read_text()}"
            time.sleep(1.0)  # well into the embedding
            os.killpg(build.pid, signal.SIGINT)
            returncode = build.wait(timeout=60)
        finally:
            if build.poll() is None:
                os.killpg(build.pid, signal.SIGKILL)
                build.wait()

    printed = stderr_file.read_text()
    assert returncode == 130, printed
    lines = [line for line in printed.replace("\r", "\n").splitlines() if not line.startswith("embedding tools")]
    assert [line for line in lines if line.strip()] == ["toolrec: interrupted"], printed
    assert "Traceback" not in printed
    assert not (out / "LATEST").exists()
