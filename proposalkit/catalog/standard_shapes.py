"""A shape for a model given by its parameter count alone: a catalog model of its family, else a standard decoder.

A count alone sizes the weights and 6·N FLOPs but not the activations, the attention FLOPs or the KV cache,
which need layers, hidden, heads and vocab. Rather than drop them, the planner assumes a shape, says every
dimension it assumed, and lets the count keep setting the weights and FLOPs:

- with a family (the mapping's `family`, else a catalog family its `name` starts with): that family's dense
  catalog model nearest in size (in log parameters), e.g. `{params: 1B, family: llama-3.2}` → llama-3.2-1b;
- else the standard decoder nearest in size from two published tables of GPT-style decoders (a GELU MLP of
  4 × hidden, multi-head attention), the row whose own parameter count is nearest in log parameters:
  the Pythia suite (Biderman et al. 2023, Table 1: 70M-12B) and Megatron-LM's weak-scaling models
  (Narayanan et al. 2021, Table 1: 1.7B-1T). Outside both (under 70M, over 1T) the end row.

Pure, nothing read at import; the catalog models come from catalog.models().
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property

from .shapes import GPT_FFN_FACTOR, ModelSpec, is_moe, parameter_count

PYTHIA = "biderman-2023"        # catalog/references.py ids
MEGATRON = "narayanan-2021"
# Vocabularies: Pythia's GPT-NeoX-20B tokenizer padded to 50,304 (pythia-1b's config.json vocab_size, the
# catalog row); Megatron-LM's weak-scaling models 'use a vocabulary size of 51,200' (Narayanan et al. 2021 §5.1).
PYTHIA_VOCAB = 50_304
MEGATRON_VOCAB = 51_200


@dataclass(frozen=True)
class StandardShape:
    """One row of a published table of decoder shapes: layers, hidden (d_model) and attention heads."""

    name: str
    layers: int
    hidden: int
    heads: int
    vocab: int
    source: str         # reference id (catalog/references.py); the rows are its Table 1

    @cached_property
    def spec(self) -> ModelSpec:
        """The row as a GPT block: multi-head attention, a GELU MLP of 4 × hidden, LayerNorm (no bias, as the
        mapping's GPT defaults count it: input/mapping.py)."""
        return ModelSpec(id=self.name, name=self.name, layers=self.layers, hidden=self.hidden, heads=self.heads,
                         kv_heads=self.heads, ffn_hidden=GPT_FFN_FACTOR * self.hidden, vocab=self.vocab,
                         mlp="plain", norm="layernorm", norm_bias=False)


STANDARD_SHAPES: tuple[StandardShape, ...] = (
    # Biderman et al. 2023, Table 1 (Pythia model, layers, model dim, heads), as on every Pythia model card.
    StandardShape("Pythia-70M", 6, 512, 8, PYTHIA_VOCAB, PYTHIA),
    StandardShape("Pythia-160M", 12, 768, 12, PYTHIA_VOCAB, PYTHIA),
    StandardShape("Pythia-410M", 24, 1024, 16, PYTHIA_VOCAB, PYTHIA),
    StandardShape("Pythia-1.0B", 16, 2048, 8, PYTHIA_VOCAB, PYTHIA),
    StandardShape("Pythia-1.4B", 24, 2048, 16, PYTHIA_VOCAB, PYTHIA),
    StandardShape("Pythia-2.8B", 32, 2560, 32, PYTHIA_VOCAB, PYTHIA),
    StandardShape("Pythia-6.9B", 32, 4096, 32, PYTHIA_VOCAB, PYTHIA),
    StandardShape("Pythia-12B", 36, 5120, 40, PYTHIA_VOCAB, PYTHIA),
    # Narayanan et al. 2021, Table 1 (number of parameters, attention heads, hidden size, layers).
    StandardShape("Megatron-LM GPT 1.7B", 24, 2304, 24, MEGATRON_VOCAB, MEGATRON),
    StandardShape("Megatron-LM GPT 3.6B", 30, 3072, 32, MEGATRON_VOCAB, MEGATRON),
    StandardShape("Megatron-LM GPT 7.5B", 36, 4096, 32, MEGATRON_VOCAB, MEGATRON),
    StandardShape("Megatron-LM GPT 18.4B", 40, 6144, 48, MEGATRON_VOCAB, MEGATRON),
    StandardShape("Megatron-LM GPT 39.1B", 48, 8192, 64, MEGATRON_VOCAB, MEGATRON),
    StandardShape("Megatron-LM GPT 76.1B", 60, 10240, 80, MEGATRON_VOCAB, MEGATRON),
    StandardShape("Megatron-LM GPT 145.6B", 80, 12288, 96, MEGATRON_VOCAB, MEGATRON),
    StandardShape("Megatron-LM GPT 310.1B", 96, 16384, 128, MEGATRON_VOCAB, MEGATRON),
    StandardShape("Megatron-LM GPT 529.6B", 105, 20480, 128, MEGATRON_VOCAB, MEGATRON),
    StandardShape("Megatron-LM GPT 1008.0B", 128, 25600, 160, MEGATRON_VOCAB, MEGATRON),
)


def _log_distance(params: int, other: int) -> float:
    return abs(math.log(params / other))


def nearest_standard(params: int) -> StandardShape:
    """The table row whose own parameter count (parameter_count of its shape) is nearest `params` in log
    parameters; ties to the smaller."""
    return min(STANDARD_SHAPES, key=lambda r: (_log_distance(params, parameter_count(r.spec)), r.spec.params))


# A catalog id's size: the first '-<number>b' or '-<number>m' token ('llama-3.1-8b' → family 'llama-3.1').
_SIZE = re.compile(r"-\d+(?:\.\d+)?[bm](?=-|$)")


def family_of(model_id: str) -> str | None:
    """A catalog model's family: its id up to the size ('qwen2.5-7b' → 'qwen2.5'); None without a size."""
    m = _SIZE.search(model_id)
    return model_id[:m.start()] if m else None


def normalized(text: str) -> str:
    """A family or name as catalog ids spell it: lower case, spaces and underscores as hyphens."""
    return re.sub(r"[\s_]+", "-", text.strip().lower())


def _within(family: str, given: str) -> bool:
    """Whether the catalog family `family` is (in) the family `given`: equal, or `given` followed by a
    separator or a version digit ('llama' takes llama-3.1, 'qwen' takes qwen2.5, 'llama-3' takes llama-3.2)."""
    return family == given or (family.startswith(given) and (family[len(given)] in "-." or family[len(given)].isdigit()))


def family_models(catalog: dict[str, ModelSpec], given: str) -> list[ModelSpec]:
    """The dense catalog models of family `given` (or whose config model_type it is)."""
    given = normalized(given)
    return [m for m in catalog.values() if not is_moe(m) and
            ((f := family_of(m.id)) is not None and _within(f, given) or m.family == given)]


def name_family(catalog: dict[str, ModelSpec], name: str) -> str | None:
    """The longest catalog family a model's name starts with ('llama-3.2-1b-code' → 'llama-3.2'), or None."""
    name = normalized(name)
    fams = {f for m in catalog.values() if (f := family_of(m.id)) and not is_moe(m)}
    hits = [f for f in fams if name == f or (name.startswith(f) and name[len(f)] in "-.")]
    return max(hits, key=len) if hits else None


def known_families(catalog: dict[str, ModelSpec]) -> list[str]:
    return sorted({f for m in catalog.values() if (f := family_of(m.id)) and not is_moe(m)})


def nearest_model(models: list[ModelSpec], params: int) -> ModelSpec:
    """The model whose parameter count is nearest `params` in log parameters; ties to the smaller."""
    return min(models, key=lambda m: (_log_distance(params, m.params), m.params))
