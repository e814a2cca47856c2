"""What a cold start imports before its first answer: the serving path leaves out the stacks only some requests
need (MCP SDK and its protocol types, httpx, jsonschema, the X-Ray SDK, boto3 for a local index and policy file).
Each of them cost 0.1-0.6 s of import (measured with ``python -X importtime``, docs/performance.md)."""

from __future__ import annotations

import json
import subprocess
import sys

# botocore.session, not botocore: Powertools imports the bare package (~1 ms) to read its version.
DEFERRED = ("aws_xray_sdk", "mcp", "mcp_types", "httpx", "httpx2", "jsonschema", "boto3", "botocore.session")
# The providers' SDKs are test-only (pyproject `dev`): the provider routes never import them.
NEVER = ("anthropic", "openai")

PROBE = """
import json, sys
from mangum import Mangum
from handler.composition import build_app
from handler.observability import instrument
print(json.dumps(sorted(sys.modules)))
"""


def test_the_serving_path_defers_what_only_some_requests_need() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60)
    loaded = set(json.loads(done.stdout))
    assert {"fastapi", "numpy", "mangum", "handler"} <= loaded  # the probe did import the serving path
    assert loaded.isdisjoint(DEFERRED), sorted(loaded.intersection(DEFERRED))
    assert loaded.isdisjoint(NEVER), sorted(loaded.intersection(NEVER))
