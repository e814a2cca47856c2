"""Reading the translated template: a tiny evaluator for the intrinsics it uses, the role's grants, the env."""

from __future__ import annotations

import re
from typing import Any

# The parameter values the checks evaluate the template with: the stack creates the bucket (the default).
PARAMS = {
    "TenantName": "acme",
    "Stage": "prod",
    "IndexBucketName": "toolrec-acme-index",
    "CreateIndexBucket": "true",
    "IndexPrefix": "index",
    "IndexRefreshSeconds": "60",
    "LogLevel": "INFO",
    "QueryLogTtlDays": "30",
    "McpNamespace": "Toolrec",
    "ExecutorFunctionPrefix": "toolrec-tool-",
    "EnableTracing": "false",
    "LocalEndpointUrl": "",
    "UpstreamServers": '[{"url": "https://crm.example.test/mcp", "app": "Crm"}]',
    "LearnFromUse": "true",
    "RefreshSchedule": "rate(1 hour)",
    "AWS::Partition": "aws",
    "AWS::Region": "us-east-1",
    "AWS::AccountId": "123456789012",
}
CONDITIONS = {
    "OwnsIndexBucket": True,
    "TracingEnabled": False,
    "UseLocalEndpoint": False,
    "RefreshesUpstreams": True,
    "LearnsFromUse": True,
    "Refreshes": True,
}
NO_VALUE = object()


def resolve(value: Any, params: dict[str, str] | None = None) -> Any:
    """Evaluate Ref / Fn::Sub / Fn::If / Fn::GetAtt; a resource's Ref is its logical id, its Arn ``arn:<id>``."""
    params = PARAMS if params is None else params
    if isinstance(value, list):
        return [item for item in (resolve(v, params) for v in value) if item is not NO_VALUE]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Ref"}:
        return NO_VALUE if value["Ref"] == "AWS::NoValue" else params.get(value["Ref"], value["Ref"])
    if set(value) == {"Fn::GetAtt"}:
        return f"arn:{value['Fn::GetAtt'][0]}"
    if set(value) == {"Fn::If"}:
        condition, when_true, when_false = value["Fn::If"]
        return resolve(when_true if CONDITIONS[condition] else when_false, params)
    if set(value) == {"Fn::Sub"}:
        body = value["Fn::Sub"]
        text, local = (body, {}) if isinstance(body, str) else (body[0], body[1])
        names = {**params, **{k: str(resolve(v, params)) for k, v in local.items()}}
        return re.sub(r"\$\{([^}]+)\}", lambda m: names.get(m.group(1), f"<{m.group(1)}>"), text)
    return {k: resolve(v, params) for k, v in value.items()}


def resources_of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {name: r for name, r in template["Resources"].items() if r["Type"] == kind}


def function(template: dict[str, Any], logical_id: str = "Function") -> dict[str, Any]:
    """The serving function (``Function``) or, by its logical id, the scheduled ``RefreshFunction``."""
    resource: dict[str, Any] = template["Resources"][logical_id]
    assert resource["Type"] == "AWS::Lambda::Function"
    return resource


def environment(template: dict[str, Any], logical_id: str = "Function") -> dict[str, Any]:
    variables: dict[str, Any] = function(template, logical_id)["Properties"]["Environment"]["Variables"]
    return variables


def grants(template: dict[str, Any], logical_id: str = "Function") -> dict[str, set[str]]:
    """Resource (evaluated) -> the actions the function's role allows on it (inline policies)."""
    role = template["Resources"][f"{logical_id}Role"]["Properties"]
    allowed: dict[str, set[str]] = {}
    for policy in role.get("Policies", []):
        for statement in resolve(policy["PolicyDocument"]["Statement"]):
            assert statement["Effect"] == "Allow", statement
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            for resource in resources:
                allowed.setdefault(resource, set()).update(actions)
    return allowed
