"""Catalog rows of the models researchers use now (issue 11): Hub id, shape from config.json, published total.

Each published total is the safetensors parameter total of the Hub id's own model page, at the revision
its catalog row cites (models.yaml params_source). The count proposalkit computes from each row's shape
(its config.json) must lie within 0.5% of it (all are exact today).
"""

from __future__ import annotations

import re

import pytest

from proposalkit.catalog import models
from proposalkit.cli import main

PUBLISHED = {
    # catalog id: (Hub id, published total on its model page)
    "llama-3.3-70b": ("meta-llama/Llama-3.3-70B-Instruct", 70_553_706_496),
    "qwen2.5-0.5b": ("Qwen/Qwen2.5-0.5B", 494_032_768),
    "qwen2.5-7b": ("Qwen/Qwen2.5-7B", 7_615_616_512),
    "qwen2.5-72b": ("Qwen/Qwen2.5-72B", 72_706_203_648),
    "qwen3-8b": ("Qwen/Qwen3-8B", 8_190_735_360),
    "qwen3-32b": ("Qwen/Qwen3-32B", 32_762_123_264),
    "qwen3-30b-a3b": ("Qwen/Qwen3-30B-A3B", 30_532_122_624),
    "gemma-2-2b": ("google/gemma-2-2b-it", 2_614_341_888),
    "gemma-2-9b": ("google/gemma-2-9b-it", 9_241_705_984),
    "gemma-2-27b": ("google/gemma-2-27b-it", 27_227_128_320),
    "gemma-3-1b": ("google/gemma-3-1b-it", 999_885_952),
    "gemma-3-4b": ("google/gemma-3-4b-it", 4_300_079_472),
    "gemma-3-27b": ("google/gemma-3-27b-it", 27_432_406_640),
    "phi-3.5-mini": ("microsoft/Phi-3.5-mini-instruct", 3_821_079_552),
    "phi-4-mini": ("microsoft/Phi-4-mini-instruct", 3_836_021_760),
    "olmo-2-7b": ("allenai/OLMo-2-1124-7B", 7_298_617_344),
    "mistral-7b-v0.3": ("mistralai/Mistral-7B-v0.3", 7_248_023_552),
    "llama-3.2-1b": ("meta-llama/Llama-3.2-1B", 1_235_814_400),
    "llama-3.2-3b": ("meta-llama/Llama-3.2-3B", 3_212_749_824),
}


@pytest.mark.parametrize("model_id", PUBLISHED)
def test_computed_count_within_half_a_percent_of_the_published_total(model_id):
    hub_id, published = PUBLISHED[model_id]
    m = models()[model_id]
    assert m.hf_id == hub_id
    assert m.published_params == published
    assert abs(m.params - published) <= 0.005 * published


def test_qwen3_30b_a3b_active_parameters_match_its_name():
    # Qwen3-30B-A3B model card: "30.5B in total and 3.3B activated" (the card truncates: the total
    # 30,532,122,624 is printed 30.5B), so the active count lies in [3.3e9, 3.4e9).
    m = models()["qwen3-30b-a3b"]
    assert 3.3e9 <= m.active_params < 3.4e9


@pytest.mark.parametrize("model_id", list(models()))
def test_every_catalog_row_names_its_hub_id(model_id):
    hub_id = models()[model_id].hf_id
    assert re.fullmatch(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*", hub_id), hub_id


def test_catalog_models_shows_the_hub_id(capsys):
    assert main(["catalog", "models"]) == 0
    out = capsys.readouterr().out
    header, *rows = out.splitlines()
    assert "Hugging Face Hub id" in header
    row = next(r for r in rows if r.startswith("qwen3-30b-a3b "))
    assert "Qwen/Qwen3-30B-A3B " in row and "30,532,122,624" in row
