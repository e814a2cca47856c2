// The toolrec console (PRODUCT.md §8): calls this service's own API with the key typed here, so it can do nothing
// the key cannot. Every text that comes from the catalog or the API is set as text (textContent, text nodes), never
// parsed as markup: no string here ever becomes HTML. The key stays in this page's memory, or in session storage
// when asked to, and only ever travels in the Authorization header, never in a URL.
"use strict";

(function () {
  const KEY_STORAGE = "toolrec.console.apiKey";
  const SVG = "http://www.w3.org/2000/svg";
  const state = { queryId: null, tool: null, fields: [] };

  const $ = (id) => document.getElementById(id);

  // An element with a class and children; strings become text nodes (never markup).
  function el(tag, className, ...children) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function svg(tag, attributes, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  class ApiError extends Error {
    constructor(status, body) {
      const name = body && body.name ? body.name : `HTTP ${status}`;
      super(body && body.message ? `${name}: ${body.message}` : name);
      this.status = status;
      this.body = body || {};
    }
  }

  // --- the key -----------------------------------------------------------------------------------------------
  function apiKey() {
    return $("api-key").value.trim();
  }

  function keepKey() {
    if ($("remember-key").checked && apiKey()) sessionStorage.setItem(KEY_STORAGE, apiKey());
    else sessionStorage.removeItem(KEY_STORAGE);
  }

  async function api(method, path, body) {
    const key = apiKey();
    if (!key) throw new Error("enter an API key first (toolrec serve printed one)");
    const init = { method, headers: { Authorization: `Bearer ${key}` }, credentials: "omit", cache: "no-store" };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init); // relative: the API beside this page, whatever its base path
    let data = null;
    try {
      data = await response.json();
    } catch (_) {
      data = null;
    }
    if (!response.ok) throw new ApiError(response.status, data);
    return data;
  }

  function setStatus(id, text, isError) {
    const node = $(id);
    node.textContent = text;
    node.classList.toggle("error", Boolean(isError));
  }

  async function busy(button, work) {
    button.disabled = true;
    try {
      await work();
    } finally {
      button.disabled = false;
    }
  }

  function gatewayId() {
    return $("gateway-id").value.trim() || null;
  }

  function userId() {
    return $("user-id").value.trim();
  }

  // --- select ------------------------------------------------------------------------------------------------
  async function select() {
    const tasks = $("tasks").value.split("\n").map((t) => t.trim()).filter((t) => t);
    if (!tasks.length) return setStatus("select-status", "type at least one task", true);
    if (!userId()) return setStatus("select-status", "name a user: select acts for one", true);
    const body = { tasks, user_id: userId(), top_k: Number($("top-k").value) || 5, explain: true };
    if (gatewayId()) body.gateway_id = gatewayId();
    setStatus("select-status", "selecting...");
    let answer;
    try {
      answer = await api("POST", "v1/tools/select", body);
    } catch (error) {
      // A service without `explain` refuses the field by name: ask again without it rather than fail.
      if (!(error instanceof ApiError) || !fieldNamed(error, "explain")) throw error;
      delete body.explain;
      answer = await api("POST", "v1/tools/select", body);
    }
    state.queryId = answer.query_id;
    renderResults(answer.results);
    const count = answer.results.reduce((n, r) => n + r.suggestions.length, 0);
    const tasksSent = answer.results.length;
    const said = `${plural(count, "suggestion")} for ${plural(tasksSent, "task")} (query ${answer.query_id})`;
    setStatus("select-status", said);
  }

  function plural(count, noun) {
    return `${count} ${noun}${count === 1 ? "" : "s"}`;
  }

  function fieldNamed(error, field) {
    return (error.body.field_errors || []).some((e) => e.field === field);
  }

  function renderResults(results) {
    const holder = $("results");
    holder.replaceChildren();
    for (const result of results) {
      const task = el("div", "task", el("h3", null, result.task));
      if (!result.suggestions.length) {
        task.append(el("p", "empty", `no suggestions: ${result.empty_reason || "none"}`));
      }
      for (const suggestion of result.suggestions) task.append(renderSuggestion(suggestion));
      if (result.why !== undefined) task.append(renderWhy(result.why));
      holder.append(task);
    }
  }

  function renderSuggestion(suggestion) {
    const open = el("button", "secondary open-tool", "Schema & run");
    open.type = "button";
    open.addEventListener("click", () => openTool(suggestion));
    const row = el(
      "div",
      "suggestion",
      el("span", "tool-name", suggestion.tool_name),
      scoreBar(suggestion.score),
      open,
      el("p", "description", firstLine(suggestion.description)),
    );
    row.dataset.tool = suggestion.tool_name;
    if (suggestion.step !== undefined && suggestion.step !== null) {
      row.append(el("p", "step", "step: ", el("q", null, String(suggestion.step))));
    }
    if (suggestion.why !== undefined && suggestion.why !== null) row.append(renderWhy(suggestion.why));
    return row;
  }

  function scoreBar(score) {
    const fill = el("span");
    const known = typeof score === "number";
    fill.style.width = `${known ? Math.round(Math.max(0, Math.min(1, score)) * 100) : 0}%`;
    const bar = el("div", "bar", fill);
    bar.title = known ? `score ${score}` : "not calibrated";
    return el("div", "score", bar, el("span", "score-value", known ? score.toFixed(2) : "n/a"));
  }

  function firstLine(text) {
    return String(text || "").split("\n")[0];
  }

  // `why` as a small key/value view, whatever its shape: nested objects nest, lists of plain values join.
  function renderWhy(why) {
    return el("details", "why", el("summary", null, "why"), keyValues(why));
  }

  function keyValues(value) {
    if (value === null || typeof value !== "object") return el("span", null, String(value));
    if (Array.isArray(value)) {
      if (!value.length) return el("span", null, "none");
      if (value.every((v) => v === null || typeof v !== "object")) return el("span", null, value.join(", "));
      return el("span", null, value.map((v) => JSON.stringify(v)).join("\n"));
    }
    const list = el("dl");
    for (const [key, item] of Object.entries(value)) list.append(el("dt", null, key), el("dd", null, keyValues(item)));
    return list;
  }

  // --- one tool: its schema and a form made from it ----------------------------------------------------------
  function openTool(suggestion) {
    state.tool = suggestion;
    $("tool").hidden = false;
    $("tool-name").textContent = suggestion.tool_name;
    $("tool-description").textContent = suggestion.description;
    $("tool-schema").textContent = JSON.stringify(suggestion.input_schema, null, 2);
    $("run-output").hidden = true;
    setStatus("run-status", "");
    state.fields = buildFields(suggestion.input_schema || {});
    $("tool-fields").replaceChildren(...state.fields.map((f) => f.node));
    $("tool").scrollIntoView({ block: "start" });
  }

  function buildFields(schema) {
    const properties = schema && typeof schema.properties === "object" ? schema.properties : null;
    if (!properties) {
      // No properties to draw: the whole input as one JSON object.
      return [makeField("", { type: "object", description: "the tool's whole input, as a JSON object" }, false)];
    }
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    return Object.entries(properties).map(([name, prop]) => makeField(name, prop || {}, required.has(name)));
  }

  function kindOf(prop) {
    const plain = (v) => v === null || ["string", "number", "boolean"].includes(typeof v);
    if (Array.isArray(prop.enum) && prop.enum.every(plain)) return "enum";
    let type = prop.type;
    if (Array.isArray(type)) type = type.find((t) => t !== "null");
    if (["string", "number", "integer", "boolean"].includes(type)) return type;
    return "json";
  }

  function makeField(name, prop, required) {
    const kind = kindOf(prop);
    let control;
    if (kind === "enum" || kind === "boolean") {
      const choices = kind === "enum" ? prop.enum : [true, false];
      control = el("select", null, el("option", null, required ? "(choose)" : "(not set)"));
      choices.forEach((choice, i) => {
        const option = el("option", null, JSON.stringify(choice));
        option.value = String(i);
        control.append(option);
      });
      control.firstChild.value = "";
      control.choices = choices;
    } else if (kind === "json") {
      control = el("textarea");
      control.rows = 3;
      control.placeholder = `JSON ${prop.type === "array" ? "array" : "value"}`;
    } else {
      control = el("input");
      control.type = kind === "string" ? "text" : "number";
      if (kind !== "string") control.step = kind === "integer" ? "1" : "any";
    }
    control.dataset.kind = kind;
    const type = Array.isArray(prop.type) ? prop.type.join(" | ") : prop.type || kind;
    const label = el("label", null, name || "input", required ? " *" : "", el("span", "hint", ` (${type})`), control);
    const error = el("p", "field-error");
    error.hidden = true;
    const node = el("div", "field", label);
    if (prop.description) node.append(el("p", "hint", String(prop.description)));
    node.append(error);
    node.dataset.field = name;
    return { name, kind, control, node, error };
  }

  function fieldValue(field) {
    const raw = field.control.value;
    if (raw === "" || raw === undefined) return undefined;
    if (field.kind === "enum" || field.kind === "boolean") return field.control.choices[Number(raw)];
    if (field.kind === "number" || field.kind === "integer") return Number(raw);
    if (field.kind === "json") {
      try {
        return JSON.parse(raw);
      } catch (problem) {
        throw new FieldProblem(field, `is not valid JSON (${problem.message})`);
      }
    }
    return raw;
  }

  class FieldProblem extends Error {
    constructor(field, message) {
      super(message);
      this.field = field;
    }
  }

  function clearFieldErrors() {
    for (const field of state.fields) {
      field.error.hidden = true;
      field.error.textContent = "";
      field.node.classList.remove("invalid");
    }
  }

  function showFieldError(field, message) {
    field.error.hidden = false;
    field.error.textContent = field.error.textContent ? `${field.error.textContent}; ${message}` : message;
    field.node.classList.add("invalid");
  }

  // The form field a server-side field error names: "days", "input.days", "filters.0.name" -> "filters".
  function fieldFor(name) {
    const path = String(name).replace(/^input\./, "");
    const top = path.split(/[.[]/)[0];
    return state.fields.find((f) => f.name === path) || state.fields.find((f) => f.name === top) || null;
  }

  function collectInput() {
    let input = {};
    const problems = [];
    for (const field of state.fields) {
      try {
        const value = fieldValue(field);
        if (value === undefined) continue;
        if (field.name === "") input = value;
        else input[field.name] = value;
      } catch (problem) {
        if (!(problem instanceof FieldProblem)) throw problem;
        problems.push(problem);
      }
    }
    return { input, problems };
  }

  async function run() {
    if (!state.tool) return;
    clearFieldErrors();
    $("run-output").hidden = true;
    const { input, problems } = collectInput();
    if (problems.length) {
      problems.forEach((p) => showFieldError(p.field, p.message));
      return setStatus("run-status", "fix the fields marked below", true);
    }
    const body = { tool_name: state.tool.tool_name, input, user_id: userId() };
    if (state.queryId) body.query_id = state.queryId;
    setStatus("run-status", "running...");
    let answer;
    try {
      answer = await api("POST", "v1/tools/execute", body);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      const unplaced = [];
      for (const problem of error.body.field_errors || []) {
        const field = fieldFor(problem.field);
        if (field) showFieldError(field, problem.message);
        else unplaced.push(`${problem.field}: ${problem.message}`);
      }
      return setStatus("run-status", [error.message, ...unplaced].join(" | "), true);
    }
    const output = $("run-output");
    output.hidden = false;
    if (answer.success) {
      setStatus("run-status", `ran in ${answer.duration_ms.toFixed(0)} ms`);
      output.textContent = JSON.stringify(answer.output, null, 2);
    } else {
      setStatus("run-status", `did not run: ${answer.error.name}: ${answer.error.message}`, true);
      output.textContent = JSON.stringify(answer, null, 2);
    }
  }

  // --- usage -------------------------------------------------------------------------------------------------
  async function usage() {
    const params = new URLSearchParams({ days: String(Number($("usage-days").value) || 14) });
    if (gatewayId()) params.set("gateway_id", gatewayId());
    setStatus("usage-status", "reading the query log...");
    const view = await api("GET", `v1/usage?${params}`);
    renderUsage(view);
    const scope = view.gateway_id ? `gateway ${view.gateway_id}` : "every gateway";
    const note = view.truncated ? "; the log held more records than one view reads, so these are a part" : "";
    setStatus("usage-status", `the last ${view.days.length} days, ${scope}${note}`);
  }

  function renderUsage(view) {
    const rate = view.follow_rate === null ? "n/a" : `${Math.round(view.follow_rate * 100)}%`;
    const stat = (label, value) => el("div", "stat", el("strong", null, String(value)), label);
    $("usage-summary").replaceChildren(
      el(
        "div",
        "summary",
        stat("recommendations", view.recommendations),
        stat("tasks", view.tasks),
        stat("runs after a recommendation", view.executions),
        stat("recommendations that led to a run", rate),
      ),
    );
    $("usage-chart").replaceChildren(
      dayChart(view.days),
      el("div", "legend", legend("rec", "recommendations"), legend("exe", "runs")),
    );
    const most = Math.max(1, ...view.top_tools.map((t) => t.runs));
    const rows = view.top_tools.map((tool) => {
      const fill = el("span");
      fill.style.width = `${Math.round((tool.runs / most) * 100)}%`;
      return el("div", "top-tool", el("span", "tool-name", tool.tool_name), el("div", "bar", fill), el("span", null, `${tool.runs}`));
    });
    $("usage-tools").replaceChildren(
      el("h3", null, "Tools most run"),
      ...(rows.length ? rows : [el("p", "empty", "no runs linked to a recommendation yet")]),
    );
  }

  function legend(kind, text) {
    return el("span", null, el("span", `swatch ${kind}`), text);
  }

  // Recommendations and runs per day as grouped bars, drawn as SVG elements (no library, no markup strings).
  function dayChart(days) {
    const width = 900, height = 220, left = 36, bottom = 24, top = 10;
    const plotWidth = width - left - 8, plotHeight = height - top - bottom;
    const most = Math.max(1, ...days.map((d) => Math.max(d.recommendations, d.executions)));
    const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "usage per day" });
    chart.append(svg("title", {}, "recommendations and runs per day"));
    for (const tick of [0, Math.ceil(most / 2), most]) {
      const y = top + plotHeight - (tick / most) * plotHeight;
      chart.append(svg("line", { class: "axis", x1: left, x2: width - 8, y1: y, y2: y }));
      chart.append(svg("text", { x: left - 6, y: y + 4, "text-anchor": "end" }, String(tick)));
    }
    const slot = plotWidth / days.length;
    const barWidth = Math.max(2, Math.min(18, slot / 2 - 2));
    const labelEvery = Math.ceil(days.length / 14);
    days.forEach((day, i) => {
      const x = left + i * slot + slot / 2;
      const bars = [["rec", day.recommendations, x - barWidth - 1], ["exe", day.executions, x + 1]];
      for (const [kind, value, barX] of bars) {
        const barHeight = (value / most) * plotHeight;
        const rect = svg("rect", { class: kind, x: barX, y: top + plotHeight - barHeight, width: barWidth, height: barHeight });
        rect.append(svg("title", {}, `${day.date}: ${value} ${kind === "rec" ? "recommendations" : "runs"}`));
        chart.append(rect);
      }
      if (i % labelEvery === 0 || i === days.length - 1) {
        chart.append(svg("text", { x, y: height - 6, "text-anchor": "middle" }, day.date.slice(5)));
      }
    });
    return chart;
  }

  // --- wiring ------------------------------------------------------------------------------------------------
  function on(formId, buttonId, statusId, work) {
    $(formId).addEventListener("submit", (event) => {
      event.preventDefault();
      busy($(buttonId), work).catch((error) => setStatus(statusId, error.message, true));
    });
  }

  function start() {
    const kept = sessionStorage.getItem(KEY_STORAGE);
    if (kept) {
      $("api-key").value = kept;
      $("remember-key").checked = true;
    }
    $("api-key").addEventListener("input", keepKey);
    $("remember-key").addEventListener("change", keepKey);
    $("who-form").addEventListener("submit", (event) => event.preventDefault());
    on("select-form", "select-button", "select-status", select);
    on("tool-form", "run-button", "run-status", run);
    on("usage-form", "usage-button", "usage-status", usage);
    document.body.dataset.ready = "true"; // for the browser tests: the script ran and wired the page
  }

  start();
})();
