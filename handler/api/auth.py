"""Bearer API-key authentication for every /v1 route: the key is hashed and looked up, never stored."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from handler.errors import UnauthorizedError
from handler.policy.keys import hash_key, same_hash
from handler.policy.model import Principal
from handler.services.container import Services

_bearer = HTTPBearer(auto_error=False, description="an API key: `Authorization: Bearer <key>`")


async def services(request: Request) -> Services:
    # async: a plain function would be run on the thread pool, a hop that costs more than this lookup (issue 35)
    found: Services = request.app.state.services
    return found


ServicesDep = Annotated[Services, Depends(services)]


def principal(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)], found: ServicesDep
) -> Principal:
    if credentials is None or not credentials.credentials.strip():
        raise UnauthorizedError("an API key is required: send `Authorization: Bearer <key>`")
    key = credentials.credentials.strip()
    record = found.policy.api_key(hash_key(key))
    if record is None or not same_hash(key, record.key_hash):
        raise UnauthorizedError("the API key is not valid")
    return Principal(key_id=record.key_id, gateway_id=record.gateway_id)


PrincipalDep = Annotated[Principal, Depends(principal)]
