"""Deploy one tenant's stack: package, build the index, deploy, publish the index, smoke test. One command:

    python -m infra.deploy --tenant acme             # run it (CI, with AWS credentials)
    python -m infra.deploy --tenant acme --dry-run   # print the exact commands, touch nothing
    python -m infra.deploy --tenant acme --api-url   # print the deployed stack's ApiUrl (for the drift check)

Order, and why: the index is built first, so a bad catalog fails the deploy before AWS is touched; the stack is
deployed before the index is published because it may own the index bucket; the smoke test waits until healthz
serves the build just published (warm instances pick up LATEST on their refresh interval).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace

from infra.tenant import REPO_ROOT, Tenant, load_tenant, tenant_names
from infra.tools import exit_code_of, run_tool

PYTHON = ".venv/bin/python"
TOOLREC = ".venv/bin/toolrec"
SAM = ".venv-sam/bin/sam"
API_URL = "{ApiUrl}"  # filled from the stack's outputs once they exist
PROGRAM = "python -m infra.deploy"


@dataclass(frozen=True)
class Step:
    name: str
    argv: tuple[str, ...]
    fix: str  # what to do when it fails, after the tool's own error

    def line(self) -> str:
        return shlex.join(self.argv)


def index_dir(tenant: Tenant) -> str:
    return f"build/index/{tenant.name}"


def parameter_overrides(tenant: Tenant) -> list[str]:
    values = {
        "TenantName": tenant.name,
        "Stage": tenant.stage,
        "IndexBucketName": tenant.index_bucket,
        "CreateIndexBucket": str(tenant.create_index_bucket).lower(),
        "IndexPrefix": tenant.index_prefix,
        "LogLevel": tenant.log_level,
        "ExecutorFunctionPrefix": tenant.executor_function_prefix,
        "EnableTracing": str(tenant.enable_tracing).lower(),
        # Always given, `[]` for none: a parameter left out keeps its previous value on a stack update.
        "UpstreamServers": tenant.upstreams_json,
        "LearnFromUse": str(tenant.learn_from_use).lower(),
    }
    if tenant.upstreams or tenant.learn_from_use:
        values["RefreshSchedule"] = tenant.refresh_schedule
    return [f"{name}={sam_escaped(value)}" for name, value in values.items()]


def sam_escaped(value: str) -> str:
    """A value as `sam deploy --parameter-overrides` reads it back: spaces and quotes escaped with a backslash."""
    if "\\" in value:
        raise ValueError(f"a parameter value with a backslash cannot pass through sam: {value[:40]!r}")
    return value.replace('"', '\\"').replace("'", "\\'").replace(" ", "\\ ")


def outputs_step(tenant: Tenant) -> Step:
    region = ("--region", tenant.region)
    argv = (SAM, "list", "stack-outputs", "--stack-name", tenant.stack_name, *region, "--output", "json")
    fix = (
        f"is stack {tenant.stack_name} deployed in {tenant.region}, and are this shell's AWS credentials for its"
        f" account? (deploy it: python -m infra.deploy --tenant {tenant.name})"
    )
    return Step("read stack outputs", argv, fix)


def plan(tenant: Tenant) -> list[Step]:
    again = f"then run python -m infra.deploy --tenant {tenant.name} again"
    return [*_build_steps(tenant, again), *_release_steps(tenant, again)]


def _build_steps(tenant: Tenant, again: str) -> list[Step]:
    """What needs no AWS, first: a bad catalog fails the deploy before anything is touched."""
    catalogs = [arg for path in tenant.catalogs for arg in ("--catalog", str(path))]
    # Upstream tools enter the first build too, not only at the first scheduled refresh.
    upstreams = [
        Step(
            "add the upstream MCP servers' tools",
            (TOOLREC, "refresh", "--index", index_dir(tenant), "--upstreams", tenant.upstreams_json),
            f"fix the upstream server or credentials it names above (the tenant file's [[upstreams]]), {again}",
        )
    ]
    return [
        Step("package the function", ("make", "package"), f"fix what `make package` says above, {again}"),
        Step(
            "build the index",
            (TOOLREC, "build", *catalogs, "--out", index_dir(tenant), "--quiet"),
            f"fix the catalog rows it names above (`toolrec lint --catalog FILE` checks one), {again}",
        ),
        *(upstreams if tenant.upstreams else []),
    ]


def _release_steps(tenant: Tenant, again: str) -> list[Step]:
    deploy = (
        SAM, "deploy", "--template-file", "template.yaml", "--stack-name", tenant.stack_name,
        "--region", tenant.region, "--capabilities", "CAPABILITY_IAM", "--resolve-s3",
        "--no-confirm-changeset", "--no-fail-on-empty-changeset",
        "--parameter-overrides", *parameter_overrides(tenant),
        "--tags", f"toolrec:tenant={tenant.name}", f"toolrec:stage={tenant.stage}",
    )  # fmt: skip
    smoke = (PYTHON, "-m", "infra.smoke", "--url", API_URL, "--tenant", tenant.name,
             "--expect-build-from", index_dir(tenant))  # fmt: skip
    return [
        Step(
            "deploy the stack",
            deploy,
            f"read SAM's error above (the stack's events are in CloudFormation) and check this shell's AWS"
            f" credentials for {tenant.region}, {again}",
        ),
        Step(
            "publish the index",
            (PYTHON, "-m", "infra.publish", "--from", index_dir(tenant), "--to", tenant.index_location),
            f"the stack is deployed; check that these AWS credentials may write {tenant.index_location}, {again}",
        ),
        outputs_step(tenant),
        Step(
            "smoke test",
            smoke,
            "the stack is deployed and the index published; the checks above say what the stage answered (its policy"
            " must let the tenant's smoke user use the expected tool)",
        ),
    ]


def _environment(tenant: Tenant) -> dict[str, str]:
    return {**os.environ, "SAM_CLI_TELEMETRY": "0", "AWS_DEFAULT_REGION": tenant.region}


def stack_outputs(tenant: Tenant) -> dict[str, str]:
    step = outputs_step(tenant)
    listed = run_tool(step.argv, step.fix, cwd=REPO_ROOT, env=_environment(tenant), capture=True)
    return {item["OutputKey"]: item["OutputValue"] for item in json.loads(listed)}


def execute(tenant: Tenant, steps: Sequence[Step]) -> None:
    outputs: dict[str, str] = {}
    for number, step in enumerate(steps, 1):
        if step.argv == outputs_step(tenant).argv:
            outputs = stack_outputs(tenant)
            print(f"[{number}/{len(steps)}] {step.name}: ApiUrl={outputs.get('ApiUrl')}", flush=True)
            continue
        ready = replace(step, argv=tuple(outputs.get("ApiUrl", a) if a == API_URL else a for a in step.argv))
        print(f"[{number}/{len(steps)}] {ready.name}: {ready.line()}", flush=True)
        run_tool(ready.argv, f"{ready.name} failed: {ready.fix}", cwd=REPO_ROOT, env=_environment(tenant))


DESCRIPTION = (
    "Deploy one tenant's stack (infra/tenants/<tenant>.toml): package the function, build the index, deploy the"
    " stack, publish the index and smoke-test it."
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROGRAM, description=DESCRIPTION)
    parser.add_argument("--tenant", required=True, choices=tenant_names())
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the commands instead of running them")
    mode.add_argument("--api-url", action="store_true", help="print the deployed stack's ApiUrl and stop")
    args = parser.parse_args(argv)
    tenant = load_tenant(args.tenant)
    if args.api_url:
        return exit_code_of(PROGRAM, lambda: print(stack_outputs(tenant)["ApiUrl"]))
    steps = plan(tenant)
    if args.dry_run:
        print(f"# deploy tenant {tenant.name} ({tenant.stage}, {tenant.region}) as stack {tenant.stack_name}")
        for number, step in enumerate(steps, 1):
            print(f"# {number}. {step.name}\n{step.line()}")
        return 0
    return exit_code_of(PROGRAM, lambda: execute(tenant, steps))


if __name__ == "__main__":
    sys.exit(main())
