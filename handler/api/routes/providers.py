"""/v1/providers/{anthropic,openai}: toolrec as the search behind each provider's own tool search (PRODUCT.md §7).

``GET .../tools`` is the request's ``tools`` (the search, then every tool the user may use, deferred); ``POST
.../search`` answers the model's search with select's answer for its one task, in the provider's shape: the same
service, policy, no-match and top_k as /v1/tools/select, and the same query log.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from handler.api.auth import PrincipalDep, ServicesDep
from handler.api.schemas import (
    MAX_ID_CHARS,
    AnthropicSearchRequest,
    AnthropicSearchResponse,
    AnthropicToolsResponse,
    OpenAISearchRequest,
    OpenAISearchResponse,
    OpenAIToolsResponse,
)
from handler.policy.model import Principal
from handler.providers import anthropic, openai
from handler.services.container import Services
from handler.services.select import Selection

router = APIRouter(prefix="/v1/providers", tags=["providers"])
UserQuery = Annotated[str, Query(min_length=1, max_length=MAX_ID_CHARS, description="the end user")]
GatewayQuery = Annotated[str | None, Query(min_length=1, max_length=MAX_ID_CHARS, description="only its tools")]


def _select(body: AnthropicSearchRequest | OpenAISearchRequest, principal: Principal, services: Services) -> Selection:
    return services.finder.select(principal, body.user_id, [body.task], body.context, body.gateway_id, body.top_k)


@router.get("/anthropic/tools", response_model=AnthropicToolsResponse, summary="Tools for Anthropic, deferred")
def anthropic_tools(
    principal: PrincipalDep, services: ServicesDep, user_id: UserQuery, gateway_id: GatewayQuery = None
) -> AnthropicToolsResponse:
    usable = services.finder.usable(principal, user_id.strip(), gateway_id and gateway_id.strip())
    return AnthropicToolsResponse(tools=anthropic.tool_list(services.settings.mcp_namespace, usable))


@router.post("/anthropic/search", response_model=AnthropicSearchResponse, summary="Answer Claude's tool search")
def anthropic_search(
    body: AnthropicSearchRequest, principal: PrincipalDep, services: ServicesDep
) -> AnthropicSearchResponse:
    selection = _select(body, principal, services)
    found = selection.results[0].tools
    return AnthropicSearchResponse(
        query_id=selection.query_id, tool_result=anthropic.search_result(body.tool_use_id, found)
    )


@router.get("/openai/tools", response_model=OpenAIToolsResponse, summary="Tools for OpenAI, deferred")
def openai_tools(
    principal: PrincipalDep, services: ServicesDep, user_id: UserQuery, gateway_id: GatewayQuery = None
) -> OpenAIToolsResponse:
    usable = services.finder.usable(principal, user_id.strip(), gateway_id and gateway_id.strip())
    return OpenAIToolsResponse(tools=openai.tool_list(usable))


@router.post("/openai/search", response_model=OpenAISearchResponse, summary="Answer a client-executed tool_search")
def openai_search(body: OpenAISearchRequest, principal: PrincipalDep, services: ServicesDep) -> OpenAISearchResponse:
    selection = _select(body, principal, services)
    found = selection.results[0].tools
    return OpenAISearchResponse(
        query_id=selection.query_id, tool_search_output=openai.search_output(body.call_id, found)
    )
