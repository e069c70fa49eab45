"""The plan's notes in words: the one place a Note (proposalkit/notes.py) becomes a sentence.

WORDS maps each kind to the function that words it from the note's values; the plan JSON, the
terminal and the reports all print note_text(). A kind without wording is a KeyError, not a blank.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..notes import TEXT, Note
from ..units import GiB


def _per_param(x: float) -> str:
    """A bytes-per-value figure: whole numbers as they are, else 4 significant digits."""
    return str(int(x)) if float(x).is_integer() else f"{x:.4g}"


def _no_scores(n: Note) -> str:
    return f"; {n['attention']} attention keeps no s×s scores" if n["attention"] != "flash" else ""


# ------------------------------------------------------------- inference memory (estimate/memory.py)

def _kv_cache(n: Note) -> str:
    t = n["tensor_parallel"]
    return (f"KV cache: 2 × {n['layers']} layers × {n['kv_heads']} kv heads × {n['head_size']} × "
            f"{_per_param(n['value_bytes'])} bytes × {n['context']:,} tokens × {n['batch']} sequences"
            + (f" ÷ {t} GPUs" if t > 1 else "") + " (Kwon et al. 2023)")


def _kv_cache_mla(n: Note) -> str:
    t = n["tensor_parallel"]
    return (f"KV cache: multi-head latent attention caches the latent, ({n['kv_lora_rank']} + {n['rope_dim']} "
            f"rotary) values × {n['layers']} layers × {_per_param(n['value_bytes'])} bytes × {n['context']:,} "
            f"tokens × {n['batch']} sequences, shared by all heads"
            + (f", whole on each of the {t} GPUs" if t > 1 else "") + " (DeepSeek-V2 §2.1.2)")


def _prompt_logits(n: Note) -> str:
    family = n["family"]
    if not n["kept"]:
        return (f"Hugging Face generate(): {family}'s forward takes logits_to_keep, so the prefill computes the "
                "last position's logits only (transformers v4.57.1; before v4.45 every position's were kept)")
    why = (f"{family}'s forward takes no logits_to_keep" if family
           else "the model's family is unknown: counted as for a forward without logits_to_keep")
    return (f"Hugging Face generate(): the prefill's logits of every prompt position, {n['batch']} × "
            f"{n['context']:,} tokens × {n['vocab']:,} vocab × {n['value_bytes']} bytes, live through the first "
            f"decode step ({why}; transformers v4.57.1)")


def _lora_default(n: Note) -> str:
    reason = n["reason"]
    if reason is None:     # the generic attention projections, q_proj, k_proj, v_proj, o_proj
        return (f"LoRA rank {n['rank']} on the attention projections q, k, v, o (planner default; set lora: "
                "{rank, targets})")
    why = "multi-head latent attention" if reason == "mla" else f"{reason}'s module names"
    return (f"LoRA rank {n['rank']} on the attention projections {', '.join(n['targets'])} ({why}; planner "
            "default; set lora: {rank, targets})")


WORDS: dict[str, Callable[[Note], str]] = {
    TEXT: lambda n: n["text"],
    "overhead": lambda n: (
        f"overhead: CUDA context and library workspaces {n['cuda_context_bytes'] / GiB:.2f} GiB "
        f"+ {n['allocator_reserve']:.0%} caching-allocator reserve on the allocated bytes"),
    "weights-int4-groups": lambda n: (
        f"int4 weights: {n['bits']} bits + fp16 scale and zero per group of {n['group_size']} = "
        f"{n['bits_per_param']:g} bits/param (GPTQ/AWQ default group size)"),
    "weights-8bit": lambda n: (
        f"{n['precision']} weights: 1 byte/param; per-channel/per-tensor scales not counted (< 0.01 bit/param)"),
    "quantized-16bit-parts": lambda n: (
        "all parameters counted at the quantized width (the model gives only a parameter count)"
        if n["parameter_count_only"] else "embeddings, LM head and norms kept at 16 bits"),
    "kv-cache": _kv_cache,
    "kv-cache-mla": _kv_cache_mla,
    "kv-sliding-window": lambda n: (
        f"sliding window: {n['window_layers']} of {n['layers']} layers keep only the last {n['window']:,} tokens "
        "(config.json sliding_window)"),
    "kv-heads-replicated": lambda n: (
        f"tensor parallel {n['tensor_parallel']} exceeds {n['kv_heads']} kv heads: each GPU keeps one replicated "
        "kv head"),
    "kv-cache-dtype": lambda n: (
        f"KV cache {n['kv_precision']} beside {n['precision']} weights under {n['engine']}: {n['why']}"),
    "kv-cache-not-estimated": lambda n: (
        f"KV cache not estimated: model {n['model']!r} gives only a parameter count (needs layers, kv_heads, "
        "head_dim)"),
    "inference-activations-eager": lambda n: (
        f"activations: eager attention (no fused kernel): each prompt prefilled in one forward pass, one "
        f"layer's {n['batch']} × {n['heads']} heads × {n['context']:,}² scores held as 16-bit scores, "
        "their fp32 softmax and its 16-bit copy (transformers eager_attention_forward) + fp32 logits of "
        "the sampled positions"),
    "inference-activations-whole-prompt": lambda n: (
        f"activations: one layer's transient tensors for {n['tokens']:,} tokens (generate() prefills each prompt "
        "in one forward pass) + fp32 logits of the sampled positions" + _no_scores(n)),
    "inference-activations-chunked": lambda n: (
        f"activations: one layer's transient tensors for {n['tokens']:,} tokens per forward pass (chunked "
        "prefill, vLLM max_num_batched_tokens) + fp32 logits of the sampled positions" + _no_scores(n)),
    "activations-not-estimated": lambda n: (
        f"activations not estimated: model {n['model']!r} gives only a parameter count"),
    "engine-reserve": lambda n: (
        f"serving engines reserve part of the GPU: {n['engine']}'s default {n['setting']} = "
        f"{n['fraction']:g} leaves {1 - n['fraction']:.0%} outside its pool"),
    "prompt-logits": _prompt_logits,
    # ------------------------------------------------------- the planner's defaults (planning/planner.py)
    "precision-given": lambda n: (
        f"precision {n['precision']} as the workload says, not the checkpoint's ({n['checkpoint_method']})"),
    "precision-checkpoint": lambda n: (
        f"precision {n['precision']}: the checkpoint's quantization_config; set precision to plan other weights"),
    "precision-training-dequantized": lambda n: (
        f"precision {n['precision']}: training loads the quantized checkpoint ({n['checkpoint_method']}) into "
        "16-bit weights" + ("; QLoRA quantizes the base itself (NF4)" if n["qlora"] else "")),
    "inference-attention-eager": lambda n: (
        "attention: eager (flash_attention: false): a layer's s×s scores are held at the prefill"),
    "seq-len-default": lambda n: (
        f"sequence length {n['seq_len']:,} tokens (not given: the model's maximum context, capped at "
        f"{n['cap']:,}; set seq_len or data.seq_len)"),
    "lora-default": _lora_default,
    "buffer-default": lambda n: (
        f"contingency buffer {n['buffer']:.0%} (default; NAIRR community guide: 20–30% for retries, sweeps, "
        "profiling)"),
    "checkpoints-default": lambda n: (
        f"{n['retained']} checkpoints kept on scratch per run (planner default; set storage: "
        "{checkpoints_retained})"),
    "flash-attention-default": lambda n: f"FlashAttention on ({n['why']}): no s² attention activations",
    "inference-roofline": lambda n: (
        "no measured pilot: the inference speed is a roofline calibrated on published measurements "
        "(docs/validation.md, inference)"),
    "zero-stage-chosen": lambda n: (
        f"ZeRO stage {n['zero_stage']} chosen so the model states fit ({n['gpus']} GPUs, Rajbhandari et al. "
        "2020)"),
    "checkpointing-turned-on": lambda n: (
        "full activation checkpointing turned on to fit; the recomputed forward pass is charged in the runtime"),
    "parameter-count-only": lambda n: (
        f"{n['model']}: parameter count only; activations and attention FLOPs not modelled"),
}


def note_text(note: Note) -> str:
    """The sentence that states `note`."""
    return WORDS[note.kind](note)


def note_texts(notes: Iterable[Note]) -> tuple[str, ...]:
    return tuple(note_text(n) for n in notes)


def note_record(note: Note) -> dict:
    """A note as the plan JSON gives it: kind, values (base units, ids), sources (reference ids), text."""
    values = {key: list(value) if isinstance(value, tuple) else value for key, value in note.values}
    return {"kind": note.kind, "values": values, "sources": list(note.sources), "text": note_text(note)}
