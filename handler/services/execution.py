"""Execute: check a call (tool exists, user may use it, input fits the schema, app authorized), run it, record it.

REST (``POST /v1/tools/execute``) and MCP (``UseTool`` and direct calls) both come here, so policy, validation and
authorization are the same whichever way a tool is called. Refusals raise RequestErrors (nothing ran); a run
that fails is an Execution with ``success=False`` (the tool ran, or may have).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread

from handler.catalog.json_limits import MAX_OUTPUT_DEPTH, json_problem, printable
from handler.catalog.names import did_you_mean
from handler.catalog.tool import Tool
from handler.errors import (
    AuthorizationRequiredError,
    ExecutionError,
    InputInvalidError,
    NotFoundError,
    OutputUnreturnableError,
    PolicyUnavailableError,
)
from handler.execute.base import ContentOutput, Dispatcher, ToolCall
from handler.execute.input_check import input_problems
from handler.index.holder import IndexHolder
from handler.policy.authorization import authorization_app, missing_authorization
from handler.policy.model import ExecutionRecord
from handler.services.access import AccessPolicy, Caller

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Execution:
    execution_id: str
    tool_name: str
    success: bool
    output: Any
    error_name: str | None
    error_message: str | None
    duration_ms: float
    content: tuple[Any, ...] | None = None  # the upstream's own MCP content blocks, when it sent an image or such


@dataclass(frozen=True)
class _Checked:
    tool: Tool
    arguments: Mapping[str, Any]


class ExecutionService:
    def __init__(
        self,
        holder: IndexHolder,
        access: AccessPolicy,
        dispatcher: Dispatcher,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.holder = holder
        self.access = access
        self.dispatcher = dispatcher
        self._clock = clock

    async def execute(
        self, caller: Caller, tool_name: str, arguments: Mapping[str, Any], query_id: str | None = None
    ) -> Execution:
        """Run one call for the caller's user; under a gateway, only tools that gateway allows are found."""
        user_id = caller.user_id
        # Policy and index lookups block (file, DynamoDB): keep them off the event loop.
        checked = await anyio.to_thread.run_sync(self._check, caller, tool_name, arguments, query_id)
        started = time.perf_counter()
        content = None
        try:
            output = await self.dispatcher.run(ToolCall(checked.tool, checked.arguments, user_id))
            if isinstance(output, ContentOutput):
                content, output = output.blocks, output.as_json
            # Before the response is built: a serialisation failure there would be a 500 for a call that ran.
            await anyio.to_thread.run_sync(_check_returnable, checked.tool.name, output)
            failure: ExecutionError | None = None
        except ExecutionError as exc:
            output, failure = None, exc
        execution = Execution(
            execution_id=str(uuid.uuid4()),
            tool_name=checked.tool.name,
            success=failure is None,
            output=output,
            error_name=failure.name if failure else None,
            # printable: the message may quote the worker or upstream server, lone surrogates included.
            error_message=printable(str(failure)) if failure else None,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
            content=content if failure is None else None,
        )
        outcome = "ok" if failure is None else failure.name
        _log_execution(execution, checked.tool, outcome, query_id)
        await anyio.to_thread.run_sync(self._record, caller, query_id, checked.tool.name, outcome)
        return execution

    def _check(self, caller: Caller, tool_name: str, arguments: Mapping[str, Any], query_id: str | None) -> _Checked:
        index, user_id = self.holder.current(), caller.user_id
        position = index.table.position(tool_name)
        if position is None or not self.access.allowed_mask(index.table, user_id, caller.gateway)[position]:
            # Unknown, outside the gateway or denied to this user: one answer, in the caller's own spelling,
            # so probing tells nobody which tools exist (issue 15 item 8); the nearest name is one they may use.
            near = self.access.nearest_tool(index.table, tool_name, caller)
            raise NotFoundError(f"no tool named {tool_name!r} that you may use{did_you_mean(near)}")
        tool = index.table.tools[position]
        problems = input_problems(tool.input_schema, arguments)
        if problems:
            raise InputInvalidError(f"the input does not match the input_schema of {tool.name}", problems)
        try:
            self._authorize(tool, user_id)
        except AuthorizationRequiredError:
            self._record(caller, query_id, tool.name, AuthorizationRequiredError.name)
            raise
        return _Checked(tool, arguments)

    def _authorize(self, tool: Tool, user_id: str) -> None:
        if authorization_app(tool) is None:
            return  # no connection to read
        need = missing_authorization(tool, self.access.store.connections(user_id))  # the rule /v1/apps uses too
        if need is None:
            return
        app_id, missing = need.app_id, need.missing_scopes
        app = next((a for a in self.access.store.apps() if a.app_id.casefold() == app_id.casefold()), None)
        url = app.authorize_url if app is not None else None
        what = f"the scopes {', '.join(missing)} on {app_id}" if need.connected else f"a connection to {app_id}"
        where = f"; authorize at {url}" if url else "; ask the operator to connect the app"
        raise AuthorizationRequiredError(
            f"authorization required: {tool.name} needs {what}{where}", app_id, url, missing
        )

    def _record(self, caller: Caller, query_id: str | None, tool_name: str, outcome: str) -> None:
        if not query_id:
            return
        record = ExecutionRecord(
            tool_name=tool_name,
            user_id=caller.user_id,
            key_id=caller.principal.key_id,  # learning from use counts evidence per key (build_index/usage/fold.py)
            at=datetime.fromtimestamp(self._clock(), UTC),
            outcome=outcome,
        )
        try:
            self.access.store.record_execution(query_id, record)
        except PolicyUnavailableError:
            # The call's result matters more than its log entry: report it either way.
            log.warning("recording execution for query %s failed", query_id, exc_info=True)


def _check_returnable(tool_name: str, output: Any) -> None:
    problem = json_problem(output, MAX_OUTPUT_DEPTH)
    if problem is not None:
        where = ".".join(("output", *problem.path))
        raise OutputUnreturnableError(tool_name, f"{where[:200]} {problem.reason}")


def _log_execution(execution: Execution, tool: Tool, outcome: str, query_id: str | None) -> None:
    extra = {
        "execution_id": execution.execution_id,
        "tool_name": execution.tool_name,
        "executor": tool.executor.kind if tool.executor else None,
        "outcome": outcome,
        "duration_ms": execution.duration_ms,
        "query_id": query_id,
    }
    log.info("tool executed", extra=extra)
