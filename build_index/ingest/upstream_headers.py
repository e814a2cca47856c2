"""How toolrec reaches an upstream MCP server: its URL, the App its tools get, and HTTP headers whose credentials
stay out of command lines and files.

A header is written ``Name: value``; the value may hold placeholders that are filled in just before the request:

- ``${NAME}``: the environment variable NAME (local runs, CI): ``Authorization: Bearer ${UPSTREAM_TOKEN}``;
- ``${secretsmanager:ID}``: the SecretString of an AWS Secrets Manager secret, by name or ARN (the deployed refresh
  function, whose role may read exactly those secrets): ``Authorization: Bearer ${secretsmanager:toolrec/acme/crm}``.

The same spelling works in ``toolrec build --header``, ``toolrec refresh --header`` and the refresh function's
configuration (``Upstream``: a tenant file's ``[[upstreams]]``, ``TOOLREC_REFRESH_UPSTREAMS``), so a header tested
locally is the header deployed. Resolved values are never logged or written.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from handler.aws import aws_client
from handler.errors import CatalogError

_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # RFC 9110 token
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SECRETS_MANAGER = "secretsmanager:"

SecretReader = Callable[[str], str]


def parse_header(text: str) -> tuple[str, str]:
    """``'Authorization: Bearer ${TOKEN}'`` → ``('Authorization', 'Bearer ${TOKEN}')``, placeholders unresolved."""
    name, colon, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not colon or not _HEADER_NAME.match(name) or not value:
        # Not echoed: a malformed header may well be a credential.
        raise CatalogError("a header is written 'Name: value'; one given has no valid name, colon or value")
    for reference in _PLACEHOLDER.findall(value):
        secret_id = reference.removeprefix(SECRETS_MANAGER)
        if not (secret_id if reference.startswith(SECRETS_MANAGER) else _ENV_NAME.match(reference)):
            raise CatalogError(f"header {name}: ${{{reference}}} is neither ${{ENV_VAR}} nor ${{secretsmanager:ID}}")
    return name, value


def parse_headers(texts: Sequence[str] | None) -> dict[str, str]:
    return dict(parse_header(text) for text in texts or ())


def resolve_headers(
    templates: Mapping[str, str], environ: Mapping[str, str], read_secret: SecretReader | None = None
) -> dict[str, str]:
    """The headers with every placeholder filled in; a missing variable or unreadable secret is a CatalogError."""

    def fill(header: str, match: re.Match[str]) -> str:
        reference = match.group(1)
        if reference.startswith(SECRETS_MANAGER):
            reader = read_secret or secrets_manager_reader()
            return reader(reference.removeprefix(SECRETS_MANAGER))
        if reference not in environ:
            raise CatalogError(f"header {header} uses ${{{reference}}}, but the environment has no {reference}")
        return environ[reference]

    resolved = {name: _PLACEHOLDER.sub(functools.partial(fill, name), value) for name, value in templates.items()}
    for name, value in resolved.items():
        if "\r" in value or "\n" in value:  # a header value that would split the request
            raise CatalogError(f"header {name} resolves to a value with a line break")
    return resolved


def secrets_manager_reader(client: Any = None) -> SecretReader:
    """Reads a SecretString by name or ARN; the error names the secret, never its value."""

    def read(secret_id: str) -> str:
        nonlocal client
        from botocore.exceptions import BotoCoreError, ClientError

        if client is None:
            client = aws_client("secretsmanager", "build")
        try:
            value = client.get_secret_value(SecretId=secret_id).get("SecretString")
        except (BotoCoreError, ClientError) as exc:
            raise CatalogError(f"cannot read secret {secret_id!r} from Secrets Manager: {exc}") from exc
        if not isinstance(value, str):
            raise CatalogError(f"secret {secret_id!r} holds no SecretString (binary secrets are not supported)")
        return value.strip()

    return read


class Upstream(BaseModel):
    """One upstream server as the refresh configuration names it (``TOOLREC_REFRESH_UPSTREAMS``, ``--upstreams``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(pattern=r"^https?://")
    app: str | None = None
    headers: dict[str, str] = Field(default_factory=dict, description="values may hold ${VAR} / ${secretsmanager:ID}")


def parse_upstreams(text: str) -> list[Upstream]:
    """A JSON list of ``{"url", "app"?, "headers"?}``; header values keep their placeholders."""
    try:
        raw: Any = json.loads(text)
    except ValueError as exc:
        raise CatalogError(f"the upstream list is not JSON ({exc})") from None
    return upstreams_from(raw)


def upstreams_from(raw: Any) -> list[Upstream]:
    if not isinstance(raw, list) or not raw:
        raise CatalogError("the upstream list must be a non-empty JSON list of {url, app, headers}")
    upstreams = []
    for position, item in enumerate(raw):
        try:
            upstreams.append(Upstream.model_validate(item))
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(map(str, (position, *problem["loc"])))
            raise CatalogError(f"the upstream list is not valid: {where}: {problem['msg']}") from None
    for upstream in upstreams:
        for name, value in upstream.headers.items():
            parse_header(f"{name}: {value}")  # the same rules as --header
    if len({u.url for u in upstreams}) != len(upstreams):
        raise CatalogError("the upstream list names a server twice")
    return upstreams
