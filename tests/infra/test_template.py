"""template.yaml: valid for SAM and cfn-lint, and consistent with the code it deploys.

The grants are compared with the AWS calls the code really makes: each check runs the production adapter against
moto (or a real client) and records every operation and the resource it names.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import boto3
import pytest
from mangum import Mangum
from moto import mock_aws

from build_index.ingest.upstream_headers import parse_upstreams
from handler.composition import build_app
from handler.inference.embedder import OnnxEmbedder
from handler.policy.dynamodb_schema import table_definitions
from handler.policy.dynamodb_store import TableNames
from handler.settings import DYNAMODB_TABLE_FIELDS, ENV_PREFIX, RefreshSettings, Settings
from infra.package import PYTHON_VERSION
from tests.infra.aws_calls import (
    calls_of_refresh,
    dynamodb_calls_of_policy_store,
    lambda_calls_of_executor,
    s3_calls_of_index_load,
)
from tests.infra.conftest import REGION, REPO_ROOT, TEMPLATE, sam_env
from tests.infra.template_model import NO_VALUE, PARAMS, environment, function, grants, resolve, resources_of_type
from tests.support.serving import (
    LambdaContext,
    apigw_event,
    demo_tools,
    file_settings,
    lambda_thread_loop,
    publish_tools,
    write_test_policy,
)

# Settings the Lambda must not get from its environment, and why.
LOCAL_ONLY = {
    f"{ENV_PREFIX}POLICY_FILE": "the Lambda reads policy from DynamoDB",
    f"{ENV_PREFIX}API_KEY": "a plaintext secret; deployed keys live hashed in the API keys table",
}
ROUTES = {
    ("POST", "/v1/tools/select"),
    ("POST", "/v1/tools/search"),
    ("POST", "/v1/tools/execute"),
    ("GET", "/v1/apps"),
    ("GET", "/v1/providers/anthropic/tools"),
    ("POST", "/v1/providers/anthropic/search"),
    ("GET", "/v1/providers/openai/tools"),
    ("POST", "/v1/providers/openai/search"),
    ("GET", "/v1/usage"),
    ("GET", "/healthz"),
    ("POST", "/mcp/{gateway_id}"),
    ("GET", "/"),
    ("GET", "/console/console.js"),
    ("GET", "/console/console.css"),
}


def test_sam_validate_lint_passes(sam_venv: Path) -> None:
    result = subprocess.run(
        [str(sam_venv / "bin" / "sam"), "validate", "--lint", "--template-file", str(TEMPLATE)],
        capture_output=True,
        text=True,
        env=sam_env(),
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("broken", [False, True], ids=["template", "broken-copy"])
def test_cfn_lint(python_bin: Path, tmp_path: Path, broken: bool) -> None:
    target = TEMPLATE
    if broken:  # the same check must reject a real mistake, or it proves nothing
        target = tmp_path / "template.yaml"
        target.write_text(TEMPLATE.read_text().replace("PointInTimeRecoveryEnabled: true", "PointInTimeRecovery: on"))
    result = subprocess.run(
        [str(python_bin / "cfn-lint"), "--", str(target)], capture_output=True, text=True, timeout=300, check=False
    )
    assert (result.returncode != 0) == broken, result.stdout + result.stderr


def test_function_environment_sets_every_setting(translated: dict[str, Any]) -> None:
    declared = {name for name in environment(translated) if name.startswith(ENV_PREFIX)}
    read_by_code = {ENV_PREFIX + field.upper() for field in Settings.model_fields}
    assert declared == read_by_code - set(LOCAL_ONLY)


def test_function_environment_is_a_valid_configuration(
    translated: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [n for n in os.environ if n.startswith(ENV_PREFIX) or n == "AWS_ENDPOINT_URL"]:
        monkeypatch.delenv(name)
    for name, value in environment(translated).items():
        if (resolved := resolve(value)) is not NO_VALUE:
            monkeypatch.setenv(name, str(resolved))
    settings = Settings()
    assert settings.policy_backend == "dynamodb"
    assert settings.index_location == f"s3://{PARAMS['IndexBucketName']}/{PARAMS['IndexPrefix']}"
    assert str(settings.model_dir) == "/var/task/model"  # where infra/package.py puts the model
    assert settings.api_key is None


def test_function_shape(translated: dict[str, Any]) -> None:
    props = function(translated)["Properties"]
    assert props["Handler"] == "handler.lambda_entry.handler"
    assert props["Runtime"] == f"python{PYTHON_VERSION}"  # the wheels infra/package.py installs
    assert props["Architectures"] == ["x86_64"]  # infra/package.py builds wheels for this platform
    assert props["MemorySize"] == 1769


def test_the_function_outlives_the_longest_tool_wait(translated: dict[str, Any]) -> None:
    """A slow tool ends in toolrec's own executor_timeout answer, recorded, with 5 s to spare before the function's
    Timeout, itself within API Gateway's 30 s. Before, both were 30 s, the catalog's default timeout_s, so Lambda's
    limit came first and the call ended unanswered (issue 22)."""
    timeout = function(translated)["Properties"]["Timeout"]
    longest_wait = float(resolve(environment(translated)[f"{ENV_PREFIX}MAX_TOOL_SECONDS"]))
    assert longest_wait + 5 <= timeout <= 30


def test_snapstart_serves_a_published_version_through_an_alias(translated: dict[str, Any]) -> None:
    props = function(translated)["Properties"]
    assert props["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    assert props.get("EphemeralStorage", {"Size": 512})["Size"] <= 512  # SnapStart refuses more
    assert "FileSystemConfigs" not in props
    (alias,) = resources_of_type(translated, "AWS::Lambda::Alias").values()
    assert alias["Properties"]["Name"] == "live"
    version_id = alias["Properties"]["FunctionVersion"]["Fn::GetAtt"][0]
    assert translated["Resources"][version_id]["Type"] == "AWS::Lambda::Version"
    # SnapStart applies to versions only: every route must invoke the alias, never $LATEST.
    (api,) = resources_of_type(translated, "AWS::ApiGatewayV2::Api").values()
    for methods in api["Properties"]["Body"]["paths"].values():
        for operation in methods.values():
            uri = json.dumps(operation["x-amazon-apigateway-integration"]["uri"])
            assert "Aliaslive" in uri, uri
    for permission in resources_of_type(translated, "AWS::Lambda::Permission").values():
        assert "Aliaslive" in json.dumps(permission["Properties"]["FunctionName"])


def test_http_api_routes_are_explicit(translated: dict[str, Any]) -> None:
    (api,) = resources_of_type(translated, "AWS::ApiGatewayV2::Api").values()
    paths = api["Properties"]["Body"]["paths"]
    routes = {(method.upper(), path) for path, methods in paths.items() for method in methods}
    assert routes == ROUTES
    for methods in paths.values():
        for operation in methods.values():
            assert operation["x-amazon-apigateway-integration"]["payloadFormatVersion"] == "2.0"


def test_tables_match_the_code_schema_and_are_protected(translated: dict[str, Any]) -> None:
    env = environment(translated)
    names = TableNames(**{field.removesuffix("_table"): field for field in DYNAMODB_TABLE_FIELDS})
    for definition in table_definitions(names):
        logical = env[ENV_PREFIX + definition["TableName"].upper()]["Ref"]
        props = translated["Resources"][logical]["Properties"]
        assert props["KeySchema"] == definition["KeySchema"], logical
        assert props["AttributeDefinitions"] == definition["AttributeDefinitions"], logical
        assert props["BillingMode"] == "PAY_PER_REQUEST"
        assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    ttl = translated["Resources"][env[f"{ENV_PREFIX}QUERY_LOG_TABLE"]["Ref"]]["Properties"]["TimeToLiveSpecification"]
    assert ttl == {"AttributeName": "expires_at", "Enabled": True}


def test_index_bucket_is_private_versioned_encrypted(translated: dict[str, Any]) -> None:
    props = translated["Resources"]["IndexBucket"]["Properties"]
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert all(props["PublicAccessBlockConfiguration"].values())
    assert len(props["PublicAccessBlockConfiguration"]) == 4


def _dynamodb_grants(translated: dict[str, Any]) -> dict[str, set[str]]:
    return {
        resource.removeprefix("arn:"): {a for a in actions if a.startswith("dynamodb:")}
        for resource, actions in grants(translated).items()
        if any(a.startswith("dynamodb:") for a in actions)
    }


def test_tables_grant_exactly_the_calls_the_policy_store_makes(translated: dict[str, Any]) -> None:
    env = environment(translated)
    calls = dynamodb_calls_of_policy_store()
    expected: dict[str, set[str]] = {}
    for field in DYNAMODB_TABLE_FIELDS:
        logical = env[ENV_PREFIX + field.upper()]["Ref"]
        expected[logical] = calls.get(field, set())
    assert _dynamodb_grants(translated) == {k: v for k, v in expected.items() if v}


def test_index_read_is_limited_to_the_prefix(translated: dict[str, Any], tmp_path: Path) -> None:
    bucket, prefix = PARAMS["IndexBucketName"], PARAMS["IndexPrefix"]
    calls = s3_calls_of_index_load(bucket, prefix, tmp_path)
    assert {action for action, _ in calls} == {"s3:GetObject"}
    s3_grants = {r: a for r, a in grants(translated).items() if any(x.startswith("s3:") for x in a)}
    assert s3_grants == {f"arn:aws:s3:::{bucket}/{prefix}/*": {"s3:GetObject"}}
    assert all(key.startswith(f"{prefix}/") for _, key in calls)


def test_refresh_function_environment_is_a_valid_configuration(
    translated: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    env = environment(translated, "RefreshFunction")
    declared = {name for name in env if name.startswith(ENV_PREFIX)}
    assert declared == {ENV_PREFIX + field.upper() for field in RefreshSettings.model_fields}
    for name in [n for n in os.environ if n.startswith(ENV_PREFIX)]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        if (resolved := resolve(value)) is not NO_VALUE:
            monkeypatch.setenv(name, str(resolved))
    settings = RefreshSettings()
    assert settings.index_location == resolve(environment(translated)[f"{ENV_PREFIX}INDEX_LOCATION"])
    assert parse_upstreams(settings.refresh_upstreams)[0].app == "Crm"
    assert str(settings.model_dir) == "/var/task/model"
    props = function(translated, "RefreshFunction")["Properties"]
    assert props["Handler"] == "build_index.refresh.lambda_entry.handler"
    assert "SnapStart" not in props


def test_refresh_runs_on_the_schedule(translated: dict[str, Any]) -> None:
    (schedule,) = resources_of_type(translated, "AWS::Scheduler::Schedule").values()
    props = schedule["Properties"]
    assert props["ScheduleExpression"] == {"Ref": "RefreshSchedule"}
    assert props["Target"]["Arn"] == {"Fn::GetAtt": ["RefreshFunction", "Arn"]}
    assert props["Target"]["RetryPolicy"]["MaximumRetryAttempts"] == 2
    assert schedule["Condition"] == translated["Resources"]["RefreshFunction"]["Condition"] == "Refreshes"


def test_refresh_grants_exactly_the_calls_a_refresh_makes(translated: dict[str, Any]) -> None:
    bucket, prefix, tenant = PARAMS["IndexBucketName"], PARAMS["IndexPrefix"], PARAMS["TenantName"]
    calls = calls_of_refresh(bucket, prefix, f"toolrec/{tenant}/crm-token", "QueryLogTable")
    granted = grants(translated, "RefreshFunction")
    index_grant = granted.pop(f"arn:aws:s3:::{bucket}/{prefix}/*")
    query_log_grant = granted.pop("arn:QueryLogTable")
    (secret_pattern, secret_grant) = granted.popitem()
    assert not granted
    assert {action for action, table in calls if table == "QueryLogTable"} == query_log_grant == {"dynamodb:Scan"}
    s3_calls = {action for action, _ in calls if action.startswith("s3:")}
    assert s3_calls == {"s3:GetObject", "s3:PutObject"}
    assert all(key.startswith(f"{prefix}/") for action, key in calls if action.startswith("s3:"))
    # AbortMultipartUpload: s3transfer's clean-up of a failed large upload, never made by a refresh that works.
    assert index_grant - s3_calls == {"s3:AbortMultipartUpload"}
    secret_calls = [(action, secret) for action, secret in calls if action.startswith("secretsmanager:")]
    assert {action for action, _ in secret_calls} == secret_grant == {"secretsmanager:GetSecretValue"}
    region_account = f"{REGION}:123456789012"  # the ARN pattern the template grants, for the tenant's names only
    assert secret_pattern == f"arn:aws:secretsmanager:{region_account}:secret:toolrec/{tenant}/*"
    assert all(fnmatch.fnmatch(f"arn:aws:secretsmanager:{region_account}:secret:{s}", secret_pattern)
               for _, s in secret_calls)  # fmt: skip


def test_lambda_executor_may_invoke_only_the_tool_prefix(translated: dict[str, Any]) -> None:
    prefix = PARAMS["ExecutorFunctionPrefix"]
    calls = asyncio.run(lambda_calls_of_executor(f"{prefix}weather"))
    lambda_grants = {r: a for r, a in grants(translated).items() if any(x.startswith("lambda:") for x in a)}
    assert lambda_grants == {f"arn:aws:lambda:{REGION}:123456789012:function:{prefix}*": calls}


def test_recording_sees_real_calls() -> None:
    """The recorder itself: a call it did not see would make every grant check above pass vacuously."""
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        seen: list[str] = []
        client.meta.events.register("before-parameter-build.dynamodb", lambda model, **_: seen.append(model.name))
        client.list_tables()
    assert seen == ["ListTables"]


def test_sam_local_env_file_sets_exactly_the_declared_variables(translated: dict[str, Any]) -> None:
    """`sam local` applies only variables the template declares, so the env file must match them one to one."""
    env_file = json.loads((REPO_ROOT / "events" / "env.json").read_text())
    assert set(env_file) == set(resources_of_type(translated, "AWS::Lambda::Function"))
    for logical_id, variables in env_file.items():
        assert set(variables) == set(environment(translated, logical_id)), logical_id


def test_every_template_route_is_served_by_the_app(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    """Each route API Gateway forwards reaches a handler: neither 404 nor 405 (unauthenticated calls are fine)."""
    index = tmp_path / "index"
    publish_tools(demo_tools()[:3], str(index), embedder)
    settings = file_settings(str(index), write_test_policy(tmp_path / "p.json"), tmp_path / "c")
    with lambda_thread_loop():
        handler = Mangum(build_app(settings, embedder=embedder), lifespan="off")
        for method, path in sorted(ROUTES):
            event = apigw_event(method, path.replace("{gateway_id}", "default"), key=None)
            status = handler(event, LambdaContext())["statusCode"]  # the console's page is not JSON: no invoke()
            assert status not in (404, 405), (method, path, status)


def test_every_event_file_is_a_template_route() -> None:
    events = [p for p in (REPO_ROOT / "events").glob("*.json") if p.name != "env.json"]
    routes = {json.loads(p.read_text())["routeKey"] for p in events}
    assert routes == {f"{method} {path}" for method, path in ROUTES}
    for path in events:
        event = json.loads(path.read_text())
        assert event["version"] == "2.0"
        assert event["requestContext"]["routeKey"] == event["routeKey"]
        assert event["requestContext"]["http"]["path"] == event["rawPath"]
