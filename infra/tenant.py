"""A tenant's deployment settings (``infra/tenants/<name>.toml``), validated before any command runs."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from build_index.ingest.upstream_headers import Upstream, upstreams_from
from handler.errors import CatalogError

REPO_ROOT = Path(__file__).resolve().parents[1]
TENANTS_DIR = REPO_ROOT / "infra" / "tenants"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Smoke(_Strict):
    api_key_env: str = Field(pattern=r"^[A-Z][A-Z0-9_]*$", description="environment variable holding the API key")
    user_id: str = Field(min_length=1)
    task: str = Field(min_length=1)
    expect_tool: str | None = None


class Drift(_Strict):
    golden: Path


class Tenant(_Strict):
    name: str = Field(pattern=r"^[a-z][a-z0-9-]{1,30}$")  # the template's TenantName pattern
    stage: Literal["dev", "staging", "prod"]
    region: str = Field(pattern=r"^[a-z]{2}(-[a-z]+)+-\d$")
    catalogs: tuple[Path, ...] = Field(min_length=1)
    index_bucket: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
    create_index_bucket: bool = True
    index_prefix: str = Field(default="index", pattern=r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    executor_function_prefix: str = Field(pattern=r"^[A-Za-z0-9_-]{3,40}$")
    enable_tracing: bool = False
    # Upstream MCP servers whose tools the index also holds, re-read on `refresh_schedule` (template.yaml
    # RefreshFunction); header values name ${secretsmanager:toolrec/<name>/...}, the only secrets it may read.
    upstreams: tuple[Upstream, ...] = ()
    refresh_schedule: str = Field(default="rate(1 hour)", pattern=r"^(rate|cron)\(.+\)$")
    # Rank with the tenant's own past executions (docs/quality.md "Learning from use"): the scheduled refresh
    # folds its query log into the index; false serves by text alone and folds nothing.
    learn_from_use: bool = True
    smoke: Smoke
    drift: Drift

    @field_validator("upstreams", mode="before")
    @classmethod
    def _checked_upstreams(cls, raw: object) -> object:
        try:  # the same checks as TOOLREC_REFRESH_UPSTREAMS
            return tuple(upstreams_from(raw)) if raw else ()
        except CatalogError as exc:
            raise ValueError(str(exc)) from None

    @property
    def stack_name(self) -> str:
        return f"toolrec-{self.name}-{self.stage}"

    @property
    def upstreams_json(self) -> str:
        """The upstream list as the refresh reads it (``--upstreams``, ``UpstreamServers``); ``[]``: none."""
        rows = [u.model_dump(exclude_none=True, exclude_defaults=True) for u in self.upstreams]
        return json.dumps(rows, separators=(",", ":"))

    @property
    def index_location(self) -> str:
        return f"s3://{self.index_bucket}/{self.index_prefix}"


def load_tenant(name: str, directory: Path = TENANTS_DIR) -> Tenant:
    path = directory / f"{name}.toml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in directory.glob("*.toml"))) or "none"
        raise FileNotFoundError(f"no tenant {name!r} ({path} does not exist; known: {known})")
    return Tenant.model_validate(tomllib.loads(path.read_text()))


def tenant_names(directory: Path = TENANTS_DIR) -> list[str]:
    return sorted(p.stem for p in directory.glob("*.toml"))
