"""``toolrec build --from-mcp URL``: turn an upstream MCP server's ``tools/list`` into catalog entries.

Each tool becomes ``App.ToolName`` (App from ``--mcp-app`` or the server's name; ToolName from ``tool_parts``, one the
catalog accepts), keeps its description and input schema, and gets an ``mcp`` executor pointing at that server with
the tool's original name, so toolrec's execute path calls exactly the tool that was listed. An upstream chooses its
own names: one that would be one of toolrec's own (a server named "Toolrec" listing ``UseTool``) is renamed, as a
clash is, rather than failing the build over a name the operator cannot change. A refresh names tools after the
published build (``Precedent``): a name keeps its upstream tool, and a newcomer never takes a name that build gives.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from build_index.ingest.upstream_headers import parse_headers, resolve_headers
from handler.catalog.json_limits import catalog_schema_problems
from handler.catalog.names import (
    DEFAULT_NAMESPACE,
    describe_collisions,
    name_collisions,
    reserved_names,
    spelling_keys,
)
from handler.catalog.tool import _VERSION_SUFFIX, Executor, Tool
from handler.errors import CatalogError

MAX_PAGES = 100  # a server that pages forever must not hang the build
_NOT_NAME_CHAR = re.compile(r"[^A-Za-z0-9_]+")
_HASH_CHARS = 8


def app_name(raw: str) -> str:
    """``my-weather server`` → ``MyWeatherServer``: an App part that APP_TOOL_NAME accepts."""
    words = [w for w in re.split(r"[^A-Za-z0-9]+", raw) if w]
    name = "".join(w[:1].upper() + w[1:] for w in words)
    return name if name[:1].isalpha() else f"Mcp{name}"


def tool_part(raw: str) -> str:
    """``get-forecast`` → ``get_forecast``: the characters APP_TOOL_NAME takes in a tool part (letters, digits and
    ``_``, starting with a letter; ``Tool`` when none is left). Versions and clashes are ``tool_parts``' concern."""
    name = _NOT_NAME_CHAR.sub("_", raw).strip("_")
    if not name:
        return "Tool"
    return name if name[:1].isalpha() else f"T{name}"


@dataclass(frozen=True)
class Precedent:
    """What the published build named, read by a refresh: access rules, pins and usage name tools, so a name that
    moved to another tool would take them along (issue 22 item 5: ``drop_table`` appeared upstream, took the name
    ``Db.drop_table`` from ``drop-table``, and the deny on that name guarded the newcomer instead)."""

    held: Mapping[str, str] = field(default_factory=dict)  # this server's upstream tool name -> its catalog name
    taken: frozenset[str] = frozenset()  # every spelling of every name the build holds

    @classmethod
    def of(cls, published: Sequence[Tool], url: str) -> Precedent:
        held = {
            t.executor.tool: t.name
            for t in published
            if t.executor is not None and t.executor.kind == "mcp" and t.executor.target == url and t.executor.tool
        }
        return cls(held, frozenset(key for t in published for key in spelling_keys(t.name)))

    def kept_part(self, app_id: str, raw: str, namespace: str) -> str | None:
        """The ToolName the build gave upstream tool ``raw``, if it is still this App's and not reserved."""
        app, _, part = self.held.get(raw, "").partition(".")
        return part if app == app_id and part and not reserved_names([f"{app}.{part}"], namespace) else None

    def gives(self, name: str) -> bool:
        return bool(spelling_keys(name) & self.taken)


def tool_parts(
    app_id: str, raws: Sequence[str], namespace: str = DEFAULT_NAMESPACE, precedent: Precedent | None = None
) -> list[str]:
    """Each upstream tool's ToolName: ``App.ToolName`` the catalog accepts, distinct from the others' to callers and
    from toolrec's own tools under ``namespace``; with a ``precedent``, each tool it named keeps that name.

    Accents fold to ASCII (``Über-Tool`` → ``Uber_Tool``) and a version suffix is dropped (``get-forecast.v2`` →
    ``get_forecast``), since the catalog refuses versioned names (PRODUCT.md §2). Names this makes one to callers
    (handler/catalog/names.py) each end in a hash of the upstream name, the same from one refresh to the next in
    whatever order the server lists its tools; one the upstream spells as the catalog would keeps its name. Upstream
    names that are already one to callers (``get_forecast``, ``Get_Forecast``) are left alike, so merge refuses them.
    A name reserved for toolrec's own tools ends in the hash too, and so does a newcomer's that the precedent gives
    another tool: the newcomer gets the suffix, never the tool that held the name.
    """
    precedent = precedent or Precedent()
    kept = {i: part for i, raw in enumerate(raws) if (part := precedent.kept_part(app_id, raw, namespace))}
    parts = [kept.get(i) or _readable_part(app_id, raw) for i, raw in enumerate(raws)]
    upstream_alike = {i for pair in name_collisions(raws) for i in pair}
    # One spelled as the catalog would keeps its name: two such names alike would be upstream_alike.
    renamed_alike = {i for i in _clashing(app_id, parts) - upstream_alike if parts[i] != raws[i]}
    reserved = {i for i, part in enumerate(parts) if reserved_names([f"{app_id}.{part}"], namespace)}
    given = {i for i, part in enumerate(parts) if precedent.gives(f"{app_id}.{part}")}
    for i in (renamed_alike | reserved | given) - kept.keys():
        parts[i] = f"{parts[i]}_{_digest(raws[i])}"
    return parts


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]


def _readable_part(app_id: str, raw: str) -> str:
    ascii_name = unicodedata.normalize("NFKD", raw).encode("ascii", "ignore").decode("ascii")
    part = tool_part(_unversioned(ascii_name))
    # Once characters are replaced a suffix can appear ("get forecast v2"), and behind the App's dot "v2" is one.
    return tool_part(_unversioned(f"{app_id}.{part}").partition(".")[2])


def _unversioned(name: str) -> str:
    while (found := _VERSION_SUFFIX.search(name)) is not None:
        name = name[: found.start()].rstrip("_-. ")  # "a_v2__v3" leaves "a_v2_", itself a version once stripped
    return name


def _clashing(app_id: str, parts: Sequence[str]) -> set[int]:
    return {i for pair in name_collisions(f"{app_id}.{part}" for part in parts) for i in pair}


async def list_upstream(
    url: str, timeout_s: float, headers: Mapping[str, str], refusals: list[httpx2.Response]
) -> tuple[str, list[types.Tool]]:
    """The server's name and every tool it lists (all pages). HTTP errors are appended to ``refusals``: the SDK
    reports a 401 as a generic "Server returned an error response", so the status is read here, as it arrives."""

    async def note_refusal(response: httpx2.Response) -> None:
        if response.status_code >= 400:
            refusals.append(response)

    http = httpx2.AsyncClient(timeout=timeout_s, headers=dict(headers), event_hooks={"response": [note_refusal]})
    tools: list[types.Tool] = []
    async with http, Client(streamable_http_client(url, http_client=http), cache=None) as client:
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        server = client.server_info.name if client.server_info is not None else ""
    return server, tools


def catalog_entries(
    url: str,
    server_name: str,
    tools: Sequence[types.Tool],
    app: str | None,
    namespace: str = DEFAULT_NAMESPACE,
    precedent: Precedent | None = None,
) -> list[Tool]:
    app_id = app_name(app or server_name or "Mcp")
    entries: list[Tool] = []
    problems: list[str] = []
    parts = tool_parts(app_id, [t.name for t in tools], namespace, precedent)
    for tool, part in zip(tools, parts, strict=True):
        description = (tool.description or tool.title or "").strip()
        # Checked here as well as by the build, so the upstream name is the one named and --catalog-out stays unwritten.
        unusable = catalog_schema_problems(tool.input_schema)
        if unusable:
            problems.extend(f"{tool.name!r}: input_schema{problem}" for problem in unusable)
            continue
        try:
            entries.append(
                Tool(
                    name=f"{app_id}.{part}",
                    description=description,
                    input_schema=tool.input_schema,
                    app=app_id,
                    executor=Executor(kind="mcp", target=url, tool=tool.name),
                )
            )
        except ValidationError as exc:
            problems.append(f"{tool.name!r}: {exc.errors()[0]['msg']}")
    if problems:
        raise CatalogError(f"tools of {url} that cannot enter the catalog: " + "; ".join(problems))
    return entries


def ingest(
    url: str,
    app: str | None = None,
    timeout_s: float = 30.0,
    headers: Mapping[str, str] | None = None,
    namespace: str = DEFAULT_NAMESPACE,
    precedent: Precedent | None = None,
) -> list[Tool]:
    """The server's tools as catalog entries; ``headers`` are sent as given (placeholders already resolved)."""
    refusals: list[httpx2.Response] = []
    try:
        server_name, tools = anyio.run(list_upstream, url, timeout_s, headers or {}, refusals)
    except (MCPError, httpx2.HTTPError, OSError, ExceptionGroup) as exc:
        raise CatalogError(f"cannot list the tools of MCP server {url}: {_why(exc, refusals, bool(headers))}") from exc
    return catalog_entries(url, server_name, tools, app, namespace, precedent)


def _why(exc: BaseException, refusals: Sequence[httpx2.Response], sent_headers: bool) -> str:
    if refusals:
        status = refusals[0].status_code
        reason = refusals[0].reason_phrase or "error"
        hint = ""
        if status in (401, 403):
            hint = " (the credentials sent were refused)" if sent_headers else " (it wants credentials: see --header)"
        return f"it answered HTTP {status} {reason}{hint}"
    # The SDK runs its transport in task groups, nested: the first real error is the one to name, not the
    # group ("unhandled errors in a TaskGroup" told nobody what failed).
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, httpx2.TimeoutException):
        return "it did not answer in time"
    if isinstance(exc, (httpx2.ConnectError, OSError)):
        return f"cannot connect ({exc or type(exc).__name__})"
    return str(exc) or type(exc).__name__


def write_catalog(path: Path, tools: Sequence[Tool]) -> None:
    """The ingested tools as catalog JSONL, so they can be reviewed, linted and rebuilt without the server."""
    lines = (json.dumps(t.model_dump(mode="json", exclude_none=True), ensure_ascii=False) for t in tools)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def tools_from_mcp(
    urls: Sequence[str],
    app: str | None,
    catalog_out: Path | None,
    header_texts: Sequence[str] | None = None,
    namespace: str = DEFAULT_NAMESPACE,
) -> list[Tool]:
    """``--from-mcp`` (with ``--mcp-app``, ``--catalog-out``, ``--header``, its placeholders filled from the
    environment and Secrets Manager) as catalog entries."""
    if app is not None and len(urls) > 1:
        raise CatalogError("--mcp-app names one server's tools: give one --from-mcp with it")
    headers = resolve_headers(parse_headers(header_texts), os.environ)
    tools = [tool for url in urls for tool in ingest(url, app, headers=headers, namespace=namespace)]
    if catalog_out is not None:
        write_catalog(catalog_out, tools)
    return tools


def merge(catalog: Sequence[Tool], ingested: Sequence[Tool]) -> list[Tool]:
    """Catalog rows and ingested tools together; a name in both, or two that callers cannot tell apart (one
    server's ``get_forecast`` and ``Get_Forecast``), is an error, not a silent override."""
    merged = [*catalog, *ingested]
    problem = describe_collisions([t.name for t in merged])
    if problem is not None:
        raise CatalogError(f"tools from a catalog and --from-mcp collide: {problem}")
    return merged
