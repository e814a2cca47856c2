"""`handler.lambda_entry.handler`, the function's configured entry point: built from TOOLREC_* variables at
import (the cold start), then invoked with API Gateway v2 events."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import ValidationError

from tests.support.serving import apigw_event, invoke, lambda_thread_loop, write_test_policy


@pytest.fixture(autouse=True)
def _loop() -> Iterator[None]:
    with lambda_thread_loop():
        yield


def cold_start(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> ModuleType:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delitem(sys.modules, "handler.lambda_entry", raising=False)
    return importlib.import_module("handler.lambda_entry")


def test_entry_module_serves_from_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, demo_index: Path
) -> None:
    entry = cold_start(
        monkeypatch,
        {
            "TOOLREC_INDEX_LOCATION": str(demo_index),
            "TOOLREC_INDEX_CACHE_DIR": str(tmp_path / "cache"),
            "TOOLREC_POLICY_BACKEND": "file",
            "TOOLREC_POLICY_FILE": str(write_test_policy(tmp_path / "policy.json")),
        },
    )
    status, _, body = invoke(
        entry.handler, apigw_event("POST", "/v1/tools/select", {"tasks": ["send an sms"], "user_id": "u"})
    )
    assert status == 200
    assert body["results"][0]["suggestions"][0]["tool_name"] == "Twilio.SendSms"


def test_bad_configuration_fails_the_cold_start(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TOOLREC_POLICY_FILE", raising=False)
    with pytest.raises(ValidationError, match="TOOLREC_QUERY_LOG_TABLE"):
        cold_start(monkeypatch, {"TOOLREC_INDEX_LOCATION": str(tmp_path), "TOOLREC_POLICY_BACKEND": "dynamodb"})
