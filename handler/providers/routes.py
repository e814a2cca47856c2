"""/v1/providers/{anthropic,openai}: toolrec as the search behind each provider's own tool search (PRODUCT.md §7).

``GET .../tools`` is the request's ``tools``: the search, then every tool the user may use, deferred, a page at a
time (a Lambda answer holds at most 6 MB; paged as /v1/apps is, and a page ends early at the answer's byte budget,
so the next one starts at ``offset + len(tools)``). ``POST .../search`` answers the model's search
with select's answer for its one task, in the provider's shape: the same service, policy, no match and top_k as
/v1/tools/select, and the same query log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from handler.api.auth import PrincipalDep, ServicesDep
from handler.api.schemas import (
    MAX_ID_CHARS,
    PROVIDER_TOOLS_LIMIT_DEFAULT,
    PROVIDER_TOOLS_LIMIT_MAX,
    AnthropicSearchRequest,
    AnthropicSearchResponse,
    AnthropicToolsResponse,
    OpenAISearchRequest,
    OpenAISearchResponse,
    OpenAIToolsResponse,
    ScoredTool,
)
from handler.catalog.names import listed_name
from handler.catalog.tool import Tool
from handler.policy.model import Principal
from handler.providers import anthropic, openai
from handler.services.container import Services
from handler.services.select import Selection

router = APIRouter(prefix="/v1/providers", tags=["providers"])
UserQuery = Annotated[str, Query(min_length=1, max_length=MAX_ID_CHARS, description="the end user")]
GatewayQuery = Annotated[str | None, Query(min_length=1, max_length=MAX_ID_CHARS, description="only its tools")]
LimitQuery = Annotated[int, Query(ge=1, le=PROVIDER_TOOLS_LIMIT_MAX)]
OffsetQuery = Annotated[int, Query(ge=0)]


@dataclass(frozen=True)
class _UsablePage:
    """A page of the tools the caller may use, with the query that asked for it."""

    tools: tuple[Tool, ...]
    total: int
    limit: int
    offset: int


def _usable_page(
    principal: PrincipalDep,
    services: ServicesDep,
    user_id: UserQuery,
    gateway_id: GatewayQuery = None,
    limit: LimitQuery = PROVIDER_TOOLS_LIMIT_DEFAULT,
    offset: OffsetQuery = 0,
) -> _UsablePage:
    """The query both providers' tools listings take, answered (a dependency: the routes differ only in shape)."""
    page = services.finder.usable(services.access.caller(principal, user_id, gateway_id), offset, limit)
    return _UsablePage(page.tools, page.total, limit, offset)


UsablePageDep = Annotated[_UsablePage, Depends(_usable_page)]


def _select(body: AnthropicSearchRequest | OpenAISearchRequest, principal: Principal, services: Services) -> Selection:
    caller = services.access.caller(principal, body.user_id, body.gateway_id)
    return services.finder.select(caller, [body.task], body.context, body.top_k, body.min_score)


def _scored(selection: Selection) -> dict[str, Any]:
    """What both providers' answers carry beside the provider's own shape: the query_id, scores, empty_reason."""
    task = selection.results[0]
    scores = [ScoredTool(tool_name=listed_name(s.tool.name), score=round(s.score, 4)) for s in task.suggestions]
    return {"query_id": selection.query_id, "scores": scores, "empty_reason": task.empty_reason}


@router.get("/anthropic/tools", response_model=AnthropicToolsResponse, summary="Tools for Anthropic, deferred")
def anthropic_tools(page: UsablePageDep, services: ServicesDep) -> AnthropicToolsResponse:
    return AnthropicToolsResponse(
        search_tool=anthropic.search_tool(services.settings.mcp_namespace),
        tools=[anthropic.deferred(t) for t in page.tools],
        total=page.total,
        limit=page.limit,
        offset=page.offset,
    )


@router.post("/anthropic/search", response_model=AnthropicSearchResponse, summary="Answer Claude's tool search")
def anthropic_search(
    body: AnthropicSearchRequest, principal: PrincipalDep, services: ServicesDep
) -> AnthropicSearchResponse:
    result = _select(body, principal, services)
    return AnthropicSearchResponse(
        **_scored(result), tool_result=anthropic.search_result(body.tool_use_id, result.results[0].tools)
    )


@router.get("/openai/tools", response_model=OpenAIToolsResponse, summary="Tools for OpenAI, deferred")
def openai_tools(page: UsablePageDep) -> OpenAIToolsResponse:
    return OpenAIToolsResponse(
        search_tool=openai.search_tool(),
        tools=[openai.function(t) for t in page.tools],
        total=page.total,
        limit=page.limit,
        offset=page.offset,
    )


@router.post("/openai/search", response_model=OpenAISearchResponse, summary="Answer a client-executed tool_search")
def openai_search(body: OpenAISearchRequest, principal: PrincipalDep, services: ServicesDep) -> OpenAISearchResponse:
    result = _select(body, principal, services)
    return OpenAISearchResponse(
        **_scored(result), tool_search_output=openai.search_output(body.call_id, result.results[0].tools)
    )
