"""The training notes in words (estimate/activations.py, loss.py, kernels.py, phases.py, model_states.py;
input/frameworks.py): TRAINING_WORDS, which render/notes.py's WORDS takes in, kind → its sentence."""

from __future__ import annotations

from collections.abc import Callable

from ..notes import Note
from ..units import GiB


def per_param(x: float) -> str:
    """A bytes-per-value figure: whole numbers as they are, else 4 significant digits."""
    return str(int(x)) if float(x).is_integer() else f"{x:.4g}"


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
    return (f"model states: {per_param(n['weight_bytes'])} (weights) + {per_param(n['gradient_bytes'])} (gradients"
            + _GRADIENT_FORMS.get(n["gradient_form"], "")
            + f") + {per_param(n['state_bytes'])} ({n['optimizer']} states"
            + (", fp32 master copy included" if n["master_copy"] else "") + pure
            + f") = {per_param(n['total_bytes'])} bytes/parameter (Rajbhandari et al. 2020 §3.1)"
            + (_AUTOCAST if n["autocast"] else ""))


def _lora_adapters(n: Note) -> str:
    why = {"peft-upcast": " (PEFT upcasts adapters to fp32 by default)",
           "pure-16bit": f" (pure 16-bit training: adapters in {n['adapter_precision']})"}.get(n["why"], "")
    return (f"LoRA adapters: {n['adapters']:,} trainable parameters, {n['adapter_precision']} weights and gradients "
            f"+ {per_param(n['state_bytes'])} bytes of {n['state_dtype']} {n['optimizer']} states = "
            f"{per_param(n['bytes_per_param'])} bytes/parameter" + why)


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


def _loss_chosen(n: Note) -> str:
    """Who chose the loss, where the documents fold that into the loss note (render/notes.py document_notes):
    'chunked (torchtune preset; …): ', 'standard (not given: planner default): ', or nothing."""
    if n.get("framework") is not None:
        return f"{n['loss']} ({n['framework']} preset; {n['preset_why']}): "
    if n.get("planner_default"):
        return f"{n['loss']} (not given: planner default): "
    return ""


def _loss(n: Note) -> str:
    chosen = _loss_chosen(n)
    if n["loss"] == "fused":
        return f"loss: {chosen}{n['why']}; the LM head's input gradient and one chunk of logits kept"
    forward, backward = n["forward_bytes_per_logit"], n["backward_bytes_per_logit"]
    how = (" under torch.compile (16-bit logits and per-row log-sum-exp saved, the log-softmax recomputed in the "
           "backward)" if n["compiled"] else "")
    return (f"loss: {chosen}{n['why']}{how}: {forward:g} B/logit at the forward peak, {backward:g} at the backward "
            f"peak; {max(forward, backward):g}·s·b·v counted on top of the saved activations")


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


# ------------------------------------------------------------------- frameworks (input/frameworks.py)

def _setting(value) -> str:
    """A workload value as the workload file writes it: booleans lower-case."""
    return str(value).lower() if isinstance(value, bool) else str(value)


_KERNELS_RUN = {"eager": "eager PyTorch runs one by one (norms, casts, activation functions, residual adds, "
                         "rotary embeddings, the fp32 loss, the optimizer step)",
                "compiled": "torch.compile runs fused, one kernel per run of them, with the eager loss and "
                            "optimizer step",
                "fused": "the framework's fused kernels run, one per run of them, and its optimizer step"}


def _mamf(n: Note) -> str:
    """The matmuls' rate: MAMF_FRACTION of the GPU's maximum achievable matmul rate, where that rate is from."""
    mamf, peak = n["mamf_flops"] / 1e12, n["peak_flops"] / 1e12
    where = (f"{mamf:,.1f} of {peak:,.0f} TFLOP/s as measured (Bekman's MAMF table" if n["mamf_measured"] else
             f"{mamf:,.1f} of {peak:,.0f} TFLOP/s, the lowest {n['vendor']} efficiency Bekman's MAMF table gives "
             f"({mamf / peak:.1%}; it measures no such GPU, and the lowest is conservative: a slower matmul, more "
             "hours")
    factor = f", × {n['speed_factor']:.3f} for NF4 dequantization" if n["speed_factor"] != 1 else ""
    return (f"{n['mamf_fraction']:.2f} of its maximum achievable matmul rate, {where}; the {n['mamf_fraction']:.2f} "
            "fitted on the published hardware-FLOPs utilization of Megatron-LM, Korthikanti et al. 2022 and BLOOM on "
            f"A100s, their other time taken out){factor}")


def _step_time(n: Note) -> str:
    t = n["tensor_parallel"]
    comm = (f", plus the {t}-way tensor-parallel collectives (two per layer each pass, Shoeybi et al. 2019) as rings "
            "over the GPUs' links at the share of them the inference side's all-reduces achieve, not overlapped "
            "(Megatron-LM's --tp-comm-overlap and torchtitan's async tensor parallelism are off by default; the "
            "workload format has no field for them)" if t > 1 else "")
    floor = ("; the host's launches bind here" if n["host_bound"] else "")
    return (f"step time: the matrix multiplies at {n['compute_fraction']:.2f} of the {n['gpu']}'s dense peak, "
            f"{_mamf(n)}, plus the bytes the non-matmul kernels move as "
            f"{_KERNELS_RUN.get(n['kernels'], n['kernels'])} at {n['memory_fraction']:.2f} of the HBM bandwidth "
            f"(fitted on proposalkit's H100 kernel profiles){comm}; the host's kernel launches "
            f"({n['host_microseconds_per_kernel']:g} µs each, eager PyTorch on proposalkit's H100 runs) are a floor{floor}")


TRAINING_WORDS: dict[str, Callable[[Note], str]] = {
    "step-time": _step_time,
    # ------------------------------------------------------------------------------ training activations
    "training-activations": _training_activations,
    "training-activations-not-estimated": lambda n: (
        f"activations not estimated: model {n['model']!r} gives only a parameter count; give layers, hidden, heads "
        "and vocab to include them"),
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
    "loss-default": lambda n: f"loss not given: {n['loss']} (planner default; how it is computed: below)",
    # kernels (estimate/kernels.py): what eager PyTorch, torch.compile and autocast keep beyond fused kernels
    "autocast-fp32-params": lambda n: (
        "autocast over fp32 parameters (Hugging Face Trainer AMP): the residual stream and the norms' inputs stay "
        "fp32 (4 bytes), and each linear fed by a norm (q, k, v; the MLP's input projections) saves its own 16-bit "
        "copy of that input (PyTorch torch.amp autocast op lists, type promotion); autocast's cached 16-bit copies "
        "of the weights (2 bytes per block and output-projection weight) live to the forward's end, beside the "
        "fp32 gradients under gradient accumulation"),
    "eager-extras": lambda n: (
        "eager PyTorch (no torch.compile): each RMSNorm keeps its fp32 copy (4 bytes per value"
        + ("; Gemma's also its fp32 normalised tensor" if n.get("gemma_norm") else "")
        + ") and a gated MLP its activation's output, beside what fused kernels keep (Hugging Face transformers' "
        "Llama model code and the PyTorch trainers' own)"),
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
        "gradients counted beside the loss peak: gradient_accumulation_steps not given, so the gradients may "
        "live across micro-batches"),
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
    # ------------------------------------------------------------------------------------- frameworks
    "preset-default": lambda n: f"{n['field']}: {_setting(n['value'])} ({n['framework']} preset; {n['why']})",
    "framework-recipe": lambda n: f"{n['framework']}: {n['why']}",
    "framework-optimizer": lambda n: f"optimizer: {n['why']} ({n['framework']} preset)",
    "framework-selective-policy": lambda n: (
        f"selective checkpointing by torchtitan's op-level policy ({n['why']}; {n['framework']} preset)"),
    "framework-softmax-16bit": lambda n: (
        f"unfused attention's softmax in 16-bit ({n['why']}; {n['framework']} preset)"),
    "framework-no-sequence-parallel": lambda n: (
        "tensor parallelism without sequence parallelism: the norms' inputs, the attention and MLP inputs and the "
        f"checkpointed layer inputs are whole on every tensor-parallel GPU ({n['why']}; Korthikanti et al. 2022 "
        f"eq. 2; {n['framework']} preset)"),
    "framework-fused-kernels": lambda n: (
        f"kernels: fused, what fused kernels keep, no eager extras ({n['framework']}; {n['why']})"
        + ("; compile: true changes nothing here: the fused count is already what a compiled layer keeps"
           if n["compile"] else "")),
    "compile-given": lambda n: (
        "torch.compile (compile: true): each layer keeps what fused kernels keep; the final norm stays eager; a "
        "chunked loss is compiled (16-bit logits and per-row statistics)"),
    "compile-default": lambda n: f"compile: {_setting(n['compile'])} (planner default: {n['why']})",
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
        f"({per_param(n['weight_bytes'])} B/param) and its gradients accumulate unsharded in {n['gradient_dtype']} "
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
        f"{per_param(n['value_bytes'])} B) is counted, not a full gradient buffer"),
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
}
