"""Record the AWS calls the service's adapters make, as IAM actions on named resources.

Each recorder drives the production adapter (not a copy of its logic) against moto, with a botocore hook that
sees every operation before it is sent.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws

from build_index.build import index_tools
from build_index.ingest.catalog_files import read_catalogs
from build_index.ingest.upstream_headers import parse_upstreams, secrets_manager_reader
from build_index.model_prepare import MODEL_ID
from build_index.publish import publish
from build_index.refresh.run import refresh
from handler.catalog.tool import Tool
from handler.errors import ExecutionError
from handler.execute.base import ToolCall
from handler.execute.lambda_executor import LambdaExecutor
from handler.index.store import S3IndexStore, load_latest
from handler.inference.embedder import OnnxEmbedder
from handler.inference.model_files import default_model_dir
from handler.policy.dynamodb_schema import create_tables
from handler.policy.dynamodb_store import DynamoPolicyStore, TableNames
from handler.policy.model import ExecutionRecord, QueryRecord
from handler.policy.store import PolicyStore
from tests.support.servers import serve
from tests.support.workers import bearer_protected, upstream_mcp_app

REGION = "us-east-1"
# API operation -> IAM action, where the two names differ.
IAM_ACTION = {"lambda:Invoke": "lambda:InvokeFunction"}
CATALOG = Path(__file__).resolve().parents[2] / "build_index" / "demo" / "tools.jsonl"


def _recorder(client: Any, service: str, sink: Callable[[str, dict[str, Any]], None]) -> None:
    def hook(model: Any, params: dict[str, Any], **_: Any) -> None:
        action = f"{service}:{model.name}"
        sink(IAM_ACTION.get(action, action), params)

    client.meta.events.register(f"before-parameter-build.{service}", hook)


def _policy_store_exercise() -> dict[str, Callable[[PolicyStore], object]]:
    now = datetime.now(UTC)
    record = QueryRecord(
        query_id="q1",
        user_id="ana",
        gateway_id="g",
        tasks=("post a message",),
        recommended=(("Slack.SendMessage",),),
        created_at=now,
        expires_at=int(now.timestamp()) + 60,
    )
    execution = ExecutionRecord(tool_name="Slack.SendMessage", user_id="ana", at=now, outcome="ok")
    return {
        "gateway": lambda s: s.gateway("g"),
        "gateway_ids": lambda s: s.gateway_ids(),
        "access_rules": lambda s: s.access_rules("ana"),
        "apps": lambda s: s.apps(),
        "connections": lambda s: s.connections("ana"),
        "api_key": lambda s: s.api_key("0" * 64),
        "put_query": lambda s: s.put_query(record),
        "get_query": lambda s: s.get_query("q1"),
        "record_execution": lambda s: s.record_execution("q1", execution),
        "queries": lambda s: list(s.queries(now.timestamp())),
    }


def dynamodb_calls_of_policy_store() -> dict[str, set[str]]:
    """Settings table field (``policy_table``...) -> the DynamoDB actions the service's PolicyStore calls on it."""
    exercise = _policy_store_exercise()
    port_methods = {name for name in vars(PolicyStore) if not name.startswith("_")}
    assert set(exercise) == port_methods, "a PolicyStore method is not exercised here: add it"
    tables = TableNames(policy="policy_table", connections="connections_table", api_keys="api_keys_table",
                        query_log="query_log_table")  # fmt: skip
    calls: dict[str, set[str]] = {}
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        create_tables(client, tables)
        _recorder(client, "dynamodb", lambda action, params: calls.setdefault(params["TableName"], set()).add(action))
        store = DynamoPolicyStore(client, tables)
        for run in exercise.values():
            run(store)
    return calls


def s3_calls_of_index_load(bucket: str, prefix: str, tmp_path: Path) -> list[tuple[str, str]]:
    """(action, key) for every S3 call a cold start makes to load the published index."""
    catalog = tmp_path / "tools.jsonl"
    catalog.write_text("\n".join(CATALOG.read_text().splitlines()[:5]) + "\n")
    tools = read_catalogs([catalog])
    embedder = OnnxEmbedder(default_model_dir())
    built = index_tools(tools, embedder, MODEL_ID, progress=False)
    calls: list[tuple[str, str]] = []
    with mock_aws():
        client = boto3.client("s3", region_name=REGION)
        client.create_bucket(Bucket=bucket)
        publish(built, f"s3://{bucket}/{prefix}", s3_client=client)
        _recorder(client, "s3", lambda action, params: calls.append((action, params.get("Key", ""))))
        loaded = load_latest(S3IndexStore(client, bucket, prefix), tmp_path / "cache", embedder.fingerprint)
    assert len(loaded.tools) == len(tools)
    return calls


async def lambda_calls_of_executor(function_name: str) -> set[str]:
    """The Lambda actions the ``lambda`` executor needs (moto has no such function: the call fails after the hook)."""
    actions: set[str] = set()
    with mock_aws():
        client = boto3.client("lambda", region_name=REGION)
        _recorder(client, "lambda", lambda action, _params: actions.add(action))
        tool = Tool.model_validate(
            {
                "name": "Weather.Get",
                "description": "Get the weather.",
                "input_schema": {"type": "object"},
                "app": "Weather",
                "executor": {"kind": "lambda", "target": function_name},
            }
        )
        with contextlib.suppress(ExecutionError):
            await LambdaExecutor(client).call(ToolCall(tool=tool, arguments={}, user_id="ana"))
    return actions


def calls_of_refresh(bucket: str, prefix: str, secret_id: str, query_log: str) -> list[tuple[str, str]]:
    """(action, S3 key, secret id or table) for every AWS call of a scheduled refresh that publishes a new build,
    learning from the query log as it does by default."""
    tools = read_catalogs([CATALOG])[:3]
    embedder = OnnxEmbedder(default_model_dir())
    calls: list[tuple[str, str]] = []
    with serve(bearer_protected(upstream_mcp_app(), "token")) as base, mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=bucket)
        secrets = boto3.client("secretsmanager", region_name=REGION)
        secrets.create_secret(Name=secret_id, SecretString="token")
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        tables = TableNames(policy="p", connections="c", api_keys="k", query_log=query_log)
        create_tables(dynamodb, tables)
        log = DynamoPolicyStore(dynamodb, tables)
        now = datetime.now(UTC)
        ran = ((tools[0].name,),)
        log.put_query(QueryRecord(query_id="q1", user_id="ana", tasks=("a task",), recommended=ran, created_at=now,
                                  expires_at=int(now.timestamp()) + 3600))  # fmt: skip
        log.record_execution("q1", ExecutionRecord(tool_name=tools[0].name, user_id="ana", at=now, outcome="ok"))
        publish(index_tools(tools, embedder, MODEL_ID, progress=False), f"s3://{bucket}/{prefix}", s3_client=s3)
        _recorder(s3, "s3", lambda action, params: calls.append((action, params.get("Key", ""))))
        _recorder(secrets, "secretsmanager", lambda action, params: calls.append((action, params["SecretId"])))
        _recorder(dynamodb, "dynamodb", lambda action, params: calls.append((action, params["TableName"])))
        header = {"Authorization": f"Bearer ${{secretsmanager:{secret_id}}}"}
        upstreams = parse_upstreams(f'[{{"url": "{base}/mcp", "app": "Crm", "headers": {json.dumps(header)}}}]')
        location, reader = f"s3://{bucket}/{prefix}", secrets_manager_reader(secrets)
        result = refresh(location, upstreams, embedder, MODEL_ID, {}, usage=f"dynamodb:{query_log}", s3_client=s3,
                         dynamodb_client=dynamodb, read_secret=reader)  # fmt: skip
    assert result.published and result.tool_count == len(tools) + 4
    return calls
