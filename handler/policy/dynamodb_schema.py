"""The key schemas of the four policy tables (see dynamodb_store), as CreateTable requests.

template.yaml declares the same tables; ``toolrec policy create-tables`` and the tests use these
definitions against moto or DynamoDB Local.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from handler.policy.dynamodb_store import TableNames

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def _table(name: str, keys: list[str]) -> dict[str, Any]:
    kinds = ["HASH", "RANGE"]
    return {
        "TableName": name,
        "KeySchema": [{"AttributeName": key, "KeyType": kinds[i]} for i, key in enumerate(keys)],
        "AttributeDefinitions": [{"AttributeName": key, "AttributeType": "S"} for key in keys],
        "BillingMode": "PAY_PER_REQUEST",
    }


def table_definitions(tables: TableNames) -> list[dict[str, Any]]:
    return [
        _table(tables.policy, ["pk", "sk"]),
        _table(tables.connections, ["pk", "sk"]),
        _table(tables.api_keys, ["key_hash"]),
        _table(tables.query_log, ["query_id"]),
    ]


def create_tables(client: DynamoDBClient, tables: TableNames) -> list[str]:
    """Create the tables that do not exist yet (and enable TTL on the query log); returns the names created."""
    existing = set(client.list_tables()["TableNames"])
    created = []
    for definition in table_definitions(tables):
        if definition["TableName"] in existing:
            continue
        client.create_table(**definition)
        client.get_waiter("table_exists").wait(TableName=definition["TableName"])
        created.append(definition["TableName"])
    if tables.query_log in created:
        client.update_time_to_live(
            TableName=tables.query_log,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"},
        )
    return created
