"""``toolrec policy ...``: write gateways, access rules, apps, connections and API keys to either backend.

The backend is the local policy file (``--file``, default $TOOLREC_POLICY_FILE or .toolrec/policy.json) or
DynamoDB (``--dynamodb``; table names from the options or the same TOOLREC_* variables the service reads).
What a command checks first (the file it edits, tool patterns against the index, that a deleted record exists)
is in policy_checks.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from build_index.ops.policy_checks import (
    NOT_FOUND_EXIT,
    Catalog,
    PolicyCommandError,
    check_patterns,
    did_you_mean,
    index_for,
    open_policy_file,
    say,
)
from build_index.ops.policy_connections import connection_lines
from handler.policy.store import PolicyWriter
from handler.settings import DYNAMODB_TABLE_FIELDS, ENV_PREFIX

if TYPE_CHECKING:
    from handler.index.table import ToolTable


def add_backend_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--file",
        "--policy",
        type=Path,
        default=None,
        help="policy file (default: $TOOLREC_POLICY_FILE, else .toolrec/policy.json, which must exist)",
    )
    parser.add_argument("--create", action="store_true", help="start .toolrec/policy.json here if it is absent")
    parser.add_argument("--dynamodb", action="store_true", help="write to the DynamoDB tables instead")
    for option in DYNAMODB_TABLE_FIELDS:  # the service's settings of the same name
        parser.add_argument(f"--{option.replace('_', '-')}", help=f"(default ${ENV_PREFIX}{option.upper()})")


def open_writer(args: argparse.Namespace, dynamodb_client: Any = None) -> PolicyWriter:
    from handler.aws import aws_client
    from handler.policy.dynamodb_store import DynamoPolicyStore, TableNames
    from handler.policy.file_store import FilePolicyStore

    if not args.dynamodb:
        return FilePolicyStore(open_policy_file(args.file, args.create, writes=not args.policy_reads))
    for option in DYNAMODB_TABLE_FIELDS:
        if not getattr(args, option):
            setattr(args, option, os.environ.get(f"{ENV_PREFIX}{option.upper()}"))
    missing = [f"--{o.replace('_', '-')}" for o in DYNAMODB_TABLE_FIELDS if not getattr(args, o)]
    if missing:
        raise SystemExit(f"toolrec policy --dynamodb needs {', '.join(missing)} (or their {ENV_PREFIX}* variables)")
    if dynamodb_client is None:
        dynamodb_client = aws_client("dynamodb", "build")
    names = ", ".join(getattr(args, option) for option in DYNAMODB_TABLE_FIELDS)
    say(f"{'reading' if args.policy_reads else 'editing'} the DynamoDB tables {names}")
    return DynamoPolicyStore(dynamodb_client, TableNames.of(args))


def _catalog(args: argparse.Namespace, store: PolicyWriter) -> Catalog:
    return Catalog(index_for(args.index, getattr(store, "path", None)))


def _score(text: str) -> float:
    try:
        score = float(text)
    except ValueError:
        score = -1.0
    if not 0.0 <= score <= 1.0:  # NaN fails too
        raise argparse.ArgumentTypeError(f"a score between 0 and 1, not {text!r}")
    return score


def _must_exist(found: object, what: str) -> None:
    if not found:
        raise PolicyCommandError(f"no {what}: nothing deleted", NOT_FOUND_EXIT)


def _gateway_put(args: argparse.Namespace, store: PolicyWriter) -> str:
    from handler.policy.model import Gateway

    gateway = Gateway(
        gateway_id=args.gateway_id,
        allowed=tuple(args.allow),
        recommendation=args.recommendation,
        pinned=args.pin,
        min_score=args.min_score,
    )
    catalog = _catalog(args, store)
    check_patterns(gateway.allowed, catalog)
    if gateway.pinned:
        gateway = _catalog_pins(gateway, catalog)
    store.put_gateway(gateway)
    pins = f"; pins {', '.join(gateway.pinned)}" if gateway.pinned else ""
    floor = f"; min_score {gateway.min_score}" if gateway.min_score is not None else ""
    return f"gateway {args.gateway_id} allows {', '.join(args.allow) or 'nothing'}{pins}{floor}"


def _catalog_pins(gateway: Any, catalog: Catalog) -> Any:
    """Refuse a pin the served catalog lacks or the gateway does not allow, or that names one of toolrec's own
    tools (listed beside them, it would be listed twice); keep each under its catalog name."""
    from handler.catalog.names import describe_reserved
    from handler.errors import CatalogError
    from handler.services.access import Pins
    from handler.settings import configured_namespace

    reserved = describe_reserved(gateway.pinned, configured_namespace(os.environ))
    if reserved is not None:
        raise CatalogError(f"cannot pin {reserved}, and listed by the gateway itself whenever it recommends")
    if not catalog.location:
        raise SystemExit("toolrec policy gateway put --pin needs --index (or $TOOLREC_INDEX_LOCATION) to check pins")
    table = catalog.table
    pins = Pins.of(table, gateway.pinned, table.mask(gateway.allowed))
    problem = pins.problem(gateway.gateway_id)
    if problem is not None:
        hints = [f"{name!r}{hint}" for name in pins.missing if (hint := did_you_mean(name, table.names))]
        suggested = f"; {', '.join(hints)}" if hints else ""
        raise CatalogError(f"{problem}{suggested} (catalog of {catalog.location})")
    return gateway.model_copy(update={"pinned": tuple(table.names[i] for i in pins.positions)})


def _gateway_delete(args: argparse.Namespace, store: PolicyWriter) -> str:
    _must_exist(store.gateway(args.gateway_id), f"gateway {args.gateway_id}")
    store.delete_gateway(args.gateway_id)
    return f"gateway {args.gateway_id} deleted"


def _rule_put(args: argparse.Namespace, store: PolicyWriter) -> str:
    from handler.policy.model import AccessRule

    rule = AccessRule(rule_id=args.rule_id, subject=args.subject, effect=args.effect, tools=tuple(args.tools))
    check_patterns(rule.tools, _catalog(args, store))
    store.put_rule(rule)
    return f"rule {args.rule_id}: {args.effect} {args.subject} {', '.join(args.tools)}"


def _rule_delete(args: argparse.Namespace, store: PolicyWriter) -> str:
    """A rule is named by its subject and id; the id alone names it when one subject has a rule of that id."""
    if args.subject is None:
        subjects = sorted({r.subject for r in store.document().access_rules if r.rule_id == args.rule_id})
        _must_exist(subjects, f"rule {args.rule_id}")
        if len(subjects) > 1:
            raise PolicyCommandError(f"rule {args.rule_id} exists for {', '.join(subjects)}: give --subject")
        args.subject = subjects[0]
    rules = store.access_rules(args.subject)
    _must_exist(
        [r for r in rules if (r.subject, r.rule_id) == (args.subject, args.rule_id)],
        f"rule {args.rule_id} of {args.subject}",
    )
    store.delete_rule(args.subject, args.rule_id)
    return f"rule {args.rule_id} of {args.subject} deleted"


def _app_put(args: argparse.Namespace, store: PolicyWriter) -> str:
    from handler.policy.model import AppInfo

    app = AppInfo(
        app_id=args.app_id, name=args.name or "", description=args.description or "", authorize_url=args.authorize_url
    )
    store.put_app(app)
    return f"app {args.app_id} saved"


def _connection_put(args: argparse.Namespace, store: PolicyWriter) -> str:
    from handler.policy.model import Connection

    connection = Connection(
        user_id=args.user_id,
        app_id=args.app_id,
        connected=not args.disconnected,
        account=args.account,
        scopes=tuple(args.scope),
    )
    store.put_connection(connection)
    return f"{args.user_id} {'disconnected from' if args.disconnected else 'connected to'} {args.app_id}"


def _connection_delete(args: argparse.Namespace, store: PolicyWriter) -> str:
    connections = store.connections(args.user_id)
    _must_exist([c for c in connections if c.app_id == args.app_id], f"connection of {args.user_id} to {args.app_id}")
    store.delete_connection(args.user_id, args.app_id)
    return f"connection of {args.user_id} to {args.app_id} deleted"


def _key_create(args: argparse.Namespace, store: PolicyWriter) -> str:
    from handler.policy.keys import generate_key, hash_key, key_id_for
    from handler.policy.model import ApiKeyRecord

    key = args.key or generate_key()
    key_id = args.key_id or key_id_for(key)
    store.put_api_key(
        ApiKeyRecord(key_id=key_id, key_hash=hash_key(key), gateway_id=args.gateway, description=args.description)
    )
    shown = "" if args.key else f"\n{key}\n(the key is shown once: only its sha256 is stored)"
    return f"API key {key_id} created{' for gateway ' + args.gateway if args.gateway else ''}{shown}"


def _key_revoke(args: argparse.Namespace, store: PolicyWriter) -> str:
    from handler.policy.keys import hash_key

    is_hash = len(args.key) == 64 and all(c in "0123456789abcdef" for c in args.key)
    key_hash = args.key if is_hash else hash_key(args.key)
    _must_exist(store.api_key(key_hash), "such API key")
    store.delete_api_key(key_hash)
    return "API key revoked"


def _create_tables(args: argparse.Namespace, store: PolicyWriter) -> str:
    from handler.policy.dynamodb_schema import create_tables
    from handler.policy.dynamodb_store import DynamoPolicyStore

    if not isinstance(store, DynamoPolicyStore):
        raise SystemExit("create-tables needs --dynamodb")
    created = create_tables(store._client, store.tables)
    return f"created {', '.join(created)}" if created else "all tables exist"


def _list(args: argparse.Namespace, store: PolicyWriter) -> str:
    document = store.document()
    lines = [f"gateway {g.gateway_id}: allows {', '.join(g.allowed) or 'nothing'}, recommendation {g.recommendation}"
             for g in document.gateways]  # fmt: skip
    lines += [f"rule {r.rule_id} for {r.subject}: {r.effect} {', '.join(r.tools)}" for r in document.access_rules]
    lines += [f"app {a.app_id}: {a.name or a.app_id}" for a in document.apps]
    lines += connection_lines(document.connections, store, _list_catalog(args, store, document.connections))
    lines += [f"key {k.key_id}: {'gateway ' + k.gateway_id if k.gateway_id else 'every gateway'}"
              for k in document.api_keys]  # fmt: skip
    return "\n".join(lines) or "the policy is empty: no gateways, rules, apps, connections or keys"


def _list_catalog(args: argparse.Namespace, store: PolicyWriter, connections: Sequence[Any]) -> ToolTable | None:
    """The catalog a connection is checked against (the one its policy is for), if one is found and needed."""
    catalog = _catalog(args, store)
    if not any(c.connected for c in connections):
        return None
    if catalog.location is None:
        say("live connections are not checked against a catalog: give --index (the index this policy is for)")
        return None
    return catalog.table


def _show(args: argparse.Namespace, store: PolicyWriter) -> str:
    text: str = store.document().model_dump_json(indent=2, exclude_none=True)
    return text


def _check(args: argparse.Namespace, store: PolicyWriter) -> str:
    """Every pattern and pin of the policy that matches no tool or app of the index, with the nearest name: `put`
    refuses those, a hand edit or a later build does not (PRODUCT.md §4). Exit 1 when there is one."""
    from handler.services.policy_names import unknown_names

    catalog = _catalog(args, store)
    if catalog.location is None:
        raise PolicyCommandError("policy check needs --index (or $TOOLREC_INDEX_LOCATION): the catalog to check")
    found = unknown_names(store.document(), catalog.table)
    where = f"the index at {catalog.location} ({len(catalog.table.names)} tools)"
    if found:
        lines = "\n  ".join(name.describe() for name in found)
        raise PolicyCommandError(f"{len(found)} name(s) match no tool or app of {where}:\n  {lines}", NOT_FOUND_EXIT)
    return f"every pattern and pin of the policy matches a tool of {where}"


Action = Callable[[argparse.Namespace, PolicyWriter], str]


def _action(parent: Any, name: str, func: Action, help_text: str) -> argparse.ArgumentParser:
    sub: argparse.ArgumentParser = parent.add_parser(name, help=help_text)
    sub.set_defaults(policy_action=func)
    return sub


def _verbs(kinds: Any, kind: str, help_text: str) -> Any:
    return kinds.add_parser(kind, help=help_text).add_subparsers(dest="verb", required=True)


# On the commands that take tool patterns (where gateway put's --pin takes its --index too): an option of the
# `policy` parser itself would be reset by a subcommand's own default for the same name.
INDEX_HELP = (
    "the index whose tools the patterns must match (default: ./index beside the policy file, else"
    " $TOOLREC_INDEX_LOCATION)"
)


def _access_parsers(kinds: Any) -> None:
    gateway = _verbs(kinds, "gateway", "gateways")
    put = _action(gateway, "put", _gateway_put, "create or replace a gateway")
    put.add_argument("gateway_id")
    put.add_argument("--allow", nargs="*", default=[], help="'*', 'App.*' or exact tool names")
    put.add_argument("--recommendation", choices=["on", "off", "auto"], default="auto")
    put.add_argument("--pin", nargs="*", default=[], help="exact tool names always listed beside the meta-tools")
    put.add_argument(
        "--min-score",
        type=_score,
        default=None,
        help="select's default floor on a suggestion's calibrated score, 0 to 1 (a request's min_score overrides it)",
    )
    put.add_argument("--index", help=INDEX_HELP + "; --pin checks its names against it too")
    _action(gateway, "delete", _gateway_delete, "delete a gateway").add_argument("gateway_id")

    rule = _verbs(kinds, "rule", "user access rules (deny wins; no allow rule means no tools)")
    put = _action(rule, "put", _rule_put, "create or replace an access rule")
    put.add_argument("--subject", required=True, help="a user_id, or '*' for every user")
    put.add_argument("--rule-id", required=True)
    put.add_argument("--effect", choices=["allow", "deny"], required=True)
    put.add_argument("--tools", nargs="+", required=True, help="'*', 'App.*' or exact tool names")
    put.add_argument("--index", help=INDEX_HELP)
    delete = _action(rule, "delete", _rule_delete, "delete an access rule")
    delete.add_argument("--subject", help="whose rule it is (needed only when several subjects have that rule id)")
    delete.add_argument("--rule-id", required=True)


def _app_and_connection_parsers(kinds: Any) -> None:
    app = _verbs(kinds, "app", "apps")
    put = _action(app, "put", _app_put, "create or replace an app")
    put.add_argument("app_id")
    put.add_argument("--name")
    put.add_argument("--description")
    put.add_argument("--authorize-url")

    connection = _verbs(kinds, "connection", "user connections")
    put = _action(connection, "put", _connection_put, "connect a user to an app")
    put.add_argument("user_id")
    put.add_argument("app_id")
    put.add_argument("--account")
    put.add_argument("--scope", action="append", default=[], help="a granted scope (repeatable)")
    put.add_argument("--disconnected", action="store_true", help="record the connection as not usable")
    delete = _action(connection, "delete", _connection_delete, "remove a connection")
    delete.add_argument("user_id")
    delete.add_argument("app_id")


def _key_parsers(kinds: Any) -> None:
    key = _verbs(kinds, "key", "API keys")
    create = _action(key, "create", _key_create, "create an API key (printed once) or register --key")
    create.add_argument("--key", help="register this key instead of generating one")
    create.add_argument("--key-id")
    create.add_argument("--gateway", help="limit the key to this gateway")
    create.add_argument("--description", default="")
    _action(key, "revoke", _key_revoke, "revoke a key (the key or its sha256)").add_argument("key")


def add_policy_parser(commands: Any, run: Callable[[argparse.Namespace], int]) -> None:
    policy = commands.add_parser("policy", help="write gateways, rules, apps, connections and API keys")
    add_backend_options(policy)
    policy.set_defaults(run=run, policy_reads=False)
    kinds = policy.add_subparsers(dest="policy_kind", required=True)
    _access_parsers(kinds)
    _app_and_connection_parsers(kinds)
    _key_parsers(kinds)
    _action(kinds, "create-tables", _create_tables, "create the DynamoDB tables (--dynamodb)")
    listing = _action(kinds, "list", _list, "one line per gateway, rule, app, connection and key")
    listing.set_defaults(policy_reads=True)
    listing.add_argument(
        "--index",
        help="the index this policy is for (default: ./index beside the policy file, else $TOOLREC_INDEX_LOCATION):"
        " each connection is checked against its tools as /v1/apps checks it",
    )
    _action(kinds, "show", _show, "the whole policy as JSON (keys as sha256 only)").set_defaults(policy_reads=True)
    check = _action(kinds, "check", _check, "name each pattern or pin that matches no tool of the index (exit 1)")
    check.add_argument("--index", help=INDEX_HELP)
    check.set_defaults(policy_reads=True)


def run_policy(args: argparse.Namespace, dynamodb_client: Any = None) -> int:
    from pydantic import ValidationError

    func: Action = args.policy_action
    try:
        print(func(args, open_writer(args, dynamodb_client)))
    except ValidationError as exc:
        problems = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        print(f"toolrec policy: {problems}", file=sys.stderr)
        return 2
    except PolicyCommandError as exc:
        print(f"toolrec policy: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0
