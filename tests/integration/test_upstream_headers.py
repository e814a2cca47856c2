"""Headers for upstream MCP servers: placeholders filled from the environment or Secrets Manager (moto)."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from build_index.ingest.upstream_headers import parse_header, parse_headers, resolve_headers, secrets_manager_reader
from handler.errors import CatalogError

REGION = "eu-west-1"


def test_environment_and_secret_placeholders_are_filled_in() -> None:
    with mock_aws():
        client = boto3.client("secretsmanager", region_name=REGION)
        arn = client.create_secret(Name="toolrec/acme/crm", SecretString="tok-from-sm\n")["ARN"]
        templates = parse_headers(
            ["Authorization: Bearer ${secretsmanager:toolrec/acme/crm}", f"X-Arn: ${{secretsmanager:{arn}}}",
             "X-Tenant: ${TENANT}-${TENANT}"]
        )  # fmt: skip
        resolved = resolve_headers(templates, {"TENANT": "acme"}, secrets_manager_reader(client))
    assert resolved == {"Authorization": "Bearer tok-from-sm", "X-Arn": "tok-from-sm", "X-Tenant": "acme-acme"}


def test_an_unreadable_secret_is_named_and_its_value_never_shown() -> None:
    with mock_aws():
        client = boto3.client("secretsmanager", region_name=REGION)
        with pytest.raises(CatalogError, match=r"cannot read secret 'toolrec/missing' from Secrets Manager"):
            resolve_headers(parse_headers(["A: ${secretsmanager:toolrec/missing}"]), {}, secrets_manager_reader(client))


@pytest.mark.parametrize(
    "text",
    ["Authorization Bearer sk-live-123", ": value", "Bad Name: x", "X-Empty:", "X: ${1BAD}", "X: ${secretsmanager:}"],
)
def test_malformed_headers_are_refused_without_echoing_them(text: str) -> None:
    with pytest.raises(CatalogError) as caught:
        parse_header(text)
    assert "sk-live-123" not in str(caught.value)


def test_a_value_that_would_split_the_request_is_refused() -> None:
    with pytest.raises(CatalogError, match="line break"):
        resolve_headers({"Authorization": "Bearer ${TOKEN}"}, {"TOKEN": "a\r\nX-Injected: 1"})
