"""Lambda SnapStart: what the snapshot must not carry, and what a restored copy must redo.

With SnapStart (template.yaml) the init phase runs once, when a version is published; every cold start after that
resumes a copy of that memory, possibly days later and many times in parallel. So:

- before the snapshot, close the AWS clients' pooled connections: the init opened them (LATEST, the index files),
  and a restored copy would hold sockets whose other end is long gone (the first request would spend its one S3
  retry finding out);
- after a restore, reseed ``random``: every copy would otherwise draw the same sequence (botocore's retry jitter
  uses it, so throttled copies would retry in lockstep). ``uuid4`` and ``secrets`` (query and execution ids, API
  keys) read ``os.urandom``, which the kernel reseeds on restore, and no module here caches random bytes;
- after a restore, check LATEST on the first request and drop cached policy: the snapshot may hold an index and
  policy entries from publish time, timed with a monotonic clock that says nothing about the time since.

The onnxruntime session needs nothing: it runs in memory on one intra-op thread, with no sockets, files or
randomness. The MCP/HTTP/Lambda executors are built on their first call, so never before a snapshot.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from handler.policy.cached import CachedPolicyStore
from handler.services.container import Services


def before_snapshot(aws_clients: Sequence[Any]) -> None:
    for client in aws_clients:
        client.close()  # botocore: drops the pooled connections; the client opens new ones when next used


def after_restore(services: Services) -> None:
    random.seed()  # from os.urandom
    services.holder.expire()
    if isinstance(services.policy, CachedPolicyStore):
        services.policy.cache.clear()
