"""The console (PRODUCT.md §8) in a real browser: headless Chromium on a real `toolrec serve` (a subprocess on
127.0.0.1) over a small catalog whose forecast tool runs on a real HTTP worker. A person's path through the page:
the key, a select of two tasks, a tool's form, its run, its field errors, and the usage chart; then a catalog
description made of markup, which must show as text and run nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.wait import WebDriverWait

from build_index.ops.loopback import serve_subprocess
from handler.catalog.tool import Executor, Tool
from handler.inference.embedder import OnnxEmbedder
from tests.support.servers import serve
from tests.support.serving import API_KEY, publish_tools, write_test_policy
from tests.support.workers import http_worker_app

# A description that is markup: shown as text, it runs nothing; parsed as HTML, either part would set the flag.
XSS = (
    'Create a note in the notebook <script>window.__xss = "script"</script><img src=x onerror="window.__xss = \'img\'">'
)
WAIT_S = 20


def catalog(worker: str) -> list[Tool]:
    forecast_schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "city name"},
            "days": {"type": "integer", "minimum": 1, "maximum": 10, "description": "days ahead"},
            "units": {"enum": ["metric", "imperial"]},
        },
        "required": ["city"],
        "additionalProperties": False,
    }
    message_schema = {
        "type": "object",
        "properties": {"channel_name": {"type": "string"}, "text": {"type": "string"}},
        "required": ["channel_name", "text"],
    }
    rows = [
        ("Weather.GetForecast", "Get the weather forecast for a city for the coming days.", forecast_schema),
        ("Slack.SendMessage", "Send a message to a Slack channel or user.", message_schema),
        ("GitHub.CreateIssue", "Open a new issue in a GitHub repository.", {"type": "object"}),
        ("Calendar.CreateEvent", "Schedule a meeting on the calendar.", {"type": "object"}),
        ("Notes.CreateNote", XSS, {"type": "object", "properties": {"body": {"type": "string"}}}),
    ]
    http = Executor(kind="http", target=f"{worker}/forecast", timeout_s=5)
    return [
        Tool(name=name, description=text, input_schema=schema, app=name.split(".")[0],
             executor=http if name == "Weather.GetForecast" else None)
        for name, text, schema in rows
    ]  # fmt: skip


@pytest.fixture(scope="module")
def worker_calls() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    calls: list[dict[str, Any]] = []
    with serve(http_worker_app(calls)) as url:
        yield url, calls


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory, embedder: OnnxEmbedder, worker_calls: tuple[str, list[dict[str, Any]]]
) -> Iterator[str]:
    root = tmp_path_factory.mktemp("console")
    publish_tools(catalog(worker_calls[0]), str(root / "index"), embedder)
    policy = write_test_policy(root / "policy.json")  # gateway default allows every tool; API_KEY may use it
    args = ["--index", str(root / "index"), "--policy", str(policy)]
    with serve_subprocess(args, {"TOOLREC_API_KEY": API_KEY}, startup_timeout_s=120, log_path=root / "serve.log") as (
        url,
        _,
    ):
        yield url


def wait(driver: WebDriver, condition: Any, message: str) -> Any:
    return WebDriverWait(driver, WAIT_S).until(condition, message)


def open_console(driver: WebDriver, url: str) -> None:
    driver.get(f"{url}/")
    wait(driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true", "script ran")
    driver.find_element(By.ID, "api-key").send_keys(API_KEY)
    gateway = driver.find_element(By.ID, "gateway-id")
    gateway.clear()
    gateway.send_keys("default")


def select(driver: WebDriver, tasks: list[str]) -> list[WebElement]:
    box = driver.find_element(By.ID, "tasks")
    box.clear()
    box.send_keys("\n".join(tasks))
    driver.find_element(By.ID, "select-button").click()
    status = driver.find_element(By.ID, "select-status")
    wait(driver, lambda _: "(query " in status.text or "error" in status.get_attribute("class"), "select")
    assert "error" not in status.get_attribute("class"), status.text
    return driver.find_elements(By.CSS_SELECTOR, "#results .task")


def suggested(task: WebElement) -> list[str]:
    return [e.text for e in task.find_elements(By.CSS_SELECTOR, ".suggestion .tool-name")]


def open_tool(driver: WebDriver, name: str) -> None:
    driver.find_element(By.CSS_SELECTOR, f'.suggestion[data-tool="{name}"] button.open-tool').click()
    wait(driver, lambda d: d.find_element(By.ID, "tool-name").text == name, f"{name} opened")


def field(driver: WebDriver, name: str) -> WebElement:
    return driver.find_element(By.CSS_SELECTOR, f'#tool-fields .field[data-field="{name}"]')


def control(driver: WebDriver, name: str) -> WebElement:
    return field(driver, name).find_element(By.CSS_SELECTOR, "input, select, textarea")


def run(driver: WebDriver) -> WebElement:
    status = driver.find_element(By.ID, "run-status")
    driver.execute_script("arguments[0].textContent = ''", status)
    driver.find_element(By.ID, "run-button").click()
    wait(driver, lambda _: status.text and status.text != "running...", "run answered")
    return status


def csp_violations(driver: WebDriver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if "Content Security Policy" in e["message"]]


def test_select_run_a_tool_and_see_usage(
    browser: WebDriver, service: str, worker_calls: tuple[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    _, calls = worker_calls
    open_console(browser, service)
    tasks = select(browser, ["get the weather forecast for Lima", "send a Slack message to the ops channel"])
    assert [t.find_element(By.TAG_NAME, "h3").text for t in tasks] == [
        "get the weather forecast for Lima",
        "send a Slack message to the ops channel",
    ]
    assert suggested(tasks[0])[0] == "Weather.GetForecast"
    assert suggested(tasks[1])[0] == "Slack.SendMessage"
    bar = tasks[0].find_element(By.CSS_SELECTOR, ".suggestion .bar > span")
    assert float(bar.value_of_css_property("width").removesuffix("px")) > 0  # the score drawn as a bar
    # The page asks for `explain`; a suggestion's `why`, when the service gives one, is drawn beside it (and a service
    # that refuses the field by name is asked again without it, as this one may).
    asked = {"tasks": ["get the weather forecast for Lima"], "user_id": "demo-user", "explain": True}
    answer = httpx.post(f"{service}/v1/tools/select", json=asked, headers={"Authorization": f"Bearer {API_KEY}"})
    explained = answer.is_success and "why" in answer.json()["results"][0]["suggestions"][0]
    assert answer.is_success or answer.json()["field_errors"][0]["field"] == "explain"
    assert bool(tasks[0].find_elements(By.CSS_SELECTOR, ".suggestion .why")) == explained

    # The forecast tool, from a form made of its input_schema, on the real worker.
    open_tool(browser, "Weather.GetForecast")
    assert control(browser, "days").get_attribute("type") == "number"
    assert control(browser, "units").tag_name == "select"
    control(browser, "city").send_keys("lima")
    control(browser, "days").send_keys("2")
    Select(control(browser, "units")).select_by_visible_text('"metric"')
    status = run(browser)
    assert status.text.startswith("ran in"), status.text
    output = json.loads(browser.find_element(By.ID, "run-output").text)
    assert output == {"city": "Lima", "days": ["lima-day-1", "lima-day-2"]}  # computed by the worker
    assert calls[-1]["input"] == {"city": "lima", "days": 2, "units": "metric"}

    # The service's validation errors, each shown by its field; nothing runs.
    before = len(calls)
    control(browser, "city").clear()
    control(browser, "days").clear()
    control(browser, "days").send_keys("40")
    status = run(browser)
    assert "validation_error" in status.text
    for name in ("city", "days"):
        error = field(browser, name).find_element(By.CLASS_NAME, "field-error")
        assert error.is_displayed() and error.text, name
    assert not field(browser, "units").find_element(By.CLASS_NAME, "field-error").is_displayed()
    assert len(calls) == before

    # A tool with no executor: the page says why it did not run.
    open_tool(browser, "Slack.SendMessage")
    control(browser, "channel_name").send_keys("ops")
    control(browser, "text").send_keys("deploy finished")
    assert "executor_unavailable" in run(browser).text

    # Usage: one select, two runs linked to it, drawn as SVG bars per day.
    browser.find_element(By.ID, "usage-button").click()
    usage = browser.find_element(By.ID, "usage-status")
    wait(browser, lambda _: usage.text.startswith("the last"), "usage shown")
    numbers = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#usage-summary .stat strong")]
    assert numbers == ["1", "2", "2", "100%"]  # recommendations, tasks, runs, share followed by a run
    assert len(browser.find_elements(By.CSS_SELECTOR, "#usage-chart svg rect.rec")) == 14
    tools = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#usage-tools .top-tool .tool-name")]
    assert sorted(tools) == ["Slack.SendMessage", "Weather.GetForecast"]

    assert API_KEY not in browser.current_url
    assert browser.execute_script("return sessionStorage.length") == 0  # kept only when asked to
    assert csp_violations(browser) == []
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, height)  # the whole page in one picture
    browser.execute_script("window.scrollTo(0, 0)")
    browser.save_screenshot(str(tmp_path / "console.png"))
    assert (tmp_path / "console.png").stat().st_size > 10_000


def test_a_description_made_of_markup_shows_as_text_and_runs_nothing(browser: WebDriver, service: str) -> None:
    open_console(browser, service)
    (task,) = select(browser, ["create a note in the notebook"])
    assert suggested(task)[0] == "Notes.CreateNote"
    description = task.find_element(By.CSS_SELECTOR, ".suggestion .description")
    assert description.text == XSS  # the markup, as characters
    assert task.find_elements(By.CSS_SELECTOR, "script, img") == []
    open_tool(browser, "Notes.CreateNote")
    assert browser.find_element(By.ID, "tool-description").text == XSS
    assert browser.find_elements(By.CSS_SELECTOR, "#tool img, #tool script") == []
    assert browser.execute_script("return window.__xss === undefined")
    assert browser.title == "toolrec console"
