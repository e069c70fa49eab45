"""The plan's notes in words: the one place a Note (proposalkit/notes.py) becomes a sentence.

WORDS maps each kind to the function that words it from the note's values; the plan JSON, the
terminal and the reports all print note_text(). A kind without wording is a KeyError, not a blank.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..notes import TEXT, Note
from ..units import GB, GiB


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
    return (f"KV cache: the engine's whole pool, {pool / GB:,.2f} GB = {n['kv_tokens']:,} tokens per GPU; the "
            f"planned batch of {n['batch']:,} × {n['context']:,} tokens uses {used / GB:,.2f} GB of it "
            f"({used / pool:.0%})")


def _nodes(n: Note) -> str:
    node = n["node_gpus"]
    if n["resource"] is None:
        return (f"{node}-GPU nodes (no resource pinned: an HGX/DGX baseboard's {n['baseboard_gpus']} GPUs taken "
                "as one node)")
    return f"{node}-GPU nodes of {n['resource']} (its gpus_per_node)"


# ------------------------------------------------------------- model states (estimate/model_states.py)

def _gib(x: float) -> str:
    return f"{x / GiB:.2f} GiB"


_GRADIENT_FORMS = {"megatron-fp32-main": ", Megatron fp32 main gradients",
                   "deepspeed-fp32-buffer": ", DeepSpeed BF16_Optimizer: bf16 gradients + an fp32 accumulation "
                                            "buffer of the whole replica"}
_AUTOCAST = ("; with fp32 parameters under autocast (Hugging Face Trainer AMP) the same 16 bytes are 4 + 4 + 8, "
             "and autocast's 16-bit weight copies (2 bytes/parameter, beside the fp32 gradients under gradient "
             "accumulation) are counted with the activations where the framework runs autocast over fp32 "
             "parameters (hf-trainer, llama-factory full fine-tunes)")


def _model_states(n: Note) -> str:
    pure = ""
    if n["pure_16bit"]:
        pure = ", pure 16-bit: no master copy" if n["paged"] else f", pure 16-bit: moments in {n['precision']}, no master copy"
    return (f"model states: {_per_param(n['weight_bytes'])} (weights) + {_per_param(n['gradient_bytes'])} (gradients"
            + _GRADIENT_FORMS.get(n["gradient_form"], "")
            + f") + {_per_param(n['state_bytes'])} ({n['optimizer']} states"
            + (", fp32 master copy included" if n["master_copy"] else "") + pure
            + f") = {_per_param(n['total_bytes'])} bytes/parameter (Rajbhandari et al. 2020 §3.1)"
            + (_AUTOCAST if n["autocast"] else ""))


def _lora_adapters(n: Note) -> str:
    why = {"peft-upcast": " (PEFT upcasts adapters to fp32 by default)",
           "pure-16bit": f" (pure 16-bit training: adapters in {n['adapter_precision']})"}.get(n["why"], "")
    return (f"LoRA adapters: {n['adapters']:,} trainable parameters, {n['adapter_precision']} weights and gradients "
            f"+ {_per_param(n['state_bytes'])} bytes of {n['state_dtype']} {n['optimizer']} states = "
            f"{_per_param(n['bytes_per_param'])} bytes/parameter" + why)


def _paged_optimizer(n: Note) -> str:
    share = n["paged_share"]
    return (f"paged optimizer ({n['optimizer']}): its states ({_gib(n['paged_bytes'])} per GPU) are in CUDA unified "
            "memory, outside PyTorch's allocator statistics, and are evicted to host memory when the GPU runs "
            "short, so they are shown apart and not counted in the memory that must fit (bitsandbytes "
            "paged optimizers; Dettmers et al. 2023 §3)"
            + (f"; the states of tensors under {n['min_elements']:,} values ({1 - share:.1%}) stay in "
               "ordinary GPU memory" if share != 1 else "")
            + ("; the 8-bit states' fp32 absmax per block of 256 stays in GPU memory" if n["eight_bit"] else ""))


# ---------------------------------------------------------- training activations (estimate/activations.py)

_CHECKPOINTING = {False: "no activation checkpointing",
                  True: "full activation checkpointing (layer inputs + one layer recomputed)",
                  "selective": "selective activation checkpointing"}


def _training_activations(n: Note) -> str:
    attention = ("FlashAttention (no s×s scores stored)" if n["flash_attention"] else
                 "attention scores stored (no FlashAttention"
                 + ("; softmax in fp32, as eager PyTorch under autocast: 4 + e B per score, + 1 with dropout)"
                    if n["softmax_fp32"] else ")"))
    return (f"activations: {attention}, {n['value_bytes']}-byte values, {_CHECKPOINTING[n['checkpointing']]} "
            "(Korthikanti et al. 2022 eq. 1, §4.3)")


def _moe_activations(n: Note) -> str:
    shared = n["shared_experts"]
    return (f"mixture of experts: each MoE layer stores the activations of the {n['experts_per_token']} routed "
            f"experts a token visits (of {n['experts']})"
            + (f" and of {shared} shared expert{'s' if shared > 1 else ''}" if shared else "")
            + (", every layer counted at the larger of its dense and MoE kinds" if n["mixed_kinds"] else ""))


def _loss(n: Note) -> str:
    if n["loss"] == "fused":
        return f"loss: {n['why']}; the LM head's input gradient and one chunk of logits kept"
    forward, backward = n["forward_bytes_per_logit"], n["backward_bytes_per_logit"]
    how = (" under torch.compile (16-bit logits and per-row log-sum-exp saved, the log-softmax recomputed in the "
           "backward)" if n["compiled"] else "")
    return (f"loss: {n['why']}{how}: {forward:g} B/logit at the forward peak, {backward:g} at the backward peak; "
            f"{max(forward, backward):g}·s·b·v counted on top of the saved activations")


# ------------------------------------------------------------- a shape assumed from params (input/mapping.py)

def _shape_assumed(n: Note) -> str:
    if n["basis"] == "catalog":
        lent = f"{n['family']}'s catalog model nearest in size, {n['origin']} ({n['origin_params']:,} parameters)"
    else:
        lent = f"the standard decoder nearest in size, {n['origin']} ({n['origin_params']:,} parameters, {n['table']})"
    return (f"{n['model']}: params alone ({n['params']:,}): shape assumed from {lent}: {n['layers']} layers, hidden "
            f"{n['hidden']}, {n['heads']} heads, {n['kv_heads']} kv heads of {n['head_dim']}, ffn_hidden "
            f"{n['ffn_hidden']:,} ({n['mlp']} MLP), vocab {n['vocab']:,}; params sets the weights and 6·N FLOPs, the "
            "shape the activations, attention FLOPs and KV cache")


# --------------------------------------------------------- the moments of a training step (estimate/phases.py)

_PEAKS = {"loss": "at the loss", "backward": "later in the backward",
          "step": "at the optimizer step (below), after the two moments compared here",
          "end": "at the end of the backward (below), after the two moments compared here"}


def _peak_phase(n: Note) -> str:
    return (f"peak {_PEAKS[n['peak']]}: with gradient_accumulation_steps 1 the gradients are freed after each step "
            "(zero_grad(set_to_none=True), PyTorch's default since 2.0) and none but the output projection's exists "
            f"when the loss peaks at the start of the backward ({_gib(n['loss_bytes'])} allocated with the loss); "
            f"all {_gib(n['gradient_bytes'])} of gradients exist only later in the backward, beside the saved "
            f"activations ({_gib(n['backward_bytes'])}); "
            + {"step": "the optimizer step is larger than both",
               "end": "the end of the backward is larger than both"}.get(n["peak"], "the larger is counted"))


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
    "tp-within-node": lambda n: (
        f"tensor parallel {n['tensor_parallel']} within one of the {_nodes(n)}: its all-reduces go GPU to GPU at "
        f"{n['link_bytes_per_second'] / 1e9:g} GB/s per GPU ({n['link']})"),
    "tp-across-nodes": lambda n: (
        f"tensor parallel {n['tensor_parallel']} spans {n['nodes']} of the {_nodes(n)}: its all-reduces cross the "
        f"network at {n['link_bytes_per_second'] / 1e9:g} GB/s per GPU, the {n['gpu']} figure "
        f"{n['network_bytes_per_second'] * 8 / 1e9:g} Gb/s ({n['why']}); the resource catalog has no network "
        "figure of its own"),
    # ------------------------------------------------------------------------------ training activations
    "training-activations": _training_activations,
    "moe-activations": _moe_activations,
    "lora-activations": lambda n: (
        "LoRA activations: counted as for full training plus each adapter's rank-r product (an upper bound: "
        "autograd need not keep the inputs of frozen, unadapted matrices)"),
    "qlora-dequant-buffer": lambda n: (
        "QLoRA: one block matrix dequantized to 16 bits at a time for its matmul (transient buffer counted)"),
    "pipeline-activations": lambda n: (
        f"pipeline parallel {n['pipeline_parallel']} with 1F1B: the first stage holds {n['pipeline_parallel']} "
        f"microbatches × {n['layers_per_stage']} layers (Korthikanti §4.2.3)"),
    "tensor-parallel-activations": lambda n: (
        f"tensor parallel {n['tensor_parallel']}"
        + (" with sequence parallelism" if n["sequence_parallel"] else " without sequence parallelism")
        + " divides activations (Korthikanti Table 2)"),
    "selective-policy": lambda n: f"selective checkpointing policy: {n['why']}",
    "activation-offload": lambda n: (
        f"activation offloading (torchtune OffloadActivations @ e511d5a2): saved activations copied to CPU in the "
        f"forward; the last {n['stash_tensors']} saved tensors stay on the GPU until their copies finish, and each "
        "layer's come back in the backward; the output layer and the loss stay on the GPU"),
    "context-parallel": lambda n: (
        f"context parallel {n['context_parallel']} (torchtitan, ring attention): each GPU holds {n['tokens']:,} of "
        f"the sequence's tokens, every activation and the loss ÷ {n['context_parallel']}; two K/V blocks in flight "
        "and the fp32 merged attention output counted while a layer runs"),
    "loss": _loss,
    "loss-default": lambda n: (
        f"loss: {n['loss']}, {n['why']} (planner default; set loss: chunked or fused where the trainer chunks the "
        "loss or fuses it with the LM head)"),
    # kernels (estimate/kernels.py): what eager PyTorch, torch.compile and autocast keep beyond fused kernels
    "autocast-fp32-params": lambda n: (
        "autocast over fp32 parameters (Hugging Face Trainer AMP): the residual stream and the norms' inputs stay "
        "fp32 (4 bytes), and each linear fed by a norm (q, k, v; the MLP's input projections) saves its own 16-bit "
        "copy of that input (PyTorch torch.amp autocast op lists, type promotion); autocast's cached 16-bit copies "
        "of the weights (2 bytes per block and output-projection weight) live to the forward's end, beside the "
        "fp32 gradients under gradient accumulation"),
    "eager-extras": lambda n: (
        "eager PyTorch (no torch.compile): each RMSNorm keeps its fp32 copy (4 bytes per value; Gemma's also its "
        "fp32 normalised tensor) and a gated MLP its activation's output, beside what fused kernels keep (Hugging "
        "Face transformers' Llama model code and the PyTorch trainers' own)"),
    "eager-no-extras": lambda n: (
        "eager PyTorch (no torch.compile): nothing beyond what fused kernels keep in this model (LayerNorm saves "
        "its input, mean and rstd, as counted; a plain MLP's activation saves its input only)"),
    "compiled-layers": lambda n: (
        "torch.compile: the layers keep what fused kernels keep; the final norm stays eager (trainers compile each "
        "layer), its fp32 copy counted"),
    "gqa-head-copies": lambda n: (
        "grouped-query attention: K and V copied to every query head before attention are saved (PyTorch model "
        "code, eager and compiled; not under Megatron's fused attention)"),
    # ------------------------------------------------------------------------- the moments of a step
    "peak-phase": _peak_phase,
    "gradients-beside-loss": lambda n: (
        f"gradients counted beside the loss peak: {n['why']}" if n["why"] is not None else
        "gradients counted beside the loss peak: gradient_accumulation_steps unset (set it to 1 if each "
        "micro-batch is stepped, so the gradients freed between steps are not counted with the loss)"),
    "optimizer-step": lambda n: (
        f"optimizer step: {n['why']} allocates the square root of every second moment "
        f"({_gib(n['temporary_bytes'])}) while weights, gradients and optimizer states are live, after the "
        f"backward has freed the activations: {_gib(n['allocated_bytes'])} allocated"
        + ("; the largest moment of the step, counted (the temporary within the optimizer component)"
           if n["counted"] else "; below the peak counted")),
    "tied-embeddings-end": lambda n: (
        f"tied embeddings: the embedding's backward computes a second gradient of the shared weight "
        f"({_gib(n['second_gradient_bytes'])}) and autograd adds it into the one the output projection wrote, both "
        f"held at once beside every gradient at the end of the backward, the activations freed: "
        f"{_gib(n['allocated_bytes'])} allocated, the largest moment, counted (the second gradient within the "
        "gradients, the hidden-state gradient as the activations)"),
    "chunked-head-accumulation": lambda n: (
        f"chunked loss: the output projection's backward adds its second chunk's weight gradient out of place "
        f"(autograd's InputBuffer, pytorch @ 4537ef6c input_buffer.cpp): {_gib(n['gradient_bytes'])} of v × h "
        f"gradients at once with the logit gradients of the chunks left: {_gib(n['allocated_bytes'])} allocated, "
        "the loss moment's largest instant (its three gradients shown within the gradients where it is the step's "
        "peak)"),
    # ------------------------------------------------------------------------------------ model states
    "model-states": _model_states,
    "zero-shards": lambda n: (
        f"ZeRO stage {n['zero_stage']} over {n['gpus']} data-parallel GPUs shards the "
        + {1: "optimizer states", 2: "optimizer states and gradients",
           3: "weights, gradients and optimizer states"}[n["zero_stage"]] + " (Rajbhandari et al. 2020 §5)"),
    "expert-parallel-states": lambda n: (
        f"expert parallel {n['expert_parallel']}: the routed experts ({n['expert_params']:,} of {n['params']:,} "
        f"parameters) are split over {n['expert_parallel']} GPUs of the data-parallel group, their weights, "
        f"gradients and optimizer states ÷ {n['expert_parallel']}"
        + (f"; ZeRO shards them over the {n['zero_gpus']} GPUs that hold the same experts" if n["zero_gpus"] else "")
        + " (Megatron-Core MoE expert parallelism)"),
    "model-parallel-states": lambda n: (
        f"tensor parallel {n['tensor_parallel']} × pipeline parallel {n['pipeline_parallel']} divide the model "
        "states first"
        + (f"; the fullest pipeline stage is counted: ⌈{n['layers']}/{n['pipeline_parallel']}⌉ layers with the "
           "embeddings (first stage) or the LM head (last stage), "
           f"{n['fullest_stage_fraction']:.1%} of the parameters" if n["fullest_stage_fraction"] is not None else "")),
    "fsdp-under-pipeline": lambda n: (
        f"FSDP under pipeline parallelism (torchtitan): the stage's parameters stay gathered "
        f"({_per_param(n['weight_bytes'])} B/param) and its gradients accumulate unsharded in {n['gradient_dtype']} "
        "across micro-batches; master weights, moments and gradient shards ÷ the data-parallel GPUs"),
    "lora-defaults": lambda n: f"LoRA defaults: rank {n['rank']} on {', '.join(n['targets'])}",
    "qlora-base-weights": lambda n: (
        "base weights: block matrices NF4 with double quantization, 4 + 8/64 + 32/(64·256) = 4.127 bits/param; "
        f"embeddings, LM head and norms at {n['precision']} (Dettmers et al. 2023 §3)"),
    "qlora-base-weights-params-only": lambda n: (
        "base weights: all parameters counted at NF4 4.127 bits (the model gives only a parameter count)"),
    "lora-base-frozen": lambda n: (
        f"base weights frozen at {n['precision']}: no gradients or optimizer states for them (Hu et al. 2021)"),
    "lora-adapters-not-counted": lambda n: (
        "LoRA adapters not counted: the model gives only a parameter count (adapters are usually < 1% of it)"),
    "lora-adapters": _lora_adapters,
    "optimizer-in-backward-params-only": lambda n: (
        "optimizer step in backward: the full gradient is still counted (the model gives only a parameter count, "
        "so its largest parameter is unknown)"),
    "optimizer-in-backward": lambda n: (
        f"optimizer step in backward (torchtune optimizer_in_bwd): each gradient is applied and freed as it is "
        f"produced, so only the largest {n['what']}'s gradient ({n['largest']:,} values × "
        f"{_per_param(n['value_bytes'])} B) is counted, not a full gradient buffer"),
    "param-offload-not-applied": lambda n: (
        "parameter offload not applied: the model gives only a parameter count, so the working set gathered to "
        "the GPU is unknown; the weight and gradient shards are counted on the GPU"),
    "params-offloaded": lambda n: (
        f"parameters offloaded to the CPU (ZeRO-Infinity offload_param; FSDP CPUOffload): the "
        f"{_gib(n['host_bytes'])} of weight and gradient shards live in host memory and only the gathered working "
        "set below is on the GPU"),
    "zero3-working-set": lambda n: (
        "ZeRO-3/FSDP working set: the largest unit (a layer, or the embeddings) all-gathered, twice for the "
        "prefetched next unit, plus its unsharded gradients before the reduce-scatter (PyTorch FSDP notes, "
        "prefetching)"),
    "zero3-working-set-not-counted": lambda n: (
        "ZeRO-3/FSDP all-gathered working set not counted: the model gives only a parameter count"),
    "optimizer-offloaded": lambda n: (
        f"optimizer states offloaded to the CPU ({_gib(n['host_bytes'])} per GPU in host memory: "
        + ("fp32 master weights, " if n["master"] else "")
        + "moments and fp32 gradients; the optimizer step runs on the CPU): ZeRO-Offload keeps the 16-bit weights "
        f"on the GPU and streams the gradients to the host through one reduce bucket of {n['bucket_values']:.0e} "
        "values (Ren et al. 2021 §3-4; DeepSpeed offload_optimizer)"),
    "paged-optimizer": _paged_optimizer,
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
    "shape-assumed": _shape_assumed,
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
