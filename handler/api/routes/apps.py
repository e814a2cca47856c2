"""GET /v1/apps: the apps a user can act on, sorted by app_id, paged."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from handler.api.auth import PrincipalDep, ServicesDep
from handler.api.schemas import APPS_LIMIT_DEFAULT, APPS_LIMIT_MAX, AppsResponse, AppSummary

router = APIRouter(prefix="/v1", tags=["apps"])


@router.get("/apps", response_model=AppsResponse, summary="Apps the user can act on")
def list_apps(
    principal: PrincipalDep,
    services: ServicesDep,
    user_id: Annotated[str, Query(min_length=1, max_length=256)],
    limit: Annotated[int, Query(ge=1, le=APPS_LIMIT_MAX)] = APPS_LIMIT_DEFAULT,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> AppsResponse:
    page = services.apps.list_apps(services.access.caller(principal, user_id), limit, offset)
    apps = [AppSummary.model_validate(app, from_attributes=True) for app in page.apps]
    return AppsResponse(apps=apps, total=page.total, limit=limit, offset=offset)
