"""Anthropic's and OpenAI's APIs as an httpx2 MockTransport, for the official SDK clients (no network).

Each plays one scripted model turn per request: search for the task, call the first tool the search loaded with
the given inputs, then finish with the tool's output as text. Before answering, it holds the request to what the
real API requires of tool search, so a test fails where the real API would answer 400: every tool a valid SDK
type, names unique and allowed, at least one tool not deferred, and a search result that loads only declared
deferred tools.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2
import openai

from tests.support import provider_types

PROVIDER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _refuse(message: str) -> httpx2.Response:
    return httpx2.Response(400, json={"type": "error", "error": {"type": "invalid_request_error", "message": message}})


@dataclass
class _ScriptedModel:
    task: str
    inputs: dict[str, Any]
    requests: list[dict[str, Any]] = field(default_factory=list)
    called: list[str] = field(default_factory=list)  # the tools the model called, in order

    def transport(self) -> httpx2.MockTransport:
        return httpx2.MockTransport(self._answer)

    def _answer(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        try:
            return httpx2.Response(200, json=self.turn(body))
        except (AssertionError, ValueError) as exc:
            return _refuse(str(exc))

    def turn(self, body: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError


class ScriptedClaude(_ScriptedModel):
    """``POST /v1/messages``: tool_use of the search tool, then of the first referenced tool, then text."""

    def client(self) -> anthropic.Anthropic:
        return anthropic.Anthropic(api_key="test", max_retries=0, http_client=httpx2.Client(transport=self.transport()))

    def turn(self, body: dict[str, Any]) -> dict[str, Any]:
        tools = body["tools"]
        provider_types.anthropic_tools(tools)
        names = [t["name"] for t in tools]
        assert len(set(names)) == len(names) and all(PROVIDER_NAME.match(n) for n in names), "bad tool names"
        loaded = [t["name"] for t in tools if not t.get("defer_loading")]
        assert loaded, "at least one tool must not be deferred"
        last = body["messages"][-1]["content"]
        if isinstance(last, str):
            return self._message([self._use(loaded[0], {"task": self.task})], "tool_use")
        (result,) = last
        provider_types.anthropic_tool_result(result)
        blocks = [] if isinstance(result["content"], str) else result["content"]
        references = [b["tool_name"] for b in blocks if b["type"] == "tool_reference"]
        if references:
            assert set(references) <= set(names) - set(loaded), "tool_reference to a tool not declared deferred"
            return self._message([self._use(references[0], self.inputs)], "tool_use")
        return self._message([{"type": "text", "text": _text(result["content"])}], "end_turn")

    def _use(self, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
        self.called.append(name)
        return {"type": "tool_use", "id": f"toolu_{len(self.called)}", "name": name, "input": inputs}

    def _message(self, content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
        return {
            "id": f"msg_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": "scripted",
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }


class ScriptedGPT(_ScriptedModel):
    """``POST /v1/responses``: a client tool_search_call, then a function_call of the first loaded function, then
    a message."""

    def client(self) -> openai.OpenAI:
        return openai.OpenAI(api_key="test", max_retries=0, http_client=httpx2.Client(transport=self.transport()))

    def turn(self, body: dict[str, Any]) -> dict[str, Any]:
        tools = body["tools"]
        provider_types.openai_tools(tools)
        deferred = {t["name"] for t in tools[1:] if t.get("defer_loading")}
        last = body["input"][-1]
        kind = last.get("type", "message")
        if kind == "message":
            call = {"type": "tool_search_call", "id": "ts_1", "call_id": "call_search", "execution": "client"}
            return self._response([{**call, "arguments": {"task": self.task}, "status": "completed"}])
        if kind == "tool_search_output":
            provider_types.openai_tool_search_output(last)
            loaded = [t["name"] for t in last["tools"]]
            if not loaded:
                return self._response([self._say("no tool fits")])
            assert set(loaded) <= deferred, "tool_search_output loads a function that was not declared deferred"
            self.called.append(loaded[0])
            call = {"type": "function_call", "id": "fc_1", "call_id": "call_tool", "name": loaded[0]}
            return self._response([{**call, "arguments": json.dumps(self.inputs), "status": "completed"}])
        assert kind == "function_call_output", kind
        return self._response([self._say(last["output"])])

    def _say(self, text: str) -> dict[str, Any]:
        content = [{"type": "output_text", "text": text, "annotations": []}]
        return {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": content}

    def _response(self, output: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": f"resp_{len(self.requests)}",
            "object": "response",
            "created_at": 1795939200,
            "model": "scripted",
            "status": "completed",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content)
