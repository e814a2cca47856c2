"""A request-body size limit, enforced before FastAPI parses anything.

API Gateway caps payloads at 10 MB; toolrec's requests are a few KB, so anything far larger is refused
with the ordinary 400 validation_error body instead of being parsed.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from handler.api.errors import error_response
from handler.api.schemas import FieldError


class BodySizeLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and not declared.isdigit():
            # An HTTP parser refuses this (toolrec serve: build_index/ops/serve_http.py); an API Gateway event, whose
            # body is framed by the event, can still carry it here. Refused the same way (issue 15).
            problem = FieldError(field="Content-Length", message="must be a whole number of bytes")
            await _refuse(scope, receive, send, "the Content-Length header must be a whole number of bytes", problem)
            return
        if declared is not None and int(declared) > self.max_bytes:
            await self._refuse_size(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:  # read the whole (small) body, counting as it arrives, then replay it to the app
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_bytes:
                await self._refuse_size(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse_size(self, scope: Scope, receive: Receive, send: Send) -> None:
        problem = FieldError(field="body", message=f"the request body is larger than {self.max_bytes} bytes")
        await _refuse(scope, receive, send, "the request is too large", problem)


async def _refuse(scope: Scope, receive: Receive, send: Send, message: str, problem: FieldError) -> None:
    await error_response(400, "validation_error", message, [problem])(scope, receive, send)
