"""The Lambda function's entry point: ``handler.lambda_entry.handler``.

Everything is built at module scope, i.e. once per cold start (settings validated, model verified, index
loaded, clients created). ``lifespan="off"``: Mangum would otherwise run the ASGI lifespan per invocation.
"""

from __future__ import annotations

import logging
import time

from mangum import Mangum

from handler.composition import build_app

_started = time.perf_counter()
app = build_app()
handler = Mangum(app, lifespan="off")
logging.getLogger("handler.lambda_entry").info(
    "cold start", extra={"cold_start_ms": round((time.perf_counter() - _started) * 1000, 1)}
)
