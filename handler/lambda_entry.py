"""The Lambda function's entry point: ``handler.lambda_entry.handler``.

Everything is built at module scope, i.e. once per cold start (settings validated, model verified, index
loaded, clients created). ``lifespan="off"``: Mangum would otherwise run the ASGI lifespan per invocation.
``instrument`` adds the Lambda context to every log line, the cold-start metric, tracing and the metric flush.
With SnapStart this init runs when a version is published; the hooks below make each restored copy safe to resume
(handler/snapstart.py says what they redo and why).
"""

from __future__ import annotations

import time

from mangum import Mangum
from snapshot_restore_py import register_after_restore, register_before_snapshot

from handler import snapstart
from handler.composition import build_app
from handler.observability import instrument, logger

_started = time.perf_counter()
app = build_app()
handler = instrument(Mangum(app, lifespan="off"))
register_before_snapshot(snapstart.before_snapshot, app.state.aws_clients)
register_after_restore(snapstart.after_restore, app.state.services)
logger.info("cold start", extra={"cold_start_ms": round((time.perf_counter() - _started) * 1000, 1)})
