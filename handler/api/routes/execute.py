"""POST /v1/tools/execute: parse, run through the execution service, return the stable execution body.

Refusals (unknown tool, no access, invalid input, authorization required) are errors raised by the service and
mapped in one place; a tool that ran and failed is a 200 with ``success: false``.
"""

from __future__ import annotations

import anyio.to_thread
from fastapi import APIRouter

from handler.api.auth import PrincipalDep, ServicesDep
from handler.api.schemas import ExecuteRequest, ExecuteResponse

router = APIRouter(prefix="/v1/tools", tags=["tools"])


@router.post("/execute", response_model=ExecuteResponse, summary="Run a tool for a user")
async def execute_tool(body: ExecuteRequest, principal: PrincipalDep, services: ServicesDep) -> ExecuteResponse:
    # Not limited to a gateway (PRODUCT.md §2), unless the API key itself is. Blocking (policy reads): off the loop.
    caller = await anyio.to_thread.run_sync(services.access.caller, principal, body.user_id)
    result = await services.execution.execute(caller, body.tool_name, body.input, body.query_id)
    return ExecuteResponse.of(result)
