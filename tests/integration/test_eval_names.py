"""Benchmark catalogs use names a toolrec catalog refuses (versions: "get_rates_v2"); `toolrec eval` still
indexes them with the same words and finds them."""

from __future__ import annotations

import json
from pathlib import Path

from build_index.model_prepare import MODEL_ID
from build_index.quality.evaluate import catalog_name, evaluate
from handler.catalog.tool import Tool
from handler.inference.embedder import OnnxEmbedder
from handler.ranking.retriever import Method
from handler.ranking.text import split_identifier


def test_versioned_names_keep_their_words_and_pass_catalog_validation() -> None:
    for name in ("extract_parameters_v1", "ToolV2", "Weather@1.2.0", "convert-2.1", "Plain.Name"):
        fixed = catalog_name(name)
        Tool(name=fixed, description="d", input_schema={"type": "object"}, app="a")
        assert [w.lower() for w in split_identifier(fixed)] == [
            w.lower() for w in split_identifier(name.replace("@", " "))
        ]


def test_eval_ranks_a_versioned_tool(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    bench = tmp_path / "versioned"
    bench.mkdir()
    tools = [
        {"id": "rates", "name": "get_exchange_rates_v2", "description": "Get currency exchange rates."},
        {"id": "weather", "name": "WeatherV3", "description": "Get the weather forecast for a city."},
        {"id": "mail", "name": "send_email", "description": "Send an email to a recipient."},
    ]
    queries = [
        {"id": "q1", "query": "how many euros is 100 dollars", "relevant": ["rates"], "relevant_groups": [["rates"]]},
        {"id": "q2", "query": "will it rain in Oslo", "relevant": ["weather"], "relevant_groups": [["weather"]]},
    ]
    (bench / "tools.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tools), encoding="utf-8")
    (bench / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    result = evaluate(bench, embedder, MODEL_ID, Method.HYBRID, cache=tmp_path / "cache")
    assert result["tools"] == 3
    assert result["ndcg@10"] == 100.0  # each versioned tool ranks first for its request
