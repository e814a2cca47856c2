"""The scheduled refresh function's entry point: ``build_index.refresh.lambda_entry.handler`` (template.yaml
``RefreshFunction``, invoked by its EventBridge schedule).

At module scope, once per cold start: the settings and the upstream list are validated (a bad list fails the init,
not a run at 3 a.m.), the model is verified and loaded, the AWS clients are made. Each invocation re-reads the
tenant's upstream servers and its query log (when it learns from use) and publishes a new build only when their
tools or its usage evidence changed, after the tenant's drift golden passed on it (build_index/refresh/run.py); a
failure (an upstream down or refusing its token) raises, so the run counts as an error and the schedule retries.
The serving function picks a new build up on its LATEST check, as after a deploy.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from build_index.drift import load_golden
from build_index.ingest.upstream_headers import parse_upstreams, secrets_manager_reader
from build_index.model_prepare import MODEL_ID
from build_index.refresh.run import refresh
from handler import observability
from handler.aws import aws_client
from handler.inference.embedder import OnnxEmbedder
from handler.settings import RefreshSettings

settings = RefreshSettings()
observability.configure(settings.log_level)
# [] when the function only learns from use: the build's tools are kept as they are.
upstreams = [] if settings.refresh_upstreams.strip() == "[]" else parse_upstreams(settings.refresh_upstreams)
embedder = OnnxEmbedder(settings.model_dir, threads=1)
s3_client = aws_client("s3", "build")
dynamodb_client = aws_client("dynamodb", "build") if settings.refresh_usage else None
read_secret = secrets_manager_reader(aws_client("secretsmanager", "build"))
golden = load_golden(settings.refresh_golden) if settings.refresh_golden else None


def handler(event: Any, context: Any) -> dict[str, Any]:
    result = refresh(
        settings.index_location,
        upstreams,
        embedder,
        MODEL_ID,
        os.environ,
        usage=settings.refresh_usage,
        golden=golden,
        s3_client=s3_client,
        dynamodb_client=dynamodb_client,
        read_secret=read_secret,
        namespace=settings.mcp_namespace,
    )
    outcome = dataclasses.asdict(result)
    observability.logger.info("refresh done", extra={**outcome, "upstreams": [u.url for u in upstreams]})
    return outcome
