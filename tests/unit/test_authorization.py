"""The one rule for "can run without authorizing first" (handler/policy/authorization.py), used by execute and apps."""

from __future__ import annotations

from handler.catalog.tool import Requirements, Tool
from handler.policy.authorization import authorization_app, missing_authorization
from handler.policy.model import Connection


def _tool(requirements: Requirements | None, app: str = "Slack") -> Tool:
    return Tool(name=f"{app}.Do", description="d", input_schema={"type": "object"}, app=app, requirements=requirements)


def _connection(scopes: tuple[str, ...], connected: bool = True, app_id: str = "Slack") -> Connection:
    return Connection(user_id="u", app_id=app_id, connected=connected, scopes=scopes)


def test_a_tool_without_requirements_runs_without_any_connection() -> None:
    for requirements in (None, Requirements()):
        assert authorization_app(_tool(requirements)) is None
        assert missing_authorization(_tool(requirements), []) is None


def test_a_connection_must_be_live_and_grant_every_required_scope() -> None:
    tool = _tool(Requirements(authorization="Slack", scopes=("chat:write", "reactions:write")))
    assert missing_authorization(tool, [_connection(("chat:write", "reactions:write", "extra"))]) is None
    partial = missing_authorization(tool, [_connection(("chat:write",))])
    assert partial is not None and (partial.app_id, partial.missing_scopes, partial.connected) == (
        "Slack",
        ("reactions:write",),
        True,
    )
    for connections in ([], [_connection(("chat:write", "reactions:write"), connected=False)]):
        none = missing_authorization(tool, connections)
        assert none is not None and (none.missing_scopes, none.connected) == (("chat:write", "reactions:write"), False)


def test_the_connection_is_matched_to_the_app_the_requirement_names_ignoring_case() -> None:
    tool = _tool(Requirements(authorization="google", scopes=("drive",)), app="Docs")
    assert authorization_app(tool) == "google"
    assert missing_authorization(tool, [_connection(("drive",), app_id="Docs")]) is not None
    assert missing_authorization(tool, [_connection(("drive",), app_id="Google")]) is None


def test_scopes_without_a_named_app_need_a_connection_to_the_tools_own_app() -> None:
    tool = _tool(Requirements(scopes=("chat:write",)))
    assert authorization_app(tool) == "Slack"
    assert missing_authorization(tool, []) is not None
    assert missing_authorization(tool, [_connection(("chat:write",))]) is None
