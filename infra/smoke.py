"""Smoke test of a deployed (or local) stack: healthz serves the expected build, and one select answers.

    python -m infra.smoke --url https://abc.execute-api.eu-west-1.amazonaws.com --tenant acme \
        --expect-build-from build/index/acme

The API key comes from the environment variable the tenant file names (CI keeps it as a secret), never from an
argument, so it cannot land in a process list or a log.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from infra.publish import local_build_id
from infra.tenant import Smoke, load_tenant


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def wait_for_build(client: httpx.Client, expect_build: str | None, wait_s: float, poll_s: float = 5.0) -> Check:
    """healthz is 200 and, when a build is expected, serves it: warm instances pick up LATEST on their refresh."""
    deadline = time.monotonic() + wait_s
    while True:
        response = client.get("/healthz")
        body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
        serving = body.get("build_id")
        if response.status_code == 200 and (expect_build is None or serving == expect_build):
            return Check("healthz", True, f"serving {serving} ({body.get('tool_count')} tools)")
        if time.monotonic() >= deadline:
            wanted = f", expected {expect_build}" if expect_build else ""
            return Check("healthz", False, f"HTTP {response.status_code}, serving {serving}{wanted}")
        time.sleep(poll_s)


def select_check(client: httpx.Client, api_key: str, smoke: Smoke) -> Check:
    response = client.post(
        "/v1/tools/select",
        json={"tasks": [smoke.task], "user_id": smoke.user_id, "top_k": 5},
        headers={"Authorization": f"Bearer {api_key}"},
    )
    if response.status_code != 200:
        return Check("select", False, f"HTTP {response.status_code}: {response.text[:200]}")
    names = [s["tool_name"] for s in response.json()["results"][0]["suggestions"]]
    if not names:
        return Check("select", False, f"no suggestion for {smoke.task!r}")
    if smoke.expect_tool and smoke.expect_tool not in names:
        return Check("select", False, f"{smoke.expect_tool} not in {names}")
    return Check("select", True, f"{smoke.task!r} -> {names}")


def run_smoke(
    url: str, api_key: str, smoke: Smoke, expect_build: str | None = None, wait_s: float = 180.0
) -> list[Check]:
    with httpx.Client(base_url=url.rstrip("/"), timeout=30.0) as client:
        health = wait_for_build(client, expect_build, wait_s)
        if not health.ok:
            return [health]
        return [health, select_check(client, api_key, smoke)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.smoke", description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the stack's ApiUrl")
    parser.add_argument("--tenant", required=True, help="infra/tenants/<tenant>.toml names the key, user and task")
    parser.add_argument("--expect-build-from", type=Path, default=None, help="local index dir whose LATEST to expect")
    parser.add_argument("--wait", type=float, default=180.0, help="seconds to wait for the new build")
    args = parser.parse_args(argv)
    smoke = load_tenant(args.tenant).smoke
    api_key = os.environ.get(smoke.api_key_env)
    if not api_key:
        print(f"smoke: ${smoke.api_key_env} is not set", file=sys.stderr)
        return 2
    expect = local_build_id(args.expect_build_from) if args.expect_build_from else None
    checks = run_smoke(args.url, api_key, smoke, expect, args.wait)
    for check in checks:
        print(f"{'ok  ' if check.ok else 'FAIL'} {check.name}: {check.detail}")
    return 0 if all(c.ok for c in checks) and len(checks) == 2 else 1


if __name__ == "__main__":
    sys.exit(main())
