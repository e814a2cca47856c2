"""The tools the infra commands run (make, pip, toolrec, python3.12, the SAM CLI), and what a command says when one
fails: the tool's own error, then one line naming the tool and what to do, and exit 1 (issue 26 item 2). Before,
`python -m infra.deploy --api-url` ended in a CalledProcessError traceback with SAM's captured error never shown.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

FAILED_EXIT = 1
# How to install a tool that is not there, by the path the infra commands run it from.
INSTALL_HINTS = {
    ".venv-sam/bin/sam": "make sam-venv",
    ".venv/bin/toolrec": "make install",
    ".venv/bin/python": "make install",
}


class ToolFailedError(RuntimeError):
    """A tool an infra command ran failed (or is missing); ``output`` is what it said, when that was captured."""

    def __init__(self, argv: Sequence[str], exit_code: int | None, fix: str, output: str = "") -> None:
        self.argv = tuple(argv)
        self.exit_code = exit_code
        self.fix = fix
        self.output = output
        status = "is not installed" if exit_code is None else f"failed (exit {exit_code})"
        super().__init__(f"`{self.command}` {status}: {fix}")

    @property
    def command(self) -> str:
        """The tool and its subcommand (`sam list stack-outputs`, `python -m pip`): the whole line may run for
        several lines."""
        words = [Path(self.argv[0]).name]
        for word in self.argv[1:]:
            if word.startswith("-") and word not in ("-m", "-I"):
                break
            if word != "-I":
                words.append(word)
        return shlex.join(words[:4])


def run_tool(
    argv: Sequence[str],
    fix: str,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    capture: bool = False,
    stdout: int | None = None,
) -> str:
    """Run ``argv``; its stdout when ``capture``. A failure raises ToolFailedError carrying ``fix``, the one thing
    to do; an uncaptured tool has already printed its error to the terminal."""
    try:
        done = subprocess.run(  # noqa: S603 (each caller builds argv itself, no shell)
            argv, cwd=cwd, env=env, capture_output=capture, stdout=None if capture else stdout, text=True, check=False
        )
    except FileNotFoundError:
        install = INSTALL_HINTS.get(argv[0])
        raise ToolFailedError(argv, None, f"run `{install}`" if install else f"install {argv[0]}") from None
    if done.returncode != 0:
        said = (done.stdout or "") + (done.stderr or "") if capture else ""
        raise ToolFailedError(argv, done.returncode, fix, said)
    return done.stdout or ""


def exit_code_of(program: str, command: Callable[[], int | None]) -> int:
    """A command's exit code (None counts as 0); a failed tool prints what it said and one line saying what to
    do, and the command exits 1."""
    try:
        return command() or 0
    except ToolFailedError as failed:
        if failed.output:
            sys.stderr.write(failed.output if failed.output.endswith("\n") else failed.output + "\n")
        print(f"{program}: {failed}", file=sys.stderr)
        return FAILED_EXIT
