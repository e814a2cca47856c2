"""GET /docs: Swagger UI over /openapi.json, with its script, style and icon served from the swagger-ui-bundle
package rather than FastAPI's default CDN, so the page works with no internet (FastAPI's "Custom Docs UI Static
Assets"). The local server's page: template.yaml routes no /docs, and the Lambda package leaves the bundle out
(infra/package.py), so it is imported on the first request for an asset, never at a cold start.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

from handler.errors import NotFoundError

router = APIRouter(include_in_schema=False)
ASSETS_PATH = "/docs/assets"
# The files the page loads, and nothing else of the package's folder.
ASSETS = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css", "favicon-32x32.png": "image/png"}


@router.get("/docs")
def docs() -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="toolrec - API",
        swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
        swagger_favicon_url=f"{ASSETS_PATH}/favicon-32x32.png",
        swagger_ui_parameters={"validatorUrl": None},  # Swagger UI's default asks validator.swagger.io online
    )


@router.get(f"{ASSETS_PATH}/{{name}}")
def asset(name: str) -> FileResponse:
    media_type = ASSETS.get(name)
    if media_type is None:
        raise NotFoundError(f"no docs asset named {name!r}")
    from swagger_ui_bundle import swagger_ui_path

    return FileResponse(swagger_ui_path / name, media_type=media_type)
