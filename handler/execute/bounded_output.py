"""One limit on a tool's answer, for every executor, counted as the bytes arrive (issue 22 items 1 and 2).

A Lambda answer carries at most 6 MB, so an output past MAX_OUTPUT_BYTES can never be returned. Reading it all
before refusing it is what cost memory: a worker streaming 256 MB grew the server by ~500 MB, an upstream MCP
server's 100 MB text by ~510 MB. So each executor feeds its tool's answer through one ``OutputBudget`` as it
arrives and stops reading just past the limit; a call holds little more than the limit, whatever the tool sends.

Answers are asked for uncompressed (NO_COMPRESSION) and a compressed one is refused: a body inflated as it is
read can pass the limit a thousand times over within one chunk, before anything is counted.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Mapping

from handler.errors import ExecutionError, OutputUnreturnableError

MAX_OUTPUT_BYTES = 5 * 1024 * 1024  # under Lambda's 6 MB answer, with room for the envelope around the output
NO_COMPRESSION = {"Accept-Encoding": "identity"}
_UNCOMPRESSED = ("", "identity")


class OutputTooLargeError(OutputUnreturnableError):
    """The tool ran and answered more than the limit; what it sent was not read further."""

    def __init__(self, tool_name: str, limit: int) -> None:
        super().__init__(tool_name, f"it answered with more than {limit:,} bytes, more than an answer can carry")


class OutputBudget:
    """What one call may read back from its tool. The first refusal is also kept in ``failure``: an SDK between
    the stream and the executor (the MCP client) may report it as something else, or swallow it."""

    def __init__(self, tool_name: str, limit: int = MAX_OUTPUT_BYTES) -> None:
        self.tool_name = tool_name
        self.limit = limit
        self.failure: ExecutionError | None = None
        self._read = 0

    def admit(self, headers: Mapping[str, str]) -> None:
        """Refuse an answer whose body would be inflated as it is read."""
        encoding = headers.get("content-encoding", "").strip().lower()
        if encoding not in _UNCOMPRESSED:
            why = f"it answered compressed (Content-Encoding: {encoding[:40]}), and toolrec asks for no compression"
            self._refuse(OutputUnreturnableError(self.tool_name, why))

    def count(self, chunk: bytes) -> None:
        self._read += len(chunk)
        if self._read > self.limit:
            self._refuse(OutputTooLargeError(self.tool_name, self.limit))

    async def read(self, chunks: AsyncIterable[bytes]) -> bytes:
        """The whole body, if it is within the limit."""
        parts = []
        async for chunk in chunks:
            self.count(chunk)
            parts.append(chunk)
        return b"".join(parts)

    def _refuse(self, failure: ExecutionError) -> None:
        self.failure = self.failure or failure
        raise failure
