"""The service's configuration: one pydantic-settings object, validated once at cold start.

Every environment variable the service reads is a field here (prefix ``TOOLREC_``); ``template.yaml``
mirrors these names. An explicit constructor argument beats the environment, so tests and ``toolrec serve``
pass values directly. A bad configuration raises at construction, i.e. during Lambda init, never in a request.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from handler.catalog.names import DEFAULT_NAMESPACE
from handler.inference.model_files import default_model_dir

ENV_PREFIX = "TOOLREC_"
# The policy backend's tables, as fields below: TableNames, `toolrec policy --dynamodb`'s options and their
# variables (template.yaml) are named after these.
DYNAMODB_TABLE_FIELDS = ("policy_table", "connections_table", "api_keys_table", "query_log_table")
NAMESPACE_PATTERN = r"^[A-Za-z][A-Za-z0-9]*$"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    index_location: str = Field(min_length=1, description="index directory or s3://bucket/prefix holding LATEST")
    index_cache_dir: Path = Field(default=Path("/tmp/toolrec-index"), description="where S3 builds are cached")  # noqa: S108
    index_refresh_seconds: float = Field(default=60.0, ge=0, description="how often a warm instance checks LATEST")
    model_dir: Path = Field(default_factory=default_model_dir, description="prepared model directory")

    policy_backend: Literal["file", "dynamodb"] = "file"
    policy_file: Path | None = Field(default=None, description="local JSON policy file (file backend)")
    policy_table: str | None = Field(default=None, description="DynamoDB table: gateways and access rules")
    connections_table: str | None = Field(default=None, description="DynamoDB table: apps and user connections")
    api_keys_table: str | None = Field(default=None, description="DynamoDB table: hashed API keys")
    query_log_table: str | None = Field(default=None, description="DynamoDB table: query log (TTL expires_at)")
    policy_cache_seconds: float = Field(
        default=30.0,
        ge=0,
        description="per-instance cache of DynamoDB policy lookups (the local file is read as it changes)",
    )
    query_log_ttl_days: int = Field(default=30, ge=1, le=3650)
    learn_from_use: bool = Field(default=True, description="rank with the usage evidence an index holds, if any")
    max_tool_seconds: float | None = Field(
        default=None, gt=0, description="the longest one tool call may run, whatever its catalog timeout_s"
    )

    mcp_namespace: str = Field(default=DEFAULT_NAMESPACE, pattern=NAMESPACE_PATTERN)
    api_key: SecretStr | None = Field(default=None, description="local bootstrap API key (toolrec serve)")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    # Off by default: a task is what an end user typed (`toolrec serve --log-tasks` turns it on locally).
    log_tasks: bool = Field(default=False, description="log each select's task text, not only its counts")
    intra_op_threads: int = Field(default=1, ge=1, le=64, description="onnxruntime threads per query")

    @model_validator(mode="after")
    def _backend_complete(self) -> Settings:
        if self.policy_backend == "file" and self.policy_file is None:
            raise ValueError(f"{ENV_PREFIX}POLICY_FILE is required when {ENV_PREFIX}POLICY_BACKEND=file")
        if self.policy_backend == "dynamodb":
            missing = [f"{ENV_PREFIX}{name.upper()}" for name in DYNAMODB_TABLE_FIELDS if not getattr(self, name)]
            if missing:
                raise ValueError(f"{', '.join(missing)} required when {ENV_PREFIX}POLICY_BACKEND=dynamodb")
        return self


class RefreshSettings(BaseSettings):
    """The scheduled refresh function's configuration (template.yaml ``RefreshFunction``,
    build_index/refresh/lambda_entry.py): which index to refresh from which upstream MCP servers."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    index_location: str = Field(min_length=1, description="the published index: s3://bucket/prefix")
    model_dir: Path = Field(default_factory=default_model_dir, description="prepared model directory")
    refresh_upstreams: str = Field(min_length=2, description='JSON: [{"url", "app"?, "headers"?}, ...]; [] for none')
    refresh_usage: str | None = Field(default=None, description="dynamodb:TABLE: the query log to learn from, if on")
    refresh_golden: Path | None = Field(default=None, description="a drift golden each new build must pass")
    # The serving function's namespace: a refresh reserves its own tools' names, as that function's load refuses them.
    mcp_namespace: str = Field(default=DEFAULT_NAMESPACE, pattern=NAMESPACE_PATTERN)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"


def configured_namespace(environ: Mapping[str, str]) -> str:
    """``TOOLREC_MCP_NAMESPACE`` as the service reads it, for ``toolrec build``, ``refresh`` and ``policy``: the names
    they reserve are the ones a service configured by the same environment refuses to load."""
    return environ.get(f"{ENV_PREFIX}MCP_NAMESPACE") or DEFAULT_NAMESPACE
