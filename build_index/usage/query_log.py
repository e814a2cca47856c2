"""The query log as records: a deployment's DynamoDB table, or the file ``toolrec serve`` appends to beside its local
policy file. Read by ``toolrec stats`` and by the build's usage fold (build_index/usage/fold.py), never written here.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from handler.aws import aws_client
from handler.errors import PolicyUnavailableError
from handler.policy.model import QueryRecord


def local_query_log_records(policy_file: Path) -> Iterator[QueryRecord]:
    """The unexpired records of the query log beside a local policy file."""
    from handler.policy.file_store import query_log_file, read_query_log

    log = query_log_file(policy_file)
    if not log.is_file():
        raise PolicyUnavailableError(
            f"no query log at {log.resolve()}: `toolrec serve` writes it beside its policy file on the first select"
            " (give --policy FILE, or --table for a deployment's DynamoDB query log)"
        )
    now = time.time()  # the same view as a scan of DynamoDB's table, whose TTL drops expired records
    return (record for record in read_query_log(log) if record.expires_at > now)


def query_log_records(table: str, region: str | None = None, dynamodb_client: Any = None) -> Iterator[QueryRecord]:
    """The unexpired records of a deployment's query log (DynamoDB)."""
    from handler.policy.dynamodb_store import DynamoPolicyStore, TableNames

    if dynamodb_client is None:
        dynamodb_client = aws_client("dynamodb", "build", region)
    # Only the query log is read; the other table names are never used by queries().
    store = DynamoPolicyStore(dynamodb_client, TableNames(policy="", connections="", api_keys="", query_log=table))
    return store.queries(time.time())
