"""GET /v1/usage: the query log as the console charts it (PRODUCT.md §8), scoped to what the key may see."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from handler.api.auth import PrincipalDep, ServicesDep
from handler.api.schemas import MAX_ID_CHARS, USAGE_DAYS_DEFAULT, USAGE_DAYS_MAX, UsageResponse

router = APIRouter(prefix="/v1", tags=["usage"])


@router.get("/usage", response_model=UsageResponse, summary="Recommendations and runs over time, from the query log")
def usage(
    principal: PrincipalDep,
    services: ServicesDep,
    days: Annotated[int, Query(ge=1, le=USAGE_DAYS_MAX, description="UTC days, ending today")] = USAGE_DAYS_DEFAULT,
    gateway_id: Annotated[str | None, Query(min_length=1, max_length=MAX_ID_CHARS)] = None,
    user_id: Annotated[str | None, Query(min_length=1, max_length=MAX_ID_CHARS)] = None,
) -> UsageResponse:
    """A key limited to a gateway sees that gateway's records only (naming another is 403); locally, the records
    this server logged since it started; deployed, the query log table (read up to a bound: see `truncated`)."""
    gateway = services.access.gateway_for(principal, gateway_id)
    found = services.usage.usage(gateway, days, user_id)  # a plain def: FastAPI runs it off the event loop
    return UsageResponse.of(found, None if gateway is None else gateway.gateway_id, user_id)
