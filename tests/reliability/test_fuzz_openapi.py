"""Bad input, generated: schemathesis reads the app's own OpenAPI document (GET /openapi.json, in process over
ASGI) and sends schema-valid and schema-violating requests to every operation with a valid API key.

The rules checked on every response: never a status >= 500; every /v1 error is the one error body; and each
response conforms to the document (status code, content type and body schema), so the document is exact. The MCP
route's body is JSON-RPC, checked here only for "no 5xx" (tests/reliability/test_bad_input.py covers its bodies).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.reliability.conftest import assert_error_body
from tests.support.gateway_app import GatewayApp

# Per operation and mode; 9 operations with inputs x 2 modes x 210 = 3,780 cases (about 180 s on 2 shared cores).
EXAMPLES_PER_MODE = 210
MIN_CASES = 3_600
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def fuzz_operation(operation: Any, mode: GenerationMode, api_key: str, statuses: Counter[tuple[str, int]]) -> None:
    @given(case=operation.as_strategy(mode))
    @settings(
        max_examples=EXAMPLES_PER_MODE,
        deadline=None,
        derandomize=True,  # the same cases on every run: a CI failure reproduces locally
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        response = case.call(headers={"Authorization": f"Bearer {api_key}"})
        statuses[(operation.label, response.status_code)] += 1
        assert response.status_code < 500, f"{operation.label} {case.body!r}: {response.text}"
        if operation.path.startswith("/mcp/"):
            return
        if response.status_code >= 400:
            assert_error_body(response.status_code, response.json())
        case.validate_response(response, checks=CHECKS)

    run()


def test_generated_requests_never_5xx_and_match_the_document(gateway: GatewayApp) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", gateway.app)
    statuses: Counter[tuple[str, int]] = Counter()
    labels = []
    for result in schema.get_all_operations():
        operation = result.ok()
        labels.append(operation.label)
        has_inputs = operation.path != "/healthz"  # nothing to violate: negative generation is unsatisfiable
        modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE) if has_inputs else (GenerationMode.POSITIVE,)
        for mode in modes:
            fuzz_operation(operation, mode, gateway.api_key, statuses)
    total = sum(statuses.values())
    print(f"\nfuzz: {total} cases, {len(labels)} operations; (operation, status): {dict(sorted(statuses.items()))}")
    assert set(labels) >= {
        "POST /v1/tools/select",
        "POST /v1/tools/search",
        "POST /v1/tools/execute",
        "GET /v1/apps",
        "GET /v1/providers/anthropic/tools",
        "POST /v1/providers/anthropic/search",
        "GET /v1/providers/openai/tools",
        "POST /v1/providers/openai/search",
        "GET /healthz",
        "POST /mcp/{gateway_id}",
    }
    assert total >= MIN_CASES
    assert not [key for key in statuses if key[1] >= 500]
