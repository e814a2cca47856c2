"""The HTTP/1.1 protocol ``toolrec serve`` runs: uvicorn's h11 protocol, answering a request it cannot parse with the
one error body instead of uvicorn's plain-text ``Invalid HTTP request received.``

uvicorn's parser refuses such a request (a ``Content-Length`` of ``-1`` or ``abc``, a garbled request line) before
the app sees it, so the app's error handlers never run (issue 15). In Lambda, API Gateway does this framing, so
this is the local server's concern only. Pinned to h11, uvicorn's pure-Python parser: ``http="auto"`` would switch
to httptools whenever it happens to be installed, with a 400 of its own.
"""

from __future__ import annotations

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from handler.api.errors import error_response

MALFORMED_REQUEST = (
    "the request is not valid HTTP/1.1: check the request line and the headers (a Content-Length must be a whole"
    " number of bytes)"
)


class ErrorBodyH11Protocol(H11Protocol):
    def send_400_response(self, msg: str) -> None:
        # As uvicorn's own send_400_response, with the product's body; h11 still lets the server answer after the
        # client broke the protocol, and the connection is closed since the request's framing cannot be trusted.
        response = error_response(400, "validation_error", MALFORMED_REQUEST)
        head = h11.Response(status_code=400, headers=[*response.raw_headers, (b"connection", b"close")])
        for event in (head, h11.Data(data=bytes(response.body)), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event) or b"")
        self.transport.close()
