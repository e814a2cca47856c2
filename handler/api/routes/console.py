"""GET /: the console (PRODUCT.md §8), and GET /console/{name}: its script and style, from handler/console/static.

The page calls the same API with the key typed into it. Its Content-Security-Policy lets it load and call only this
origin: no inline script, no eval, no framing, so catalog text that slipped into markup still could not run.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import Response

from handler.errors import NotFoundError

router = APIRouter(include_in_schema=False)
STATIC = Path(__file__).resolve().parents[2] / "console" / "static"
# The files the page loads, and nothing else of the folder.
ASSETS = {"console.js": "text/javascript; charset=utf-8", "console.css": "text/css; charset=utf-8"}
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


@router.get("/")
def console() -> Response:
    return _file("index.html", "text/html; charset=utf-8")


@router.get("/console/{name}")
def asset(name: str) -> Response:
    media_type = ASSETS.get(name)
    if media_type is None:
        raise NotFoundError(f"no console file named {name!r}")
    return _file(name, media_type)


def _file(name: str, media_type: str) -> Response:
    return Response((STATIC / name).read_bytes(), media_type=media_type, headers=HEADERS)
