"""Every REST request and response body, in one module: what the OpenAPI document is generated from.

Size limits live here (and in the OpenAPI schema): a request over them is a 400 validation_error, so
no caller can make one request cost unbounded embedding time.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator
from pydantic.json_schema import SkipJsonSchema

from handler.catalog.answer_budget import MAX_ANSWER_TOOL_BYTES
from handler.catalog.tool import Tool
from handler.ranking.explain import NoMatchWhy, Why
from handler.services.apps import MAX_PENDING_LISTED
from handler.services.execution import Execution
from handler.services.select import SCORE_DECIMALS, Suggestion, TaskResult
from handler.services.usage import Usage

MAX_TASKS = 16
MAX_TASK_CHARS = 1_000
MAX_CONTEXT_CHARS = 4_000
MAX_BODY_BYTES = 64 * 1024
SELECT_TOP_K_DEFAULT, SELECT_TOP_K_MAX = 5, 20
SEARCH_TOP_K_DEFAULT, SEARCH_TOP_K_MAX = 10, 50
APPS_LIMIT_DEFAULT, APPS_LIMIT_MAX = 50, 200
USAGE_DAYS_DEFAULT, USAGE_DAYS_MAX = 14, 90
# A Lambda answer holds at most 6 MB: a page of 1,000 arcade tools is ~0.8 MB (~0.7 KB a tool), and a page also
# ends at the answer's byte budget (handler/catalog/answer_budget.py).
PROVIDER_TOOLS_LIMIT_DEFAULT, PROVIDER_TOOLS_LIMIT_MAX = 500, 1000
MAX_ID_CHARS = 256  # user, gateway, tool and query ids; the MCP user header too (handler/mcp/route.py)

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TASK_CHARS)]
Identifier = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_ID_CHARS)]
# Strict: pydantic's lax mode reads JSON `true` as 1 and "5" as 5 (issue 15); a count is a JSON integer.
Count = Annotated[int, Field(strict=True, ge=1)]
Score = Annotated[float, Field(strict=True, ge=0.0, le=1.0, allow_inf_nan=False)]  # a JSON number, never `true`
# A field left out of the answer, not sent as null, where it does not apply (`why` without explain): the document
# lists it as optional, never as nullable.
Absent = SkipJsonSchema[None]


def _absent(value: object) -> bool:
    return value is None


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Selecting(_Request):
    """What every select request carries beside its tasks: REST select and the providers' searches alike."""

    context: str | None = Field(default=None, max_length=MAX_CONTEXT_CHARS, description="helps ranking")
    user_id: Identifier = Field(description="the end user the service acts for")
    gateway_id: Identifier | None = Field(default=None, description="consider only the tools this gateway allows")
    top_k: Count = Field(
        default=SELECT_TOP_K_DEFAULT, description=f"suggestions per task; above {SELECT_TOP_K_MAX} returns that"
    )
    min_score: Score | None = Field(
        default=None,
        description="drop suggestions whose score is below this (0 to 1); without it, the gateway's floor, if any",
    )

    @field_validator("top_k")
    @classmethod
    def _clamp(cls, value: int) -> int:
        return min(value, SELECT_TOP_K_MAX)


class SelectRequest(_Selecting):
    tasks: list[Text] = Field(
        min_length=1, max_length=MAX_TASKS, description="one entry per separate action, e.g. 'send a Slack message'"
    )
    explain: bool = Field(
        default=False,
        strict=True,
        description="add `why` to each suggestion and to each no_match: for people checking a catalog, not agents",
    )


class SearchRequest(_Request):
    query: Text = Field(description="keywords matched against tool names and first description lines (BM25)")
    user_id: Identifier
    gateway_id: Identifier | None = None
    top_k: Count = Field(default=SEARCH_TOP_K_DEFAULT, description=f"results; above {SEARCH_TOP_K_MAX} returns that")

    @field_validator("top_k")
    @classmethod
    def _clamp(cls, value: int) -> int:
        return min(value, SEARCH_TOP_K_MAX)


class WordWeight(BaseModel):
    word: str = Field(description="a word of the request, as written, that the tool's name or first line holds")
    weight: float = Field(description="its share of the tool's keyword (BM25) score")


class UsageWhy(BaseModel):
    """What the tenant's past use did to a suggestion (PRODUCT.md §6); each part absent where it did nothing."""

    past_tasks: float | Absent = Field(
        default=None, exclude_if=_absent, description="how far its past tasks raised its similarity (a cosine)"
    )
    classifier: float | Absent = Field(
        default=None,
        exclude_if=_absent,
        description="the usage classifier's vote added to its ranking score (a first place in one signal is 1/6)",
    )
    companions: float | Absent = Field(
        default=None, exclude_if=_absent, description="the votes added for being run beside the best tools"
    )


class SuggestionWhy(BaseModel):
    words: list[WordWeight] = Field(description="the request's words the tool holds, heaviest first")
    similarity: float = Field(description="the tool's meaning similarity with the task (cosine, -1 to 1)")
    named: bool = Field(description="the task is this tool's name: it ranks first and is never refused")
    usage: UsageWhy | Absent = Field(default=None, exclude_if=_absent, description="absent: usage moved nothing")
    step: str | Absent = Field(
        default=None, exclude_if=_absent, description="the part of a compound task it serves; absent for one step"
    )
    app_named: str | Absent = Field(
        default=None,
        exclude_if=_absent,
        description="its app, which the task (or its step) names: put ahead of other apps' tools; absent: not named",
    )

    @classmethod
    def of(cls, why: Why) -> SuggestionWhy:
        if why.similarity is None:  # select always embeds the task; only BM25 search would lack it
            raise ValueError("a select suggestion always has a similarity")
        usage = why.usage
        return cls(
            words=[WordWeight(word=w.word, weight=round(w.weight, 4)) for w in why.words],
            similarity=round(why.similarity, 4),
            named=why.named,
            usage=None
            if usage is None
            else UsageWhy(
                past_tasks=usage.past_tasks or None,
                classifier=usage.classifier or None,
                companions=usage.companions or None,
            ),
            step=why.step,
            app_named=why.app_named,
        )


class NoMatchExplanation(BaseModel):
    best_cosine: float | None = Field(description="the best similarity of any tool the user may use; null: none")
    refusal_below: float | None = Field(
        description="the catalog's refusal: a task whose best_cosine is below it gets no tool; null: never refused"
    )
    best_score: float | Absent = Field(
        default=None, exclude_if=_absent, description="where tools fit but min_score dropped them: the best score"
    )
    min_score: float | Absent = Field(
        default=None, exclude_if=_absent, description="the floor that dropped them (the request's or the gateway's)"
    )

    @classmethod
    def of(cls, why: NoMatchWhy) -> NoMatchExplanation:
        best = None if why.best_cosine is None else round(why.best_cosine, 4)
        score = None if why.best_score is None else round(why.best_score, 4)
        return cls(best_cosine=best, refusal_below=why.refusal_below, best_score=score, min_score=why.min_score)


class ToolSuggestion(BaseModel):
    tool_name: str = Field(description="App.ToolName, exactly as the agent calls it")
    description: str
    input_schema: dict[str, Any] = Field(description="JSON Schema of the tool's input")
    score: float | None = Field(
        description="the calibrated probability (0 to 1) that this tool is a right one for the task; never rises "
        "down the list. null in search results: keyword ranking is not calibrated"
    )
    step: str | Absent = Field(
        default=None,
        exclude_if=_absent,
        description="for a task with several steps, the part of the task's text this tool serves; absent when the "
        "task is one step",
    )
    why: SuggestionWhy | Absent = Field(
        default=None, exclude_if=_absent, description="why it was suggested: only when the select asks (explain)"
    )

    @classmethod
    def of(
        cls, tool: Tool, score: float | None = None, step: str | None = None, why: SuggestionWhy | None = None
    ) -> ToolSuggestion:
        return cls(
            tool_name=tool.name,
            description=tool.description,
            input_schema=tool.input_schema,
            score=score,
            step=step,
            why=why,
        )

    @classmethod
    def suggested(cls, suggestion: Suggestion) -> ToolSuggestion:
        why = None if suggestion.why is None else SuggestionWhy.of(suggestion.why)
        return cls.of(suggestion.tool, round(suggestion.score, SCORE_DECIMALS), suggestion.step, why)


class TaskSuggestions(BaseModel):
    task: str
    suggestions: list[ToolSuggestion] = Field(description="best first; empty when no usable tool matches the task")
    empty_reason: Literal["no_match", "below_min_score", "nothing_allowed"] | None = Field(
        default=None,
        description="why suggestions is empty: no tool the user may use fits (no_match), tools fit but none reached "
        "min_score or the gateway's floor (below_min_score), or this user under this gateway may use no tool at all "
        "(nothing_allowed); absent when there are suggestions",
    )
    why: NoMatchExplanation | Absent = Field(
        default=None, exclude_if=_absent, description="what a no_match compared: only when the select asks (explain)"
    )

    @classmethod
    def of(cls, result: TaskResult) -> TaskSuggestions:
        reason = result.empty_reason
        if reason == "unavailable":  # REST fails the whole request instead (PRODUCT.md §2)
            raise ValueError("REST never answers a task as unavailable")
        why = None if result.why is None else NoMatchExplanation.of(result.why)
        return cls(task=result.task, suggestions=[ToolSuggestion.suggested(s) for s in result.suggestions],
                   empty_reason=reason, why=why)  # fmt: skip


class SelectResponse(BaseModel):
    query_id: str = Field(description="identifies this recommendation; pass it to execute to link the call")
    results: list[TaskSuggestions] = Field(description="one entry per task, in the order sent")


class SearchResponse(BaseModel):
    results: list[ToolSuggestion]


class PendingTool(BaseModel):
    tool_name: str
    app_id: str = Field(description="the app the user must authorize for this tool")
    missing_scopes: list[str] = Field(description="required scopes the connection lacks (all of them without one)")


class AppSummary(BaseModel):
    app_id: str
    name: str
    description: str = ""
    tool_count: int = Field(description="tools of this app the user may use")
    connected: bool = Field(
        description="the user can call every one of the app's tools they may use without authorizing first"
    )
    account: str | None = Field(default=None, description="the account of the user's live connection, if any")
    permissions: list[str] = Field(default=[], description="scopes that connection grants")
    authorize_url: str | None = Field(default=None, description="where the user connects the app")
    needs_authorization: list[PendingTool] = Field(
        default=[],
        description="tools of this app the user may use that cannot run until the user authorizes "
        f"(the first {MAX_PENDING_LISTED} by name); empty when connected",
    )
    needs_authorization_count: int = Field(default=0, description="how many tools need authorization in all")


class AppsResponse(BaseModel):
    apps: list[AppSummary]
    total: int = Field(description="apps the user can act on, across all pages")
    limit: int
    offset: int


class UsageDay(BaseModel):
    date: str = Field(description="a UTC day, YYYY-MM-DD")
    recommendations: int = Field(description="select requests logged that day")
    executions: int = Field(description="executions linked to a select (by query_id) that day")


class ToolRuns(BaseModel):
    tool_name: str
    runs: int = Field(description="linked executions of the tool in the window")
    succeeded: int = Field(description="... whose outcome was ok")


class UsageResponse(BaseModel):
    days: list[UsageDay] = Field(description="one per UTC day of the window, oldest first, days without use included")
    gateway_id: str | None = Field(description="the gateway whose records these are; null: every gateway's")
    user_id: str | None = Field(description="the user whose records these are; null: every user's")
    recommendations: int = Field(description="select requests logged in the window")
    tasks: int = Field(description="the tasks those requests held")
    recommendations_followed: int = Field(description="of those requests, the ones with at least one linked run")
    follow_rate: float | None = Field(description="recommendations_followed / recommendations; null when none")
    executions: int = Field(description="executions linked to a select, in the window")
    top_tools: list[ToolRuns] = Field(description="the tools most run, most first (at most 10)")
    truncated: bool = Field(description="the query log held more records than one view reads: the counts are a part")

    @classmethod
    def of(cls, usage: Usage, gateway_id: str | None, user_id: str | None) -> UsageResponse:
        return cls(
            days=[UsageDay(date=d.day.isoformat(), recommendations=d.recommendations, executions=d.executions)
                  for d in usage.days],
            gateway_id=gateway_id,
            user_id=user_id,
            recommendations=usage.recommendations,
            tasks=usage.tasks,
            recommendations_followed=usage.recommendations_followed,
            follow_rate=usage.follow_rate,
            executions=usage.executions,
            top_tools=[ToolRuns(tool_name=t.tool_name, runs=t.runs, succeeded=t.succeeded) for t in usage.top_tools],
            truncated=usage.truncated,
        )  # fmt: skip


class HealthResponse(BaseModel):
    status: Literal["ok", "unavailable"]
    build_id: str | None = None
    tool_count: int = 0
    reason: str | None = Field(default=None, description="why no index is loaded")
    catalog_built_at: str | None = Field(default=None, description="when the served build was made (ISO 8601, UTC)")
    catalog_age_seconds: float | None = Field(default=None, description="seconds since catalog_built_at")
    policy_unknown_names: list[UnknownPolicyName] = Field(
        default_factory=list,
        description="patterns and pins of the policy that match no tool or app of the served build: a misspelled "
        "deny denies nothing (PRODUCT.md §4)",
    )


class UnknownPolicyName(BaseModel):
    record: str = Field(description="where the name is written: 'gateway ID' or 'access rule ID'")
    field: str = Field(description="allowed, pinned or tools")
    name: str = Field(description="the pattern or pin as written")
    nearest: str | None = Field(default=None, description="the nearest name the served build holds")


class FieldError(BaseModel):
    field: str
    message: str


class ErrorBody(BaseModel):
    name: str = Field(description="validation_error, unauthorized, forbidden, not_found, service_unavailable, ...")
    message: str
    field_errors: list[FieldError] | None = None


class ExecuteRequest(_Request):
    tool_name: Identifier = Field(description="App.ToolName, as select returned it")
    input: dict[str, Any] = Field(default_factory=dict, description="the tool's arguments, per its input_schema")
    user_id: Identifier = Field(description="the end user the call is made for")
    query_id: Identifier | None = Field(default=None, description="the select query that surfaced the tool")


class ExecutionErrorBody(BaseModel):
    name: str = Field(description="tool_error, executor_timeout, executor_unavailable")
    message: str


class ExecuteResponse(BaseModel):
    execution_id: str
    tool_name: str
    success: bool = Field(description="false when the tool failed, timed out, or could not be reached")
    output: Any = Field(default=None, description="the tool's output, when success")
    error: ExecutionErrorBody | None = Field(default=None, description="why it failed, when not success")
    duration_ms: float = Field(description="time spent in the executor")

    @classmethod
    def of(cls, execution: Execution) -> ExecuteResponse:
        error = None
        if not execution.success:
            name, message = execution.error_name or "execution_failed", execution.error_message or ""
            error = ExecutionErrorBody(name=name, message=message)
        return cls(
            execution_id=execution.execution_id,
            tool_name=execution.tool_name,
            success=execution.success,
            output=execution.output,
            error=error,
            duration_ms=execution.duration_ms,
        )


# Model providers' tool search (PRODUCT.md §7): the shapes their APIs read, field for field (handler/providers/).
class AnthropicSearchRequest(_Selecting):
    task: Text = Field(description="the `task` the model passed to the search tool")
    tool_use_id: Identifier = Field(description="the id of the model's tool_use block that asked for the search")


class OpenAISearchRequest(_Selecting):
    task: Text = Field(description="the `task` in the arguments of the model's tool_search_call")
    call_id: Identifier = Field(description="the call_id of the model's tool_search_call")


ListedName = Annotated[str, Field(description="the tool's listed name (App_ToolName); execute accepts it as is")]


class AnthropicTool(BaseModel):
    name: ListedName
    description: str
    input_schema: dict[str, Any]
    defer_loading: bool = Field(description="true for every catalog tool: loaded only when a search returns it")


class ToolReference(BaseModel):
    type: Literal["tool_reference"]
    tool_name: str


class TextContent(BaseModel):
    type: Literal["text"]
    text: str


class AnthropicToolResult(BaseModel):
    type: Literal["tool_result"]
    tool_use_id: str
    content: list[Annotated[ToolReference | TextContent, Field(discriminator="type")]] = Field(
        description="one tool_reference per tool found, best first; one text block saying so when none fits"
    )


class _ToolsPage(BaseModel):
    total: int = Field(description="tools the user may use, across all pages")
    limit: int = Field(
        description=f"the most tools a page holds; it ends early at {MAX_ANSWER_TOOL_BYTES // 2**20} MiB of tools"
    )
    offset: int = Field(description="where this page starts; the next starts at offset + the tools it holds")


class AnthropicToolsResponse(_ToolsPage):
    search_tool: AnthropicTool = Field(description="the first of the request's `tools`, not deferred")
    tools: list[AnthropicTool] = Field(description="a page of the tools the user may use, deferred, catalog order")


class ScoredTool(BaseModel):
    tool_name: ListedName
    score: float = Field(description="the calibrated probability (0 to 1) that the tool is a right one for the task")


class _ProviderSearch(BaseModel):
    query_id: str = Field(description="identifies this recommendation; pass it to execute to link the call")
    scores: list[ScoredTool] = Field(
        description="each tool found, best first, with its score: for the application, not to send to the model"
    )
    empty_reason: Literal["no_match", "below_min_score", "nothing_allowed"] | None = Field(
        default=None, description="why nothing was found, as in /v1/tools/select; absent when tools were"
    )


class AnthropicSearchResponse(_ProviderSearch):
    tool_result: AnthropicToolResult = Field(description="the content block to answer the search's tool_use with")


class OpenAIFunctionTool(BaseModel):
    type: Literal["function"]
    name: ListedName
    description: str
    parameters: dict[str, Any]
    strict: bool = Field(description="false: catalog schemas are not written for OpenAI's strict mode")
    defer_loading: bool


class OpenAIToolSearchTool(BaseModel):
    type: Literal["tool_search"]
    execution: Literal["client"]
    description: str
    parameters: dict[str, Any]


class OpenAIToolSearchOutput(BaseModel):
    type: Literal["tool_search_output"]
    execution: Literal["client"]
    call_id: str
    status: Literal["completed"]
    tools: list[OpenAIFunctionTool] = Field(description="the functions found, best first; empty when none fits")


class OpenAIToolsResponse(_ToolsPage):
    search_tool: OpenAIToolSearchTool = Field(description="the first of the request's `tools`")
    tools: list[OpenAIFunctionTool] = Field(description="a page of the tools the user may use, deferred, catalog order")


class OpenAISearchResponse(_ProviderSearch):
    tool_search_output: OpenAIToolSearchOutput = Field(description="the input item that answers the search call")
