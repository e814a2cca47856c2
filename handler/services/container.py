"""The services one app instance answers with, built once by ``create_app`` from its collaborators.

REST routes reach them through ``request.app.state.services``; the MCP adapter and the execute
router use the same object, so every entry point shares one index snapshot source, one policy cache
and one query log.
"""

from __future__ import annotations

from dataclasses import dataclass

from handler.embedder import Embedder
from handler.index_holder import IndexHolder
from handler.policy.store import PolicyStore
from handler.services.access import AccessPolicy
from handler.services.apps import AppDirectory
from handler.services.select import ToolFinder
from handler.settings import Settings


@dataclass(frozen=True)
class Services:
    settings: Settings
    holder: IndexHolder
    embedder: Embedder
    policy: PolicyStore
    access: AccessPolicy
    finder: ToolFinder
    apps: AppDirectory

    @classmethod
    def build(cls, settings: Settings, holder: IndexHolder, embedder: Embedder, policy: PolicyStore) -> Services:
        access = AccessPolicy(policy)
        finder = ToolFinder(holder, embedder, access, policy, settings.query_log_ttl_days)
        return cls(settings, holder, embedder, policy, access, finder, AppDirectory(holder, access))
