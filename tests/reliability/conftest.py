"""Shared fixtures for the reliability suite: the demo index, and the one error body every failure must use. The
gateway app it tests through (``backends``, ``prepared``, ``gateway``) is in tests/support/gateway_fixtures.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from handler.ranking.query import Embedder
from tests.support.serving import demo_tools, publish_tools

ERROR_KEYS = {"name", "message", "field_errors"}


def assert_error_body(status: int, body: Any) -> None:
    """Every error (4xx/5xx) is ``{name, message, field_errors?}``: strings, and field errors as field/message."""
    assert isinstance(body, dict), f"{status}: error body is not an object: {body!r}"
    assert set(body) <= ERROR_KEYS and {"name", "message"} <= set(body), f"{status}: {body!r}"
    assert isinstance(body["name"], str) and body["name"], body
    assert isinstance(body["message"], str), body
    assert "Traceback" not in body["message"] and 'File "' not in body["message"], body
    if "field_errors" in body:
        assert isinstance(body["field_errors"], list), body
        for problem in body["field_errors"]:
            assert set(problem) == {"field", "message"}, body
            assert all(isinstance(problem[k], str) for k in problem), body


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Path:
    """The demo catalog (96 tools), built and published to a local directory."""
    directory = tmp_path_factory.mktemp("demo-index")
    publish_tools(demo_tools(), str(directory), embedder)
    return directory
