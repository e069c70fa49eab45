"""The plan's notes in words: the one place a Note (proposalkit/notes.py) becomes a sentence.

WORDS maps each kind to the function that words it from the note's values (the training kinds' from
training_words.py, the model readers' from model_words.py); the plan JSON, the terminal and the reports
all print note_text(); the documents state the notes document_notes() gives (the loss once). A kind
without wording is a KeyError, not a blank.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..notes import Note, of_kind
from ..units import GB, GiB
from .model_words import MODEL_WORDS
from .training_words import TRAINING_WORDS, per_param
from .notes_ranges import RANGE_WORDS


def _no_scores(n: Note) -> str:
    return f"; {n['attention']} attention keeps no s×s scores" if n["attention"] != "flash" else ""


# ------------------------------------------------------------- inference memory (estimate/memory.py)

def _kv_cache(n: Note) -> str:
    t = n["tensor_parallel"]
    return (f"KV cache: 2 × {n['layers']} layers × {n['kv_heads']} kv heads × {n['head_size']} × "
            f"{per_param(n['value_bytes'])} bytes × {n['context']:,} tokens × {n['batch']} sequences"
            + (f" ÷ {t} GPUs" if t > 1 else "") + " (Kwon et al. 2023)")


def _kv_cache_mla(n: Note) -> str:
    t = n["tensor_parallel"]
    return (f"KV cache: multi-head latent attention caches the latent, ({n['kv_lora_rank']} + {n['rope_dim']} "
            f"rotary) values × {n['layers']} layers × {per_param(n['value_bytes'])} bytes × {n['context']:,} "
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
        return f"LoRA rank {n['rank']} on the attention projections q, k, v, o (planner default)"
    why = "multi-head latent attention" if reason == "mla" else f"{reason}'s module names"
    return f"LoRA rank {n['rank']} on the attention projections {', '.join(n['targets'])} ({why}; planner default)"


# ----------------------------------------------- inference engines (estimate/inference.py, reservation.py)

def _engine_reservation(n: Note) -> str:
    gib = lambda key: f"{n[key] / GiB:.2f} GiB"     # noqa: E731
    if n["rule"] == "device":
        of = (f"the {(n['device_bytes'] - n['context_bytes']) / GiB:.2f} GiB free once the CUDA context exists"
              if n["after_context"] else f"the GPU's {n['device_bytes'] / GiB:.2f} GiB")
        held, beside = (("weights, workspace and KV pool", "the CUDA context") if n["workspace_in_budget"]
                        else ("weights and KV pool", "the workspace and the CUDA context"))
        rule = (f"{n['fraction']:g} × {of} = {gib('inside_bytes')} for {held}, {beside} beside it "
                f"({n['why']}) = {gib('total_bytes')} per GPU")
    else:
        rule = (f"weights + workspace + {n['fraction']:g} × the {gib('free_bytes')} free after them = "
                f"{gib('total_bytes')} per GPU of the {gib('device_bytes')}")
    return (f"{n['engine']} pre-allocates its KV pool at start-up and holds its whole reservation whatever the "
            f"batch: {rule}: weights {gib('weights_bytes')} + workspace {gib('workspace_bytes')} + CUDA context "
            f"{gib('context_bytes')} + KV pool {gib('pool_bytes')}")


def _kv_pool_use(n: Note) -> str:
    pool, used = n["pool_bytes"], n["used_bytes"]
    if not pool:
        return "KV cache: no pool"
    return (f"KV cache: the engine's whole pool, {pool / GiB:,.2f} GiB = {n['kv_tokens']:,} tokens per GPU; the "
            f"planned batch of {n['batch']:,} × {n['context']:,} tokens uses {used / GiB:,.2f} GiB of it "
            f"({used / pool:.0%})")


def _nodes(n: Note) -> str:
    node = n["node_gpus"]
    if n["resource"] is None:
        return (f"{node}-GPU nodes (no resource pinned: an HGX/DGX baseboard's {n['baseboard_gpus']} GPUs taken "
                "as one node)")
    return f"{node}-GPU nodes of {n['resource']} (its gpus_per_node)"


WORDS: dict[str, Callable[[Note], str]] = {
    "overhead": lambda n: (
        f"overhead: CUDA context and library workspaces {n['cuda_context_bytes'] / GiB:.2f} GiB "
        f"+ {n['allocator_reserve']:.0%} caching-allocator reserve on the allocated bytes"
        + (" (more than one GPU: NCCL's collective buffers held by recordStream; GMLake's average over ZeRO, LoRA "
           "and recomputation setups)" if n.get("regime") == "more than one GPU" else "")
        + (f"; under CPU offload the pool grows to {n['ample_reserve']:.0%} above the allocated bytes where the GPU "
           "has memory to spare (reserved_ample_bytes; GMLake's ZeRO-3 offload runs), but those cached blocks are "
           "freed before an out-of-memory error (PyTorch's caching allocator releases them and retries), so what "
           "must fit counts only the reserve above" if n.get("ample_reserve") else "")),
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
    # ------------------------------------------------------------------------------- inference engines
    "engine-budget-device": lambda n: (
        f"{n['engine']} takes {n['fraction']:g} of the GPU's {n['device_bytes'] / GiB:.1f} GiB for weights, "
        f"workspace and KV cache ({n['why']})"),
    "engine-budget-free": lambda n: (
        f"{n['engine']} gives {n['fraction']:g} of the memory free after weights and workspace to the KV cache "
        f"({n['why']})"),
    "engine-allocates": lambda n: (
        f"{n['engine']} allocates as it goes: the caching allocator holds back {n['reserve']:.0%} of what is "
        "allocated"),
    "weights-dequantized": lambda n: (
        f"{n['precision']} weights are dequantized to 16-bit for the matrix multiplies on {n['gpu']} (weight-only "
        "quantization): compute at the 16-bit peak"),
    "batch-kv-pool": lambda n: (
        f"batch {n['batch']}: the KV pool holds {n['kv_tokens']:,} tokens = {n['sequences']:,} sequences of "
        f"{n['input_tokens']:,} + {n['output_tokens']:,} tokens"
        + (f", {n['engine']}'s max batch {n['max_batch']}" if n["max_batch"] is not None else "")),
    "engine-reservation": _engine_reservation,
    "kv-pool-use": _kv_pool_use,
    "engine-workspace": lambda n: (
        f"activations: {n['engine']}'s workspace, one forward pass of {n['prefill_chunk']:,} tokens (chunked "
        "prefill) + fp32 logits, held from start-up"),
    "allocated-is-reserved": lambda n: (
        "allocated ≈ reserved: the weights and the KV pool are allocated once (no caching-allocator reserve on "
        "top); the device adds the CUDA context and library workspaces"),
    "engine-default": lambda n: (
        f"inference engine {n['engine']} (planner default: the most used open serving engine)"),
    "engine-memory": lambda n: f"{n['engine']}: {n['memory_rule']}; {n['batch_rule']}",
    "engine-speed": lambda n: (
        f"{n['engine']}: {n['bandwidth_fraction']:g} of the datasheet bandwidth in decode steps, "
        f"{n['compute_fraction_16bit']:g} of the 16-bit peak ({n['compute_fraction_8bit']:g} of fp8) in prefill, "
        f"and {n['launch_seconds_per_layer'] * 1e6:g} µs of kernel launches per layer of each prefill pass (fitted "
        f"on TensorRT-LLM v0.5's first-token latencies of GPT-J 6B and Falcon-180B): {n['calibration']}"),
    "engine-speed-not-modelled": lambda n: f"{n['engine']}: speed not modelled: {n['calibration']}",
    "engine-version": lambda n: f"engine_version {n['version']}: {n['why']}",
    "batch-length-spread": lambda n: (
        f"lengths that vary (means {n['input_tokens']:,} in, {n['output_tokens']:,} out, read as a lognormal): a "
        f"batch slot holds length-biased outputs of {n['held_output']:,} tokens, a context of {n['held_context']:,}, "
        f"and the job ends in a drain of {n['drain_steps']:,} steps at {n['drain_batch']:,} sequences "
        f"({n['drain_share']:.0%} of the runtime)"),
    "tp-within-node": lambda n: (
        f"tensor parallel {n['tensor_parallel']} within one of the {_nodes(n)}: its all-reduces go GPU to GPU at "
        f"{n['link_bytes_per_second'] / 1e9:g} GB/s per GPU ({n['link']})"),
    "tp-across-nodes": lambda n: (
        f"tensor parallel {n['tensor_parallel']} spans {n['nodes']} of the {_nodes(n)}: its all-reduces cross the "
        f"network at {n['link_bytes_per_second'] / 1e9:g} GB/s per GPU, the {n['gpu']} figure "
        f"{n['network_bytes_per_second'] * 8 / 1e9:g} Gb/s ({n['why']}); the resource catalog has no network "
        "figure of its own"),
    **TRAINING_WORDS,
    # ------------------------------------------------------- the planner's defaults (planning/planner.py)
    "precision-given": lambda n: (
        f"precision {n['precision']} as the workload says, not the checkpoint's ({n['checkpoint_method']})"),
    "precision-checkpoint": lambda n: f"precision {n['precision']}: the checkpoint's quantization_config",
    "precision-training-dequantized": lambda n: (
        f"precision {n['precision']}: training loads the quantized checkpoint ({n['checkpoint_method']}) into "
        "16-bit weights" + ("; QLoRA quantizes the base itself (NF4)" if n["qlora"] else "")),
    "inference-attention-eager": lambda n: (
        "attention: eager (flash_attention: false): a layer's s×s scores are held at the prefill"),
    "seq-len-default": lambda n: (
        f"sequence length {n['seq_len']:,} tokens (not given: the model's maximum context, capped at "
        f"{n['cap']:,})"),
    "lora-default": _lora_default,
    "buffer-default": lambda n: (
        f"contingency buffer {n['buffer']:.0%} (default; NAIRR community guide: 20–30% for retries, sweeps, "
        "profiling)"),
    "checkpoints-default": lambda n: f"{n['retained']} checkpoints kept on scratch per run (planner default)",
    "flash-attention-default": lambda n: f"FlashAttention on ({n['why']}): no s² attention activations",
    "inference-roofline": lambda n: (
        "no measured pilot: the inference speed is a roofline calibrated on published measurements "
        "(the TensorRT-LLM performance overview)"),
    "whole-nodes": lambda n: (
        f"{n['gpus']} GPUs rather than {n['fewer']}: {n['resource']} charges whole nodes, so fewer GPUs would pay "
        f"for idle ones; {n['scaling']}"),
    "zero-stage-chosen": lambda n: (
        f"ZeRO stage {n['zero_stage']} chosen so the model states fit ({n['gpus']} GPUs, Rajbhandari et al. "
        "2020)"),
    "checkpointing-turned-on": lambda n: (
        "full activation checkpointing turned on to fit; the recomputed forward pass is charged in the runtime"),
    **MODEL_WORDS,
    **RANGE_WORDS,      # the ranges' notes (planning/ranges.py)
}


# What the author may set instead of a default the planner filled in: (the workload field, the hint). Never in
# the documents (a reviewer's copy states the assumption only); `plan` and `check` print them on stderr
# (review/lint.py hints), and the plan JSON gives them beside the records.
HINTS: dict[str, Callable[[Note], tuple[str, str] | None]] = {
    "lora-default": lambda n: ("lora", "lora: {rank, targets}"),
    "params-given": lambda n: (("params", "the model's shape, or leave params out to use the shape's count")
                               if abs(n["params"] / n["shape_params"] - 1) > n["tolerance"] else None),
    "precision-checkpoint": lambda n: ("precision", "precision: the weights' format"),
    "seq-len-default": lambda n: ("seq_len", "seq_len: the length the run trains at"),
    "checkpoints-default": lambda n: ("storage", "storage: {checkpoints_retained: N}"),
    "loss-default": lambda n: ("loss", "loss: chunked or fused (a trainer that chunks the loss or fuses it with "
                                       "the LM head)"),
    "compile-default": lambda n: ("compile", "compile: true (a run under torch.compile)"),
    "preset-default": lambda n: (n["field"], f"{n['field']}: another value than the {n['framework']} preset's"),
    "framework-recipe": lambda n: ("optimizer_in_backward", n["hint"]) if n.get("hint") else None,
    "gradients-beside-loss": lambda n: (
        ("gradient_accumulation_steps", "gradient_accumulation_steps: 1 (each micro-batch stepped: its gradients "
                                        "freed between steps)") if n["why"] is None else None),
}


def _chosen_loss(n: Note) -> str | None:
    """The loss `n` says was chosen, by the planner's default or a framework preset; None for other notes."""
    if n.kind == "loss-default":
        return n["loss"]
    if n.kind == "preset-default" and n["field"] == "loss":
        return n["value"]
    return None


def document_notes(notes: Iterable[Note]) -> tuple[Note, ...]:
    """The notes as the documents state them: the note saying how the loss was chosen (a framework preset or
    the planner's default) folded into the loss note that counts its memory, so the loss is one bullet, with
    both notes' values and sources. The plan JSON keeps the two records (render/output.py)."""
    notes = tuple(notes)
    choices = [n for n in notes if _chosen_loss(n) is not None]
    losses = of_kind(notes, "loss")
    if len(choices) != 1 or len(losses) != 1 or _chosen_loss(choices[0]) != losses[0]["loss"]:
        return notes
    (choice,), (loss,) = choices, losses
    chosen = ((("planner_default", True),) if choice.kind == "loss-default"
              else (("framework", choice["framework"]), ("preset_why", choice["why"])))
    merged = Note("loss", loss.values + chosen, tuple(dict.fromkeys(choice.sources + loss.sources)))
    return tuple(merged if n is loss else n for n in notes if n is not choice)


def note_text(note: Note) -> str:
    """The sentence that states `note`, as a reviewer reads it (no instruction to the author: note_hint)."""
    return WORDS[note.kind](note)


def note_hint(note: Note) -> tuple[str, str] | None:
    """What the author may set instead of the default `note` states: (workload field, hint); None for most."""
    hint = HINTS.get(note.kind)
    return hint(note) if hint is not None else None


def note_texts(notes: Iterable[Note]) -> tuple[str, ...]:
    return tuple(note_text(n) for n in notes)


def note_record(note: Note) -> dict:
    """A note as the plan JSON gives it: kind, values (base units, ids), sources (reference ids), text."""
    values = {key: list(value) if isinstance(value, tuple) else value for key, value in note.values}
    out = {"kind": note.kind, "values": values, "sources": list(note.sources), "text": note_text(note)}
    hint = note_hint(note)
    if hint is not None:
        out["hint"] = {"field": hint[0], "text": hint[1]}
    return out
