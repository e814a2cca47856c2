"""GET /healthz: which build is served, how many tools it holds and how old it is, or why none is, and the names of
the policy that match none of its tools (no auth)."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from handler.api.auth import ServicesDep
from handler.api.schemas import HealthResponse, UnknownPolicyName

router = APIRouter(tags=["health"])


@router.get(
    "/healthz",
    response_model=HealthResponse,
    responses={503: {"model": HealthResponse, "description": "no index is loaded"}},
    summary="Service health",
)
def healthz(services: ServicesDep) -> HealthResponse | JSONResponse:
    services.holder.poll()
    health = services.holder.health()
    checked = services.policy_names  # kept per build and policy: computed again only when either changed
    body = HealthResponse(
        status="ok" if health.ok else "unavailable",
        build_id=health.build_id,
        tool_count=health.tool_count,
        reason=health.reason,
        catalog_built_at=health.built_at.isoformat() if health.built_at else None,
        # The wall clock at answer time, not a cached one: a SnapStart restore or a long-warm instance reports
        # the real age.
        catalog_age_seconds=health.age_seconds(datetime.now(UTC)),
        policy_unknown_names=[UnknownPolicyName(**vars(n)) for n in checked.current()] if checked else [],
    )
    if health.ok:
        return body
    return JSONResponse(body.model_dump(), status_code=503)
