"""/docs works with no internet: the page names only assets the server itself serves (from the swagger-ui-bundle
package), and it serves each of them; nothing else of the package's folder is reachable."""

from __future__ import annotations

import re

import httpx

from tests.support.gateway_app import GatewayApp
from tests.support.servers import serve


def test_docs_load_only_local_assets(gateway: GatewayApp) -> None:
    with serve(gateway.app) as base, httpx.Client(base_url=base, timeout=10) as client:
        page = client.get("/docs")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert "SwaggerUIBundle" in page.text and "'/openapi.json'" in page.text
        assert not re.search(r"https?://", page.text), "the page must not load anything from another host"
        assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert len(assets) == 3 and all(a.startswith("/docs/assets/") for a in assets), assets
        for asset, kind in zip(sorted(assets), ["image/png", "text/javascript", "text/css"], strict=True):
            served = client.get(asset)
            assert served.status_code == 200 and served.headers["content-type"].startswith(kind), asset
            assert len(served.content) > 500
        assert client.get("/openapi.json").status_code == 200
        for elsewhere in ("/docs/assets/index.html", "/docs/assets/..%2F__init__.py", "/redoc"):
            assert client.get(elsewhere).status_code == 404, elsewhere
