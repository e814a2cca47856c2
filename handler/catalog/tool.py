"""A catalog entry: the one definition of a tool that the build validates and the service reads back."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

APP_TOOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]*\.[A-Za-z][A-Za-z0-9_]*$")
# "Tool@1.2.0", "Tool_v2", "Tool-1.2", "ToolV2" are versioned; "Ipv4", "Base64", "S3" are not.
_VERSION_SUFFIX = re.compile(r"(?:(?i:@v?\d+(?:\.\d+)*|[_\-.]v\d+(?:\.\d+)*|[_\-]\d+\.\d+(?:\.\d+)*)|(?<=[a-z])V\d+)$")


class Executor(BaseModel):
    """Where a tool runs. ``target`` is fixed by the catalog: a request can never redirect a call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["http", "mcp", "lambda"]
    target: str = Field(min_length=1, description="worker URL, MCP server URL, or Lambda function name/ARN")
    tool: str | None = Field(default=None, description="the tool's name on an upstream MCP server")
    timeout_s: float = Field(default=30.0, gt=0, le=900)


class Requirements(BaseModel):
    """The app authorization a tool needs before it may run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    authorization: str | None = Field(default=None, description="the app_id whose connection the user needs")
    scopes: tuple[str, ...] = ()


class Tool(BaseModel):
    """A catalog entry. A field beyond these is refused, not dropped (PRODUCT.md §1, issue 33 item 6): a misspelled
    ``executer`` or ``requirments`` would otherwise build a tool that lost its executor or its authorization."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=256)
    description: str
    input_schema: dict[str, Any]
    app: str = Field(min_length=1, max_length=128)
    executor: Executor | None = None
    requirements: Requirements | None = None

    @field_validator("name")
    @classmethod
    def _no_version(cls, name: str) -> str:
        # Agents call a tool by the name they were shown: a version in it goes stale (PRODUCT.md §2).
        if _VERSION_SUFFIX.search(name):
            raise ValueError("tool names carry no version numbers")
        return name

    @field_validator("input_schema")
    @classmethod
    def _object_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        if schema.get("type", "object") != "object":
            raise ValueError("input_schema must be a JSON Schema of type object")
        return schema


# The fields a catalog row may hold, at each level of it: what an unknown field is checked against.
ROW_FIELDS: dict[tuple[str, ...], tuple[str, ...]] = {
    (): tuple(Tool.model_fields),
    ("executor",): tuple(Executor.model_fields),
    ("requirements",): tuple(Requirements.model_fields),
}
