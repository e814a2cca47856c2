"""The services one app instance answers with, built once by ``create_app`` from its collaborators.

REST routes reach them through ``request.app.state.services`` and the MCP adapter through the same object, so
every entry point shares one index snapshot source, one policy cache, one query log and one set of executors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from handler.execute.base import Dispatcher, ToolExecutor
from handler.execute.registry import default_executors
from handler.index.holder import IndexHolder
from handler.policy.store import PolicyStore
from handler.ranking.query import Embedder
from handler.services.access import AccessPolicy
from handler.services.apps import AppDirectory
from handler.services.execution import ExecutionService
from handler.services.policy_names import PolicyNameCheck
from handler.services.select import ToolFinder
from handler.services.usage import UsageService
from handler.settings import Settings


@dataclass(frozen=True)
class Services:
    settings: Settings
    holder: IndexHolder
    policy: PolicyStore
    access: AccessPolicy
    finder: ToolFinder
    apps: AppDirectory
    execution: ExecutionService
    usage: UsageService
    policy_names: PolicyNameCheck | None = None  # the policy's names no tool or app holds (None: not checked)

    @classmethod
    def build(
        cls,
        settings: Settings,
        holder: IndexHolder,
        embedder: Embedder,
        policy: PolicyStore,
        executors: Mapping[str, ToolExecutor] | None = None,
        policy_names: PolicyNameCheck | None = None,
    ) -> Services:
        """``executors``: kind -> adapter (http, mcp and lambda by default); tests inject a Lambda client this way."""
        access = AccessPolicy(policy)
        finder = ToolFinder(holder, embedder, access, policy, settings.query_log_ttl_days)
        dispatcher = Dispatcher(executors or default_executors(), settings.max_tool_seconds)
        execution = ExecutionService(holder, access, dispatcher)
        apps = AppDirectory(holder, access)
        usage = UsageService(holder, policy)
        return cls(settings, holder, policy, access, finder, apps, execution, usage, policy_names)
