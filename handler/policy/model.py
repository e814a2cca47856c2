"""The policy records every backend stores: gateways, access rules, apps, connections, API keys, the query log.

Tool patterns are deliberately small: ``*`` (every tool), ``App.*`` (every tool of one app) or an exact
``App.ToolName``. Matching ignores case, and an exact name matches the tool a call by that name would run
(handler/catalog/names.py: a deny of ``Slack_SendMessage`` denies ``Slack.SendMessage``). Anything else is refused
when written, so a typo never silently allows or denies more than its author meant. An exact name follows the rule
the build holds catalog names to (``name_problem``), so every name a build accepts can be written here.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from handler.catalog.names import name_key, name_problem

ALL_TOOLS = "*"
# Pinned tools sit in every client's static tool list: a few, or the list costs what recommendation saves.
MAX_PINNED = 20
_APP_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]*\.\*$")


def _tool_pattern(value: str) -> str:
    value = value.strip()
    if value != ALL_TOOLS and not _APP_PATTERN.match(value) and name_problem(value) is not None:
        raise ValueError(f"{value!r} is not a tool pattern: use '*', 'App.*' or an exact tool name")
    return value


def _tool_name(value: str) -> str:
    value = value.strip()
    if name_problem(value) is not None:
        raise ValueError(f"{value!r} is not a tool name: a pin names one tool exactly, never a pattern")
    return value


def _pins(values: tuple[str, ...]) -> tuple[str, ...]:
    if len(values) > MAX_PINNED:
        raise ValueError(f"a gateway pins at most {MAX_PINNED} tools, not {len(values)}")
    keys = [name_key(v) for v in values]
    twice = sorted({v for v, k in zip(values, keys, strict=True) if keys.count(k) > 1})
    if twice:
        raise ValueError(f"pinned more than once: {', '.join(twice)}")
    return values


ToolPattern = Annotated[str, AfterValidator(_tool_pattern)]
ToolName = Annotated[str, AfterValidator(_tool_name)]
Identifier = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[^\s#]+$")]
Recommendation = Literal["on", "off", "auto"]
Score = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]  # a calibrated probability (PRODUCT.md §2)


class Gateway(BaseModel):
    """A gateway: the tools it exposes and whether its MCP server recommends tools (PRODUCT.md §3).

    ``pinned`` tools are listed beside the meta-tools whenever the gateway recommends, in this order, so every
    client's static tool list stays the same between requests (PRODUCT.md §7); policy still decides who sees them.
    ``min_score`` is the floor select applies to its suggestions when a request sets none (PRODUCT.md §2).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    gateway_id: Identifier
    allowed: tuple[ToolPattern, ...] = ()
    recommendation: Recommendation = "auto"
    pinned: Annotated[tuple[ToolName, ...], AfterValidator(_pins)] = ()
    min_score: Score | None = Field(default=None, description="select's default floor on a suggestion's score")


class AccessRule(BaseModel):
    """Which tools a user may see and use.

    ``subject`` is a user_id or ``*`` (every user). A user may use a tool when at least one allow rule that
    applies to them matches it and no deny rule does: no allow rule means no tools (deny by default), and
    deny always wins.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule_id: Identifier
    subject: Identifier
    effect: Literal["allow", "deny"]
    tools: tuple[ToolPattern, ...] = Field(min_length=1)


class AppInfo(BaseModel):
    """An app the catalog's tools belong to, as the apps endpoint shows it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    app_id: Identifier
    name: str = ""
    description: str = ""
    authorize_url: str | None = Field(default=None, description="where a user connects the app")


class Connection(BaseModel):
    """One user's connection to one app: whether it is usable, the account and the scopes it grants."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user_id: Identifier
    app_id: Identifier
    connected: bool = True
    account: str | None = None
    scopes: tuple[str, ...] = ()


class ApiKeyRecord(BaseModel):
    """An API key as stored: only its sha256, never the key itself."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key_id: Identifier
    key_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    gateway_id: str | None = Field(default=None, description="the only gateway this key may use, if set")
    description: str = ""
    created_at: datetime | None = None


class ExecutionRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tool_name: str
    user_id: str
    key_id: str | None = None  # the API key that ran it (None: recorded before keys were)
    at: datetime
    outcome: str = Field(description="ok, error, authorization_required, ...")


class QueryRecord(BaseModel):
    """One select request: what was recommended, for whom, when; executions link back by query_id."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query_id: str
    user_id: str  # asserted by the key: any key may name any user (docs/security.md)
    key_id: str | None = None  # the API key that asked (None: logged before keys were)
    gateway_id: str | None = None  # optional: DynamoDB items omit None attributes
    tasks: tuple[str, ...]
    recommended: tuple[tuple[str, ...], ...] = Field(description="tool names per task, in task order")
    created_at: datetime
    expires_at: int = Field(description="epoch seconds; DynamoDB TTL deletes the record after it")
    executions: tuple[ExecutionRecord, ...] = ()


class Principal(BaseModel):
    """Who is calling: the API key that authenticated the request."""

    model_config = ConfigDict(frozen=True)

    key_id: str
    gateway_id: str | None = None


DOCUMENT_VERSION = 1  # of the policy file; a DynamoDB policy read whole has the same shape


class PolicyDocument(BaseModel):
    """The whole policy as one record, whatever the backend: the local file's content, or `toolrec policy show`."""

    model_config = ConfigDict(extra="forbid")

    version: int = DOCUMENT_VERSION
    gateways: list[Gateway] = []
    access_rules: list[AccessRule] = []
    apps: list[AppInfo] = []
    connections: list[Connection] = []
    api_keys: list[ApiKeyRecord] = []
