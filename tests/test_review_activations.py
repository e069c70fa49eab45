"""Review of today's activation terms: tensors autograd keeps that a term list left out.

Each expected figure is worked out here from the published config.json values
(named beside them) and the rule each term states, never read back from the code.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from proposalkit.estimate.activations import activation_terms_per_layer, training_activation_bytes
from proposalkit.estimate.memory import TrainingSetup
from proposalkit.estimate.shapes import ModelSpec
from proposalkit.input.configs import model_from_config

CONFIGS = Path(__file__).parent / "data" / "configs"


def _read(name: str) -> ModelSpec:
    model, problems = model_from_config(json.loads((CONFIGS / name).read_text()), name)
    assert not problems and model is not None
    return model


def test_qk_norms_store_their_inputs_like_every_norm():
    # Qwen/Qwen3-8B config.json (tests/data/configs/qwen3.json): 36 layers, 32 heads, 8 kv heads,
    # head_dim 128; q_norm and k_norm are RMSNorms over head_dim applied to the q and k projections
    # (transformers modeling_qwen3.py). An RMSNorm's backward needs its input, so each layer keeps
    # the un-normalised q (32·128 wide) and k (8·128 wide) as well as the normalised ones.
    qwen3 = _read("qwen3.json")
    assert qwen3.qk_norm == "head"
    s, e = 512, 2
    setup = TrainingSetup(method="full", seq_len=s)
    with_norms, _ = training_activation_bytes(qwen3, setup)
    without, _ = training_activation_bytes(replace(qwen3, qk_norm="none"), setup)
    assert with_norms - without == 36 * e * s * (32 * 128 + 8 * 128)
