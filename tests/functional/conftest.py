"""The Lambda function as API Gateway invokes it: the real composition root behind Mangum, on the demo index."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from mangum import Mangum

from handler.composition import build_app
from handler.inference.embedder import OnnxEmbedder
from handler.services.container import Services
from tests.support.serving import (
    apigw_event,
    demo_tools,
    file_settings,
    invoke,
    lambda_thread_loop,
    publish_tools,
    write_test_policy,
)


@pytest.fixture(scope="session")
def demo_index(tmp_path_factory: pytest.TempPathFactory, embedder: OnnxEmbedder) -> Path:
    directory = tmp_path_factory.mktemp("demo-index")
    publish_tools(demo_tools(), str(directory), embedder)
    return directory


@dataclass
class Function:
    app: FastAPI
    handler: Mangum
    policy_file: Path

    @property
    def services(self) -> Services:
        services: Services = self.app.state.services
        return services

    def call(self, method: str, path: str, body: Any = None, **options: Any) -> tuple[int, dict[str, str], Any]:
        return invoke(self.handler, apigw_event(method, path, body, **options))


@pytest.fixture
def make_function(tmp_path: Path, embedder: OnnxEmbedder) -> Iterator[Callable[..., Function]]:
    def make(index_location: str, **settings: Any) -> Function:
        policy_file = write_test_policy(tmp_path / "policy.json")
        app = build_app(file_settings(index_location, policy_file, tmp_path / "cache", **settings), embedder=embedder)
        return Function(app, Mangum(app, lifespan="off"), policy_file)

    with lambda_thread_loop():
        yield make


@pytest.fixture
def function(make_function: Callable[..., Function], demo_index: Path) -> Function:
    return make_function(str(demo_index))
