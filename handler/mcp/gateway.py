"""A gateway as an MCP tool host: what ``tools/list`` shows and what ``tools/call`` runs, for one user, one request.

Recommendation ``on`` lists the three meta-tools and the gateway's pinned tools; ``off`` lists the gateway's tools
themselves, a page at a time (each bounded in bytes, the next named by ``nextCursor``); ``auto`` is ``off`` while
the gateway allows fewer than AUTO_THRESHOLD tools besides its pins (those are listed either way, so only the
others weigh on the choice). Either way the same services decide what the user may
use: recommendation changes the listing, never the policy (PRODUCT.md §3, §7).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import anyio.to_thread
import mcp_types as types

from handler.api.schemas import AppsResponse, AppSummary, ExecuteResponse, ToolSuggestion
from handler.catalog.names import listed_name
from handler.catalog.tool import Tool
from handler.errors import (
    AuthorizationRequiredError,
    IndexUnavailableError,
    InputInvalidError,
    ServiceUnavailableError,
    ToolrecError,
)
from handler.index.load import Index
from handler.mcp import meta_tools
from handler.mcp.meta_tools import LIST_APPS, SELECT, USE
from handler.policy.model import Gateway, Principal
from handler.services.access import Caller, Pins, count
from handler.services.container import Services
from handler.services.execution import Execution
from handler.services.select import UsablePage

log = logging.getLogger(__name__)
AUTO_THRESHOLD = 25  # a static list is cheaper than a lookup below roughly 25 tools (PRODUCT.md §3)


def recommends(recommendation: str, allowed_tools: int, pinned_tools: int = 0) -> bool:
    if recommendation == "auto":
        return allowed_tools - pinned_tools >= AUTO_THRESHOLD
    return recommendation == "on"


def listed_tool(tool: Tool) -> types.Tool:
    """A catalog tool as ``tools/list`` shows it: built from the build's record alone, so a listing is the same
    on every request of one build (a client's prompt cache keys on it)."""
    return types.Tool(name=listed_name(tool.name), description=tool.description, input_schema=tool.input_schema)


def text_result(structured: dict[str, Any], is_error: bool = False) -> types.CallToolResult:
    """Structured content for clients that read it, the same JSON as text for those that only pass text on."""
    text = json.dumps(structured, ensure_ascii=False, default=str)
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=structured, is_error=is_error
    )


@dataclass
class GatewayHost:
    """Implements ``jsonrpc.ToolHost`` for one request: its caller (key, user, gateway) is fixed for its lifetime."""

    services: Services
    caller: Caller
    index: Index | None  # None while no index is loaded: the meta-tools still answer ("unavailable")
    recommending: bool
    pinned: tuple[int, ...] = ()  # the gateway's pins this build holds, in order (the user's rules not yet applied)

    @property
    def gateway(self) -> Gateway:
        assert self.caller.gateway is not None  # an MCP request always names its gateway (open_host)
        return self.caller.gateway

    @property
    def namespace(self) -> str:
        return self.services.settings.mcp_namespace

    @property
    def instructions(self) -> str | None:
        if not self.recommending:
            return None
        text = meta_tools.instructions(self.namespace)
        return f"{text} {meta_tools.PINNED_INSTRUCTION}" if self.pinned else text

    async def list_tools(self, offset: int = 0) -> tuple[list[types.Tool], int | None]:
        """The listing from ``offset`` on, as much as one answer carries, and where the next page starts (None:
        this is the last). With recommendation on it is the meta-tools and pins, one page."""
        if self.recommending:
            if offset:
                return [], None
            pinned = await anyio.to_thread.run_sync(self._usable_pins) if self.pinned else []
            return [*meta_tools.meta_tools(self.namespace), *(listed_tool(t) for t in pinned)], None
        page = await anyio.to_thread.run_sync(self._usable_tools, offset)
        following = offset + len(page.tools)
        return [listed_tool(t) for t in page.tools], (following if following < page.total else None)

    def _usable_tools(self, offset: int) -> UsablePage:
        if self.index is None:
            message = "no tool index is loaded yet; retry shortly"
            raise ServiceUnavailableError(message, public=message)
        # The finder's page: bounded in bytes (answer_budget.py), as the providers' tools pages are.
        return self.services.finder.usable(self.caller, offset, len(self.index.table))

    def _usable_pins(self) -> list[Tool]:
        assert self.index is not None  # pins are resolved against a loaded build only
        table = self.index.table
        return [table.tools[i] for i in self.services.access.listed_pins(table, self.caller.user_id, self.gateway)]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        meta = meta_tools.meta_tool_of(self.namespace, name)
        if meta == SELECT:
            return await self._select(arguments)
        if meta == USE:
            return await self._use(arguments)
        if meta == LIST_APPS:
            return await self._list_apps(arguments)
        # A direct call by the tool's own name (listed with `_`, or with `.`), in either mode: the same
        # policy applies as through UseTool, so accepting it exposes nothing the meta-tools do not. Execute
        # resolves the spelling (handler/catalog/names.py), as it does for REST.
        return await self._run(name, arguments, None, direct=True)

    async def _select(self, arguments: Mapping[str, Any]) -> types.CallToolResult:
        try:
            parsed = meta_tools.parse_arguments(meta_tools.SelectArguments, arguments, SELECT)
        except InputInvalidError as exc:
            return refusal(exc)
        return text_result(await anyio.to_thread.run_sync(self._selection, parsed.tasks, parsed.context))

    def _selection(self, tasks: list[str], context: str | None) -> dict[str, Any]:
        try:
            selection = self.services.finder.select(
                self.caller, tasks, context, meta_tools.TOOLS_PER_TASK, isolate_failures=True
            )
        except ServiceUnavailableError:
            # No index loaded (or policy unreadable): no lookup completed, so every task is `unavailable`.
            empty = [{"task": task, "tools": [], "empty_reason": "unavailable"} for task in tasks]
            return {"query_id": None, "results": empty}
        results = []
        for result in selection.results:
            entry: dict[str, Any] = {
                "task": result.task,
                "tools": [ToolSuggestion.suggested(s).model_dump() for s in result.suggestions],
            }
            if result.empty_reason is not None:
                entry["empty_reason"] = result.empty_reason
            results.append(entry)
        return {"query_id": selection.query_id, "results": results}

    async def _use(self, arguments: Mapping[str, Any]) -> types.CallToolResult:
        try:
            parsed = meta_tools.parse_arguments(meta_tools.UseArguments, arguments, USE)
        except InputInvalidError as exc:
            return refusal(exc)
        return await self._run(parsed.tool_name, parsed.inputs, parsed.query_id, direct=False)

    async def _run(
        self, tool_name: str, inputs: Mapping[str, Any], query_id: str | None, *, direct: bool
    ) -> types.CallToolResult:
        try:
            execution = await self.services.execution.execute(self.caller, tool_name, inputs, query_id)
        except ToolrecError as exc:
            return refusal(exc)
        return execution_result(execution, direct=direct)

    async def _list_apps(self, arguments: Mapping[str, Any]) -> types.CallToolResult:
        try:
            parsed = meta_tools.parse_arguments(meta_tools.ListAppsArguments, arguments, LIST_APPS)
        except InputInvalidError as exc:
            return refusal(exc)
        limit, offset = parsed.limit, parsed.offset
        page = await anyio.to_thread.run_sync(self.services.apps.list_apps, self.caller, limit, offset)
        apps = [AppSummary.model_validate(app, from_attributes=True) for app in page.apps]
        return text_result(AppsResponse(apps=apps, total=page.total, limit=limit, offset=offset).model_dump())


def refusal(exc: ToolrecError) -> types.CallToolResult:
    """A call that did not run, as a tool error the model can act on (the REST error body, as structured data)."""
    error: dict[str, Any] = {"name": exc.name, "message": exc.public}
    if exc.field_errors:
        error["field_errors"] = [{"field": p.field, "message": p.message} for p in exc.field_errors]
    if isinstance(exc, AuthorizationRequiredError):
        error.update(app_id=exc.app_id, authorize_url=exc.authorize_url, missing_scopes=list(exc.missing_scopes))
    return text_result({"error": error}, is_error=True)


def execution_result(execution: Execution, *, direct: bool) -> types.CallToolResult:
    response = ExecuteResponse.of(execution).model_dump()
    if not execution.success:
        failure = {key: response[key] for key in ("execution_id", "tool_name", "success", "error")}
        return text_result(failure, is_error=True)
    envelope = {key: value for key, value in response.items() if key != "error"}
    if execution.content is not None:
        return native_result(execution.content, envelope, direct=direct)
    if direct:
        # Called as itself, a tool answers with its own output (wrapped when it is not an object).
        output = execution.output
        return text_result(output if isinstance(output, dict) else {"result": output})
    return text_result(envelope)


def native_result(blocks: tuple[Any, ...], envelope: dict[str, Any], *, direct: bool) -> types.CallToolResult:
    """An upstream's image (audio, resource) blocks passed on as MCP content: base64 inside JSON text would reach
    the model as a wall of characters, not as an image. Through UseTool the envelope comes first, without the
    output that the blocks already carry."""
    if direct:
        return types.CallToolResult(content=list(blocks))
    summary = {key: value for key, value in envelope.items() if key != "output"}
    text = json.dumps(summary, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(text=text), *blocks], structured_content=summary)


def open_host(services: Services, principal: Principal, gateway_id: str, user_id: str) -> GatewayHost:
    """Resolve the caller (the gateway for this key: 404/403 as in REST) and decide the mode; blocking (policy
    reads)."""
    caller = services.access.caller(principal, user_id, gateway_id)
    gateway = caller.gateway
    assert gateway is not None  # gateway_for returns a gateway whenever one is named
    try:
        index: Index | None = services.holder.current()
    except IndexUnavailableError:
        index = None
    if index is None:
        # Without an index `auto` cannot count; the meta-tools are the listing that needs none.
        return GatewayHost(services, caller, index, recommending=gateway.recommendation != "off")
    in_gateway = index.table.mask(gateway.allowed)
    pins = Pins.of(index.table, gateway.pinned, in_gateway)
    if pins.missing or pins.outside:
        _log_unlisted_pins(index.build_id, gateway.gateway_id, pins.missing, pins.outside)
    recommending = recommends(gateway.recommendation, count(in_gateway), len(pins.positions))
    return GatewayHost(services, caller, index, recommending, pins.positions)


@lru_cache(maxsize=256)  # once per build and gateway configuration, not on every request of a warm instance
def _log_unlisted_pins(build_id: str, gateway_id: str, missing: tuple[str, ...], outside: tuple[str, ...]) -> None:
    log.warning(
        "gateway %s: pinned tools not listed with build %s (not in it: %s; not allowed by the gateway: %s)",
        gateway_id,
        build_id,
        ", ".join(missing) or "none",
        ", ".join(outside) or "none",
    )
