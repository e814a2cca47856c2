"""POST /v1/tools/execute: parse, run through the execution service, return the stable execution body.

Refusals (unknown tool, no access, invalid input, authorization required) are errors raised by the service and
mapped in one place; a tool that ran and failed is a 200 with ``success: false``.
"""

from __future__ import annotations

from fastapi import APIRouter

from handler.api.auth import PrincipalDep, ServicesDep
from handler.api.schemas import ExecuteRequest, ExecuteResponse, ExecutionErrorBody

router = APIRouter(prefix="/v1/tools", tags=["tools"])


@router.post("/execute", response_model=ExecuteResponse, summary="Run a tool for a user")
async def execute_tool(body: ExecuteRequest, principal: PrincipalDep, services: ServicesDep) -> ExecuteResponse:
    # Not limited to a gateway (PRODUCT.md §2), unless the API key itself is.
    gateway = services.access.gateway_for(principal, None)
    result = await services.execution.execute(body.user_id, body.tool_name, body.input, body.query_id, gateway)
    error = None
    if not result.success:
        error = ExecutionErrorBody(name=result.error_name or "execution_failed", message=result.error_message or "")
    return ExecuteResponse(
        execution_id=result.execution_id,
        tool_name=result.tool_name,
        success=result.success,
        output=result.output,
        error=error,
        duration_ms=result.duration_ms,
    )
