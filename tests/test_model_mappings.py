"""Models given as mappings (CONTRACT.md "Model as a mapping"), through a workload file and the CLI.

A partial shape is completed as the original GPT block (kv_heads = heads,
ffn_hidden = 4 × hidden, mlp: plain), each default stated and warned; what
has no default is an input error naming the keys; a given params sets the
weight bytes at every precision. Counts below are worked by hand beside each.
"""

from __future__ import annotations

import json

import pytest

from proposalkit.catalog.shapes import parameter_count
from proposalkit.catalog.standard_shapes import STANDARD_SHAPES, nearest_standard
from proposalkit.cli import main
from conftest import records

HEAD = "workloads:\n  - name: a\n"


def _write(tmp_path, body: str) -> str:
    path = tmp_path / "w.yaml"
    path.write_text(HEAD + body)
    return str(path)


def _plan(tmp_path, capsys, body: str) -> dict:
    code = main(["plan", _write(tmp_path, body), "--format", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)["workloads"][0]


def _error(tmp_path, capsys, body: str) -> str:
    path = _write(tmp_path, body)
    assert main(["plan", path]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    return out.err.replace(path, "FILE")


# The mapping: no kv_heads, no ffn_hidden.
PARTIAL = ("    kind: finetune\n    method: full\n    tokens: 100M\n"
           "    model: {params: 3B, layers: 32, hidden: 2560, heads: 32, vocab: 50304}\n")


def test_partial_shape_is_completed_as_the_gpt_block_and_warned(tmp_path, capsys):
    w = _plan(tmp_path, capsys, PARTIAL)
    # Shape count with kv 32, ffn 4 × 2560 = 10,240, a plain MLP, RMSNorm (weight only), untied:
    # per layer attention 4·2560² = 26,214,400 + MLP 2·2560·10,240 = 52,428,800 + 2 norms 5,120
    # = 78,648,320; × 32 = 2,516,746,240; embeddings and LM head 2 · 50,304 · 2,560 = 257,556,480;
    # final norm 2,560 → 2,774,305,280. 3B / 2,774,305,280 − 1 = +8.135%.
    expected = [
        "a: custom: kv_heads not given: 32 (= heads: multi-head attention, as in the original GPT block)",
        "a: custom: ffn_hidden not given: 10,240 (= 4 × hidden, as in the original GPT block)",
        "a: custom: mlp not given: plain (two matrices, up and down, with GELU, and LayerNorm, as in the original GPT block; "
        "mlp: gated would be SwiGLU)",
        "a: custom: params 3,000,000,000 given: it sets the weights and FLOPs; the shape (layers, hidden, heads, "
        "...) counts 2,774,305,280; params is +8.1% from it",
    ]
    assert [x for x in w["warnings"] if x.startswith("a: custom:")] == expected
    # The same four as records: each default with its value, and params beside the shape's count.
    assert [(r["values"]["field"], r["values"]["value"]) for r in records(w, "shape-default")] == [
        ("kv_heads", 32), ("ffn_hidden", 10_240), ("mlp", "plain")]
    [given] = records(w, "params-given")
    assert (given["values"]["params"], given["values"]["shape_params"]) == (3_000_000_000, 2_774_305_280)
    assert [r["values"]["model"] for r in records(w, "shape-default") + [given]] == ["custom"] * 4
    assert w["model"]["params"] == 3_000_000_000
    # No longer "parameter count only": the activations are modelled.
    assert w["memory"]["estimate"]["components"]["activations"] > 0
    assert not records(w, "parameter-count-only")


def test_partial_shape_warnings_reach_the_report(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["report", _write(tmp_path, PARTIAL), "-o", str(out), "--format", "md"]) == 0
    capsys.readouterr()
    text = (out / "supplement.md").read_text()
    # Markdown escapes the underscore; section B's caveats are statements, the supplement lists the assumption.
    assert "- custom: ffn\\_hidden not given: 10,240 (= 4 × hidden, as in the original GPT block)\n" in text
    assert "params is +8.1% from it" in text
    # What to do about it is check --defaults' hint, not the documents'.
    assert "leave params out" not in text
    assert main(["check", "--defaults", _write(tmp_path, PARTIAL)]) == 0
    assert "the model's shape, or leave params out to use the shape's count" in capsys.readouterr().err
    section_b = (out / "report.md").read_text()
    assert "- a: custom: ffn\\_hidden not given: 10,240 (= 4 × hidden, as in the original GPT block).\n" in section_b


def test_given_ffn_hidden_keeps_a_gated_mlp_stated_not_warned(tmp_path, capsys):
    w = _plan(tmp_path, capsys, "    kind: pretrain\n    tokens: 100M\n"
                                "    model: {layers: 2, hidden: 64, heads: 4, ffn_hidden: 128, vocab: 100}\n")
    # Stated: the gated MLP and kv_heads; warned: only kv_heads (a gated MLP is what ffn_hidden's width implies).
    assert [(r["values"]["field"], r["values"]["value"]) for r in records(w, "shape-default")] == [
        ("mlp", "gated"), ("kv_heads", 4)]
    assert [x for x in w["warnings"] if "not given" in x] == [
        "a: custom: kv_heads not given: 4 (= heads: multi-head attention, as in the original GPT block)"]
    # attention 4·64² = 16,384 + MLP 3·64·128 = 24,576 + norms 128 = 41,088 per layer; × 2 = 82,176;
    # embeddings + head 2·100·64 = 12,800; final norm 64 → 95,040.
    assert w["model"]["params"] == 95_040


@pytest.mark.parametrize("model,message", [
    ("{params: 3B, layers: 32, hidden: 2560}",
     "incomplete shape (missing heads and vocab; expected all of layers, hidden, heads and vocab, which have no "
     "default, or params alone, whose shape is assumed)"),
    ("{hidden: 2560, heads: 32, kv_heads: 8, ffn_hidden: 6912}",
     "incomplete shape (missing layers and vocab; expected all of layers, hidden, heads and vocab, which have no "
     "default, or params alone, whose shape is assumed)"),
    ("{mlp: gated, params: 7B}",
     "incomplete shape (missing layers, hidden, heads and vocab; expected all of layers, hidden, heads and vocab, "
     "which have no default, or params alone, whose shape is assumed)"),
    ("{name: mine}",
     "incomplete model (expected params, a shape with layers, hidden, heads and vocab, or config)"),
])
def test_what_cannot_be_defaulted_is_named(tmp_path, capsys, model, message):
    err = _error(tmp_path, capsys, f"    kind: pretrain\n    tokens: 1B\n    model: {model}\n")
    assert err == f"FILE:5: workloads[0].model: {message}\n"


def test_params_alone_gets_a_standard_shape_stated_in_full(tmp_path, capsys):
    # Before: a parameter count only, no activations or attention FLOPs (issue 21: 17.4 GiB and 330 h on
    # an H200 for 100B tokens, against 35.5 GiB and 497 h with Llama-3.2-1B's shape). 1B is nearest (in log
    # parameters) Pythia-1.0B (Biderman et al. 2023, Table 1: 16 layers, model dim 2048, 8 heads). As a GPT
    # block without biases: per layer attention 4·2048² = 16,777,216 + MLP 8·2048² = 33,554,432 + norms 4,096
    # = 50,335,744, × 16 = 805,371,904; embedding and head 2 · 50,304 (Pythia's vocabulary) · 2048 =
    # 206,045,184; final norm 2,048: 1,011,419,136 (Pythia-1b itself, with biases: 1,011,781,632).
    w = _plan(tmp_path, capsys, "    kind: pretrain\n    tokens: 1B\n    model: {params: 1B}\n")
    assert w["model"]["params"] == 10**9                              # params still sets weights and FLOPs
    assert w["memory"]["estimate"]["components"]["activations"] > 0
    [r] = records(w, "shape-assumed")
    assert r["values"] == {"model": "custom", "params": 10**9, "basis": "table", "family": "",
                           "origin": "Pythia-1.0B", "origin_params": 1_011_419_136, "table": "Biderman et al. 2023, Table 1", "layers": 16, "hidden": 2048,
                           "heads": 8, "kv_heads": 8, "head_dim": 256, "ffn_hidden": 8192, "mlp": "plain",
                           "vocab": 50_304}
    assert r["sources"] == ["biderman-2023"]
    assert ("a: custom: shape assumed from params alone: layers 16, hidden 2048, heads 8, kv_heads 8, head_dim 256, "
            "ffn_hidden 8192 (plain MLP), vocab 50,304, those of the nearest standard decoder, Pythia-1.0B "
            "(Biderman et al. 2023, Table 1); the activations, attention FLOPs and KV cache follow it; give the "
            "model's layers, hidden, heads and vocab (or config) to plan its own") in w["warnings"]


@pytest.mark.parametrize("params,origin", [
    (50 * 10**6, "Pythia-70M"),                 # below the tables: the end row
    (7 * 10**9, "Pythia-6.9B"),                 # 6.9B (Pythia) is nearer 7B than 7.5B (Megatron-LM)
    (70 * 10**9, "Megatron-LM GPT 76.1B"),      # Narayanan et al. 2021, Table 1
    (20 * 10**12, "Megatron-LM GPT 1008.0B"),   # above the tables: the end row
])
def test_params_alone_takes_the_nearest_row(params, origin):
    assert nearest_standard(params).name == origin


def test_every_standard_row_counts_near_its_published_size():
    # Each row's GPT block (no biases, the table's vocabulary) counts within 6% of the size its table names
    # (Pythia's names count everything; Megatron-LM's Table 1 'number of parameters (billion)').
    for row in STANDARD_SHAPES:
        published = float(row.name.split()[-1].removeprefix("Pythia-").rstrip("MB")) * (
            1e6 if row.name.endswith("M") else 1e9)
        assert parameter_count(row.spec) == pytest.approx(published, rel=0.06), row.name


def test_params_with_a_family_takes_its_nearest_catalog_model(tmp_path, capsys):
    # llama-3.2's catalog models are 1B (1,235,814,400) and 3B (3,212,749,824): 1.24B takes llama-3.2-1b's
    # shape, and plans as that model does but for the 0.3% count difference.
    w = _plan(tmp_path, capsys, "    kind: pretrain\n    tokens: 1B\n    model: {params: 1.24B, family: llama-3.2}\n")
    [r] = records(w, "shape-assumed")
    assert (r["values"]["basis"], r["values"]["origin"], r["values"]["layers"], r["values"]["kv_heads"],
            r["values"]["vocab"]) == ("catalog", "llama-3.2-1b", 16, 8, 128_256)
    assert r["sources"] == []


def test_a_name_of_a_catalog_family_lends_its_shape(tmp_path, capsys):
    w = _plan(tmp_path, capsys, "    kind: pretrain\n    tokens: 1B\n    model: {params: 7B, name: qwen2.5-7b-code}\n")
    [r] = records(w, "shape-assumed")
    assert (r["values"]["family"], r["values"]["origin"]) == ("qwen2.5", "qwen2.5-7b")


def test_params_alone_plans_inference_with_its_kv_cache(tmp_path, capsys):
    # Before: refused (a count cannot size the KV cache). Pythia-6.9B's shape: 32 layers × 32 kv heads × 128 ×
    # 2 (K, V) × 2 bytes = 524,288 bytes per token.
    w = _plan(tmp_path, capsys, "    kind: inference\n    model: {params: 7B}\n    context: 4k\n    hours: 10\n")
    [kv] = records(w, "kv-pool-use")
    assert kv["values"]["used_bytes"] == 4_000 * 524_288


# A shape that over-counts the given params (the issue: int8 weights ignored params).
OVER = ("    kind: inference\n    precision: int8\n    context: 2k\n    hours: 10\n"
        "    model: {params: 1B, layers: 16, hidden: 2048, heads: 16, ffn_hidden: 8192, vocab: 32000, mlp: gated}\n")


def test_given_params_sets_int8_weight_bytes(tmp_path, capsys):
    w = _plan(tmp_path, capsys, OVER)
    # Shape: attention 4·2048² = 16,777,216 + MLP 3·2048·8192 = 50,331,648 + norms 4,096 = 67,112,960
    # per layer, × 16 = 1,073,807,360; embeddings + head 2·32,000·2,048 = 131,072,000; final norm
    # 2,048 → 1,204,881,408. Block matrices 16·(16,777,216 + 50,331,648) = 1,073,741,824.
    # params 1B split in that proportion: linear = 10⁹ · 1,073,741,824 / 1,204,881,408 at 1 byte,
    # the rest at 2 bytes: 2·10⁹ − linear.
    linear_num = 10**9 * 1_073_741_824
    expected = -(-(2 * 10**9 * 1_204_881_408 - linear_num) // 1_204_881_408)     # ceil
    assert w["memory"]["estimate"]["components"]["weights"] == expected     # 1,108,834,... not 1,073,741,824 (the shape alone)
    # 10⁹ / 1,204,881,408 − 1 = −17.0%
    assert any(x.endswith("counts 1,204,881,408; params is -17.0% from it") for x in w["warnings"])


def test_params_within_five_percent_is_stated_not_warned(tmp_path, capsys):
    # Same shape, params 1.2B: 1.2·10⁹ / 1,204,881,408 − 1 = −0.4%.
    w = _plan(tmp_path, capsys, OVER.replace("params: 1B", "params: 1.2B"))
    assert not any("given: it sets" in x for x in w["warnings"])
    [given] = records(w, "params-given")
    assert given["values"] == {"model": "custom", "params": 1_200_000_000, "shape_params": 1_204_881_408,
                               "tolerance": 0.05}


MOE = ("    kind: pretrain\n    tokens: 1B\n"
       "    model: {layers: 2, hidden: 64, heads: 4, kv_heads: 4, ffn_hidden: 128, vocab: 100, mlp: gated, "
       "experts: 4, experts_per_token: 2%s}\n")


def test_moe_keys_map_onto_the_shape(tmp_path, capsys):
    w = _plan(tmp_path, capsys, MOE % "")
    # Per layer: attention 4·64² = 16,384; 4 experts × 3·64·128 = 98,304; router 64·4 = 256; norms 128
    # → 115,072; × 2 = 230,144; embeddings + head 12,800; final norm 64 → 243,008.
    # Active: 243,008 − 2 layers · (4 − 2) experts · 24,576 = 144,704.
    assert (w["model"]["params"], w["model"]["active_params"]) == (243_008, 144_704)


def test_moe_shared_experts_and_width(tmp_path, capsys):
    w = _plan(tmp_path, capsys, MOE % ", moe_ffn_hidden: 32, shared_experts: 1")
    # Expert 3·64·32 = 6,144. Per layer: 16,384 + 4·6,144 + shared 6,144 + router 256 + norms 128 = 47,488;
    # × 2 = 94,976; + 12,800 + 64 = 107,840. Active: 107,840 − 2·2·6,144 = 83,264.
    assert (w["model"]["params"], w["model"]["active_params"]) == (107_840, 83_264)


@pytest.mark.parametrize("model,key,message", [
    ("{layers: 2, hidden: 64, heads: 4, vocab: 100, ffn_hidden: 128, experts: 8, experts_per_token: 16}",
     ".experts_per_token", "more experts per token than experts (got 16 of 8 experts; expected at most 8)"),
    ("{layers: 2, hidden: 64, heads: 4, vocab: 100, experts_per_token: 2}",
     ".experts_per_token",
     "experts_per_token given without experts (expected experts, the routed experts per layer, with them)"),
    ("{layers: 2, hidden: 64, heads: 4, vocab: 100, experts: 8}", ".experts",
     "experts given without experts_per_token (got 8 experts; expected experts_per_token, the routed experts a "
     "token visits, e.g. 2 for Mixtral)"),
    # heads 8192 on hidden 4096: a head of 0 values and a 0-byte KV cache, refused (the same rule and words
    # as for config.json, input/shape_rules.py).
    ("{layers: 32, hidden: 4096, heads: 8192, vocab: 32000}", ".heads",
     "does not divide hidden (got 8192 heads of 4096; each head is hidden / heads wide: expected a divisor of "
     "4096, or head_dim)"),
    ("{layers: 32, hidden: 4096, heads: 32, kv_heads: 12, vocab: 32000}", ".kv_heads",
     "does not divide heads (got 12 key/value heads for 32 heads; grouped-query attention shares each key/value "
     "head among a whole number of query heads: expected a divisor of 32)"),
    # family lends a shape to params alone only, and names a catalog family (issue 21, part 1).
    ("{params: 1B, family: lama}", ".family",
     "no catalog model of this family (got 'lama'; expected one of deepseek-r1-distill-llama, gemma-2, gemma-3, "
     "llama, llama-2, llama-3.1, llama-3.2, llama-3.3, mistral, mistral-nemo, olmo-2, pythia, qwen2.5, qwen3, "
     "stable-code, tinyllama; did you mean 'llama'?)"),
    ("{params: 1B, family: llama, layers: 16, hidden: 2048, heads: 32, vocab: 32000}", ".family",
     "family only lends a shape to params alone (got it beside a shape; expected params and family, without "
     "layers, hidden, heads or vocab)"),
])
def test_inconsistent_mapping_is_an_input_error(tmp_path, capsys, model, key, message):
    err = _error(tmp_path, capsys, f"    kind: pretrain\n    tokens: 1B\n    model: {model}\n")
    assert err == f"FILE:5: workloads[0].model{key}: {message}\n"


def test_mapping_keys_refine_a_config(tmp_path, capsys):
    # A mapping may override a config's MoE keys: experts_per_token beside a Mixtral-style config is no
    # "given without experts" (the config has 4), but 16 of them is refused at the mapping's key.
    config = {"model_type": "mixtral", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4,
              "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 100, "num_local_experts": 4,
              "num_experts_per_tok": 2}
    (tmp_path / "config.json").write_text(json.dumps(config))
    w = _plan(tmp_path, capsys, "    kind: pretrain\n    tokens: 1B\n    model: {config: config.json, "
                                "experts_per_token: 1}\n")
    # As test_moe_keys_map_onto_the_shape, top-1: active 243,008 − 2 · (4 − 1) · 24,576 = 95,552.
    assert (w["model"]["params"], w["model"]["active_params"]) == (243_008, 95_552)
    err = _error(tmp_path, capsys, "    kind: pretrain\n    tokens: 1B\n    model: {config: config.json, "
                                   "experts_per_token: 16}\n")
    assert err == ("FILE:5: workloads[0].model.experts_per_token: more experts per token than experts (got 16 of 4 "
                   "experts; expected at most 4)\n")


def test_head_dim_and_tied_embeddings(tmp_path, capsys):
    w = _plan(tmp_path, capsys, "    kind: pretrain\n    tokens: 1B\n    model: {layers: 2, hidden: 64, heads: 4, "
                                "head_dim: 32, ffn_hidden: 128, vocab: 100, mlp: plain, tied_embeddings: true}\n")
    # q and o 64·(4·32) each, k and v 64·(4·32) each: 4·64·128 = 32,768; MLP 2·64·128 = 16,384; norms 128
    # → 49,280 per layer; × 2 = 98,560; embeddings 6,400 (tied: no head); final norm 64 → 105,024.
    assert w["model"]["params"] == 105_024


def test_dropout_takes_a_boolean_or_a_probability(tmp_path, capsys):
    base = "    kind: pretrain\n    tokens: 1B\n    model: {layers: 2, hidden: 64, heads: 4, vocab: 100, dropout: %s}\n"
    off = _plan(tmp_path, capsys, base % "0")["memory"]["estimate"]["components"]["activations"]
    on = _plan(tmp_path, capsys, base % "0.1")["memory"]["estimate"]["components"]["activations"]
    assert on > off        # dropout masks stored (activations.py)
    assert _plan(tmp_path, capsys, base % "true")["memory"]["estimate"]["components"]["activations"] == on
    err = _error(tmp_path, capsys, base % "1.5")
    assert err == ("FILE:5: workloads[0].model.dropout: out of range (got 1.5, expected true, false, or a "
                   "probability from 0 to below 1)\n")


def test_schema_offers_the_new_mapping_keys(capsys):
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    shape = schema["$defs"]["ModelShape"]["properties"]
    assert {"mlp", "head_dim", "tied_embeddings", "experts", "experts_per_token", "moe_ffn_hidden",
            "shared_experts", "dropout"} <= set(shape)
    lora = schema["$defs"]["Lora"]["properties"]["targets"]
    assert {"type": "string"} in lora["anyOf"][0]["anyOf"]     # all-linear as a plain string


def test_given_params_beside_an_moe_shape_keeps_its_active_share(tmp_path, capsys):
    w = _plan(tmp_path, capsys, MOE % ", params: 486016")
    # The shape counts 243,008 with 144,704 active (test_moe_keys_map_onto_the_shape); params twice that
    # keeps the share: 486,016 · 144,704 / 243,008 = 289,408 active.
    assert (w["model"]["params"], w["model"]["active_params"]) == (486_016, 289_408)
    assert any(x.endswith("counts 243,008; params is +100.0% from it") for x in w["warnings"])
