"""POST /v1/tools/select and /v1/tools/search: parse, call the finder, shape the response."""

from __future__ import annotations

from collections.abc import Iterable

from fastapi import APIRouter

from handler.api.auth import PrincipalDep, ServicesDep
from handler.api.schemas import (
    SearchRequest,
    SearchResponse,
    SelectRequest,
    SelectResponse,
    TaskSuggestions,
    ToolSuggestion,
)
from handler.catalog.tool import Tool

router = APIRouter(prefix="/v1/tools", tags=["tools"])


def suggestions(tools: Iterable[Tool]) -> list[ToolSuggestion]:
    return [ToolSuggestion(tool_name=t.name, description=t.description, input_schema=t.input_schema) for t in tools]


@router.post("/select", response_model=SelectResponse, summary="The best tools for each task")
def select_tools(body: SelectRequest, principal: PrincipalDep, services: ServicesDep) -> SelectResponse:
    selection = services.finder.select(principal, body.user_id, body.tasks, body.context, body.gateway_id, body.top_k)
    return SelectResponse(
        query_id=selection.query_id,
        results=[TaskSuggestions(task=r.task, suggestions=suggestions(r.tools)) for r in selection.results],
    )


@router.post("/search", response_model=SearchResponse, summary="Tools ranked by keyword match (BM25)")
def search_tools(body: SearchRequest, principal: PrincipalDep, services: ServicesDep) -> SearchResponse:
    tools = services.finder.search(principal, body.user_id, body.query, body.gateway_id, body.top_k)
    return SearchResponse(results=suggestions(tools))
