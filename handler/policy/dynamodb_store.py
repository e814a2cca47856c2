"""The production policy backend: four DynamoDB tables, read through an injected boto3 client.

Table designs (every key attribute is a string unless noted; template.yaml creates them):

- policy table (``TOOLREC_POLICY_TABLE``), keys ``pk`` + ``sk``:
  gateway ``pk=GATEWAY#<gateway_id>, sk=GATEWAY``; access rule ``pk=RULES#<subject>, sk=RULE#<rule_id>``
  (subject ``*`` holds the rules for every user, so a user's rules are two Query calls).
- connections table (``TOOLREC_CONNECTIONS_TABLE``), keys ``pk`` + ``sk``:
  app ``pk=APPS, sk=APP#<app_id>`` (one Query lists every app, sorted); connection
  ``pk=USER#<user_id>, sk=APP#<app_id>``.
- API keys table (``TOOLREC_API_KEYS_TABLE``), key ``key_hash`` (sha256 hex of the key; the key is never stored).
- query log table (``TOOLREC_QUERY_LOG_TABLE``), key ``query_id``; number attribute ``expires_at`` (epoch
  seconds) is the table's TTL attribute; executions are appended to the record's ``executions`` list.

The record fields are stored as plain attributes next to the keys, so the items read well in the console.

No write reads first: every change is one ``PutItem``/``DeleteItem`` of a whole record, and linking an execution
is one atomic ``list_append`` update, so concurrent writers cannot lose each other's changes (issue 15 item 2;
tests/reliability/test_policy_writers.py interleaves two). A change that must read before it writes needs a
``ConditionExpression`` on what it read, retried a bounded number of times.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, ValidationError

from handler.errors import PolicyUnavailableError
from handler.policy.model import (
    AccessRule,
    ApiKeyRecord,
    AppInfo,
    Connection,
    ExecutionRecord,
    Gateway,
    PolicyDocument,
    QueryRecord,
)
from handler.settings import DYNAMODB_TABLE_FIELDS

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

M = TypeVar("M", bound=BaseModel)
KEY_ATTRIBUTES = frozenset({"pk", "sk"})
_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


@dataclass(frozen=True)
class TableNames:
    """Each field is a settings field (DYNAMODB_TABLE_FIELDS) less its ``_table``."""

    policy: str
    connections: str
    api_keys: str
    query_log: str

    @classmethod
    def of(cls, source: object) -> TableNames:
        """The names ``source`` holds under DYNAMODB_TABLE_FIELDS: a Settings, or ``toolrec policy``'s options."""
        names = {field.removesuffix("_table"): getattr(source, field) for field in DYNAMODB_TABLE_FIELDS}
        assert all(names.values()), names  # Settings' validator and the CLI refuse a missing name first
        return cls(**names)


def _to_item(keys: Mapping[str, str], record: BaseModel) -> dict[str, Any]:
    fields = record.model_dump(mode="json", exclude_none=True)
    return {name: _serializer.serialize(_number(value)) for name, value in {**fields, **keys}.items()}


def _number(value: Any) -> Any:
    """DynamoDB numbers are decimals: boto3 refuses a float (a gateway's min_score) and reads back a Decimal."""
    return Decimal(repr(value)) if isinstance(value, float) else value


def _from_item(model: type[M], item: Mapping[str, Any]) -> M:
    plain = {k: _deserializer.deserialize(v) for k, v in item.items() if k not in KEY_ATTRIBUTES}
    try:
        return model.model_validate(plain)
    except ValidationError as exc:
        raise PolicyUnavailableError(f"a stored {model.__name__} is invalid: {exc.error_count()} problem(s)") from exc


class DynamoPolicyStore:
    """PolicyStore and PolicyWriter over DynamoDB; every storage failure becomes PolicyUnavailableError."""

    def __init__(self, client: DynamoDBClient, tables: TableNames) -> None:
        self._client = client
        self.tables = tables

    # Reads.
    def gateway(self, gateway_id: str) -> Gateway | None:
        item = self._get(self.tables.policy, {"pk": f"GATEWAY#{gateway_id}", "sk": "GATEWAY"})
        return None if item is None else _from_item(Gateway, item)

    def gateway_ids(self) -> Sequence[str]:
        # A scan, on the path of a request that named an unknown gateway only (the cached store keeps its answer).
        prefix = "GATEWAY#"
        keys = self._scan(self.tables.policy, projection="pk")
        return [pk[len(prefix) :] for item in keys if (pk := item["pk"]["S"]).startswith(prefix)]

    def access_rules(self, user_id: str) -> Sequence[AccessRule]:
        subjects = [user_id] if user_id == "*" else [user_id, "*"]
        return [
            _from_item(AccessRule, item)
            for subject in subjects
            for item in self._query(self.tables.policy, f"RULES#{subject}")
        ]

    def apps(self) -> Sequence[AppInfo]:
        return [_from_item(AppInfo, item) for item in self._query(self.tables.connections, "APPS")]

    def connections(self, user_id: str) -> Sequence[Connection]:
        return [_from_item(Connection, item) for item in self._query(self.tables.connections, f"USER#{user_id}")]

    def api_key(self, key_hash: str) -> ApiKeyRecord | None:
        item = self._get(self.tables.api_keys, {"key_hash": key_hash})
        return None if item is None else _from_item(ApiKeyRecord, item)

    def gateways_and_rules(self) -> PolicyDocument:
        """The policy table alone, a full scan: what the check of the names a policy holds reads (/healthz, cached;
        services/policy_names.py), never the request path."""
        document = PolicyDocument()
        for item in self._scan(self.tables.policy):
            if item["pk"]["S"].startswith("GATEWAY#"):
                document.gateways.append(_from_item(Gateway, item))
            else:
                document.access_rules.append(_from_item(AccessRule, item))
        return document

    def document(self) -> PolicyDocument:
        """Every gateway, rule, app, connection and key: full scans, for ``toolrec policy list``/``show`` only."""
        document = self.gateways_and_rules()
        for item in self._scan(self.tables.connections):
            if item["pk"]["S"] == "APPS":
                document.apps.append(_from_item(AppInfo, item))
            else:
                document.connections.append(_from_item(Connection, item))
        document.api_keys = [_from_item(ApiKeyRecord, item) for item in self._scan(self.tables.api_keys)]
        return document

    # Query log.
    def put_query(self, record: QueryRecord) -> None:
        self._put(self.tables.query_log, _to_item({}, record))

    def get_query(self, query_id: str) -> QueryRecord | None:
        item = self._get(self.tables.query_log, {"query_id": query_id})
        return None if item is None else _from_item(QueryRecord, item)

    def queries(self, now: float) -> Iterator[QueryRecord]:
        """Every unexpired query-log record: a full scan, page by page as the caller reads (``toolrec stats``; the
        console's usage view stops at its bound), never on the select or execute path."""
        request: dict[str, Any] = {"TableName": self.tables.query_log}
        try:
            while True:
                response = self._client.scan(**request)
                for item in response.get("Items", []):
                    record = _from_item(QueryRecord, item)
                    if record.expires_at > now:  # TTL deletion lags expiry by up to days
                        yield record
                if "LastEvaluatedKey" not in response:
                    return
                request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        except (BotoCoreError, ClientError) as exc:
            raise PolicyUnavailableError(f"cannot scan {self.tables.query_log}: {exc}") from exc

    def record_execution(self, query_id: str, execution: ExecutionRecord) -> None:
        entry = _serializer.serialize([execution.model_dump(mode="json")])
        try:
            self._client.update_item(
                TableName=self.tables.query_log,
                Key={"query_id": {"S": query_id}},
                UpdateExpression="SET executions = list_append(if_not_exists(executions, :empty), :entry)",
                ConditionExpression="attribute_exists(query_id)",
                ExpressionAttributeValues={":entry": entry, ":empty": {"L": []}},
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            return  # an unknown or expired query_id: nothing to link to
        except (BotoCoreError, ClientError) as exc:
            raise PolicyUnavailableError(f"cannot write to {self.tables.query_log}: {exc}") from exc

    # Writes (toolrec policy).
    def put_gateway(self, gateway: Gateway) -> None:
        self._put(self.tables.policy, _to_item({"pk": f"GATEWAY#{gateway.gateway_id}", "sk": "GATEWAY"}, gateway))

    def delete_gateway(self, gateway_id: str) -> None:
        self._delete(self.tables.policy, {"pk": f"GATEWAY#{gateway_id}", "sk": "GATEWAY"})

    def put_rule(self, rule: AccessRule) -> None:
        self._put(self.tables.policy, _to_item({"pk": f"RULES#{rule.subject}", "sk": f"RULE#{rule.rule_id}"}, rule))

    def delete_rule(self, subject: str, rule_id: str) -> None:
        self._delete(self.tables.policy, {"pk": f"RULES#{subject}", "sk": f"RULE#{rule_id}"})

    def put_app(self, app: AppInfo) -> None:
        self._put(self.tables.connections, _to_item({"pk": "APPS", "sk": f"APP#{app.app_id}"}, app))

    def put_connection(self, connection: Connection) -> None:
        keys = {"pk": f"USER#{connection.user_id}", "sk": f"APP#{connection.app_id}"}
        self._put(self.tables.connections, _to_item(keys, connection))

    def delete_connection(self, user_id: str, app_id: str) -> None:
        self._delete(self.tables.connections, {"pk": f"USER#{user_id}", "sk": f"APP#{app_id}"})

    def put_api_key(self, record: ApiKeyRecord) -> None:
        self._put(self.tables.api_keys, _to_item({}, record))

    def delete_api_key(self, key_hash: str) -> None:
        self._delete(self.tables.api_keys, {"key_hash": key_hash})

    # DynamoDB calls, each failure mapped once.
    def _get(self, table: str, key: Mapping[str, str]) -> dict[str, Any] | None:
        try:
            response = self._client.get_item(TableName=table, Key={k: {"S": v} for k, v in key.items()})
        except (BotoCoreError, ClientError) as exc:
            raise PolicyUnavailableError(f"cannot read {table}: {exc}") from exc
        return response.get("Item")

    def _query(self, table: str, pk: str) -> Iterator[dict[str, Any]]:
        request: dict[str, Any] = {
            "TableName": table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": pk}},
        }
        try:
            while True:
                response = self._client.query(**request)
                yield from response.get("Items", [])
                if "LastEvaluatedKey" not in response:
                    return
                request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        except (BotoCoreError, ClientError) as exc:
            raise PolicyUnavailableError(f"cannot query {table}: {exc}") from exc

    def _scan(self, table: str, projection: str | None = None) -> Iterator[dict[str, Any]]:
        request: dict[str, Any] = {"TableName": table}
        if projection is not None:  # one attribute, by a placeholder (a name may be a DynamoDB reserved word)
            request.update(ProjectionExpression="#a", ExpressionAttributeNames={"#a": projection})
        try:
            while True:
                response = self._client.scan(**request)
                yield from response.get("Items", [])
                if "LastEvaluatedKey" not in response:
                    return
                request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        except (BotoCoreError, ClientError) as exc:
            raise PolicyUnavailableError(f"cannot scan {table}: {exc}") from exc

    def _put(self, table: str, item: dict[str, Any]) -> None:
        try:
            self._client.put_item(TableName=table, Item=item)
        except (BotoCoreError, ClientError) as exc:
            raise PolicyUnavailableError(f"cannot write to {table}: {exc}") from exc

    def _delete(self, table: str, key: Mapping[str, str]) -> None:
        try:
            self._client.delete_item(TableName=table, Key={k: {"S": v} for k, v in key.items()})
        except (BotoCoreError, ClientError) as exc:
            raise PolicyUnavailableError(f"cannot remove an item of {table}: {exc}") from exc
