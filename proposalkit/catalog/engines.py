"""Inference engines: how each reserves GPU memory, how large a batch it runs, and
the fractions of peak FLOP/s and HBM bandwidth it achieves.

The memory behaviour and batch limits are the engines' own defaults, read in
their source at a named commit. The achieved fractions are calibrated on
published measured throughput (benchmarks/calibrate_inference.py fits them on
the calibration rows of reference/inference.json; benchmarks/validation_inference.py
checks the held-out rows). An engine with no published measurement takes its
fractions from a stated relation to a calibrated engine, or is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

ENGINES = ("vllm", "sglang", "trt-llm", "hf")

# Calibrated fractions of TensorRT-LLM (benchmarks/calibrate_inference.py; fitted once on the
# calibration rows of reference/inference.json, never per row). See that script for the rows.
TRT_BANDWIDTH_FRACTION = 0.72      # achieved / datasheet HBM bandwidth in decode steps
TRT_COMPUTE_FRACTION_8BIT = 0.65   # achieved / datasheet dense fp8 FLOP/s (prefill, large-batch decode)
TRT_COMPUTE_FRACTION_16BIT = 0.70  # achieved / datasheet dense 16-bit FLOP/s
TRT_ALLREDUCE_LATENCY = 33e-6      # seconds per all-reduce beside its bytes (tensor parallelism)
TRT_LINK_FRACTION = 0.46           # achieved / datasheet GPU-to-GPU bandwidth in those all-reduces
# Seconds per layer of every prefill pass beside its roofline: the context phase is launched kernel by
# kernel (TensorRT-LLM captures CUDA graphs for generation-only batches; its piecewise graphs for the
# context phase, "to reduce context-phase launch overhead", are opt-in: docs/source/features/
# torch_compile_and_piecewise_cuda_graph.md), so a short prompt's pass costs its launches as well as its
# FLOPs and weight reads. Fitted on TensorRT-LLM v0.5's first-token rows of GPT-J 6B and Falcon-180B (128
# and 2,048 tokens; the Llama-2 rows of the same table are held out).
TRT_PREFILL_LAYER_SECONDS = 143e-6

TRT_FRACTIONS = dict(bandwidth_fraction=TRT_BANDWIDTH_FRACTION, compute_fraction_8bit=TRT_COMPUTE_FRACTION_8BIT,
                     compute_fraction_16bit=TRT_COMPUTE_FRACTION_16BIT, allreduce_latency=TRT_ALLREDUCE_LATENCY,
                     link_fraction=TRT_LINK_FRACTION, prefill_layer_seconds=TRT_PREFILL_LAYER_SECONDS)


@dataclass(frozen=True)
class Engine:
    """One serving engine's defaults, each with its source.

    memory_fraction / fraction_of say what the engine takes for weights, workspace and KV cache:
      "device": memory_fraction × the device's memory (vLLM gpu_memory_utilization, SGLang
                mem_fraction_static) holds everything the engine allocates;
      "free":   memory_fraction × the memory free after weights and workspace is the KV pool
                (TensorRT-LLM kv_cache_free_gpu_mem_fraction);
      "none":   no pool: tensors are allocated as needed through PyTorch's caching allocator
                (Hugging Face transformers), which holds back its reserve.
    max_batch: the largest number of sequences decoded at once by default (None: the KV cache alone).
    prefill_chunk: tokens one forward pass may carry (chunked prefill; sizes the activation workspace).
    """

    id: str
    name: str
    memory_fraction: float
    fraction_of: str
    max_batch: int | None
    prefill_chunk: int
    bandwidth_fraction: float
    compute_fraction_8bit: float
    compute_fraction_16bit: float
    allreduce_latency: float        # seconds per tensor-parallel all-reduce, beside its bytes
    link_fraction: float            # achieved fraction of the GPU-to-GPU link in an all-reduce
    prefill_layer_seconds: float    # per layer of each prefill pass, beside its roofline (kernel launches)
    continuous_batching: bool
    memory_source: str
    batch_source: str
    calibration: str
    speed_modelled: bool = True     # False: no published measurement to take its speed from (refused)
    # "device" engines: what memory_fraction is a fraction of, and what it holds. The CUDA context is outside
    # both engines' budgets (each measures from a point where the context exists):
    budget_after_context: bool = False   # True: of the memory free once the context exists; False: of the device
    workspace_in_budget: bool = True     # True: the activation workspace comes out of the budget
    budget_source: str = ""              # where the engine's code says so (shown in the plan)
    # The KV cache's dtype where the workload does not set one. Every engine's default ("auto": vLLM
    # kv_cache_dtype, SGLang --kv-cache-dtype, TensorRT-LLM KvCacheConfig.dtype) is the checkpoint's own KV
    # quantization where its quantization config states one, else the model's 16-bit dtype; what fp8 weights
    # bring therefore depends on the FP8 checkpoints the engine runs: "fp8" where they state an fp8 KV cache,
    # "16-bit" where they state none (estimate/inference.default_kv_precision applies it).
    fp8_weights_kv: str = "16-bit"
    kv_source: str = ""                  # why, with the engine's code or docs
    memory_setting: str = ""             # the engine's name for memory_fraction (its argument)
    paper: tuple[str, ...] = ()          # reference ids (catalog/references.py) of the engine's own paper
    # Each prompt prefilled in one forward pass, with the LM head over every prompt position unless the model's
    # forward takes logits_to_keep (Hugging Face generate(), estimate/prompt_logits.py); False: chunked prefill
    # and logits at the sampled positions only (the serving engines).
    whole_prompt_prefill: bool = False
    # Seconds every decode step costs beside its roofline: the CPU's work between steps (gathering the last
    # step's tokens, scheduling, preparing the next step's inputs, sampling) where the engine does not overlap it
    # with the GPU's (engine_at_version: vLLM's V0 engine). 0: overlapped, or within the calibrated fractions.
    decode_step_seconds: float = 0.0
    release: str = ""                    # the release or generation the workload named (engine_version)
    # A prefill's attention products (QKᵀ and AV) on 16-bit tensor cores beside fp8 GEMMs: the context FMHA of a
    # release that runs it in fp16 (engine_at_version: TensorRT-LLM through TRT_FP16_CONTEXT_FMHA_THROUGH).
    context_attention_16bit: bool = False


# The engines' memory fractions and batch limits, each written once (the rows' source texts quote them).
_TRT_FREE_FRACTION, _TRT_MAX_BATCH = 0.9, 2048
_VLLM_UTILIZATION, _VLLM_MAX_NUM_SEQS = 0.9, 256
# vLLM's larger defaults apply to GPUs of at least this much memory that are not A100s.
VLLM_LARGE_GPU_BYTES = 70 * 2**30
VLLM_LARGE_MAX_NUM_SEQS = 1024

TRT_LLM = Engine(
    id="trt-llm", name="TensorRT-LLM",
    # tensorrt_llm/llmapi/llm_args.py (KvCacheConfig.free_gpu_memory_fraction, default 0.9)
    # @ fcd3f31682808ae56118ae43c1d7864a3a945e6f: the KV pool is 90% of the memory free
    # after the engine's weights and activation buffers are allocated.
    memory_fraction=_TRT_FREE_FRACTION, fraction_of="free",
    # LLM API default max_batch_size 2048 (llm_args.py BaseLlmArgs.max_batch_size @ fcd3f316);
    # trtllm-bench sizes it from the KV cache, capped at 4096 (tensorrt_llm/bench/build/tuning.py
    # finetune_setting @ 04cba882084a25665e7f80f5bda71b35b9790b6f).
    max_batch=_TRT_MAX_BATCH, prefill_chunk=8192,
    **TRT_FRACTIONS,
    continuous_batching=True,
    memory_source=f"TensorRT-LLM KvCacheConfig.free_gpu_memory_fraction = {_TRT_FREE_FRACTION:g} of the memory free "
                  "after weights and workspace (tensorrt_llm/llmapi/llm_args.py @ fcd3f316)",
    batch_source=f"TensorRT-LLM LLM API max_batch_size = {_TRT_MAX_BATCH} (tensorrt_llm/llmapi/llm_args.py @ fcd3f316)",
    calibration="fitted on TensorRT-LLM's published offline throughput (reference/inference.json, "
                "calibration rows; benchmarks/calibrate_inference.py)",
    fp8_weights_kv="fp8",
    kv_source="TensorRT-LLM runs NVIDIA Model Optimizer's pre-quantized FP8 checkpoints (docs/source/features/"
              "quantization.md @ 09d4c79b: nvidia/Llama-3.1-8B-Instruct-FP8), whose hf_quant_config.json states "
              "kv_cache_quant_algo FP8 (NVIDIA/TensorRT-Model-Optimizer @ 4c611e47 modelopt/torch/export/"
              "convert_hf_config.py), and KvCacheConfig.dtype 'auto' takes the checkpoint's KV quantization",
)

VLLM = Engine(
    id="vllm", name="vLLM", paper=("kwon-2023",),
    # vllm/engine/arg_utils.py EngineArgs.gpu_memory_utilization = 0.9
    # @ 99d7eb5d6a512cfcc5a2b104f24ebf2d6cda772b: the engine's whole allocation (weights,
    # profiled activation peak, KV cache) is kept under 90% of the device.
    memory_fraction=_VLLM_UTILIZATION, fraction_of="device",
    # EngineArgs usage-context defaults (default_max_num_seqs) @ 99d7eb5d: max_num_seqs 1024 on GPUs
    # of >= 70 GiB other than A100, else 256 (engine_max_batch applies the rule);
    # max_num_batched_tokens 16384 / 8192 for the offline LLM class.
    max_batch=_VLLM_MAX_NUM_SEQS, prefill_chunk=8192,
    # No vLLM measurement with stated settings is calibrated here yet: vLLM runs the same
    # roofline-bound kernels (FlashAttention / FlashInfer decode, cuBLAS / CUTLASS GEMMs), so it
    # takes TensorRT-LLM's fractions, stated as such in the plan.
    **TRT_FRACTIONS,
    continuous_batching=True,
    memory_source=f"vLLM gpu_memory_utilization = {_VLLM_UTILIZATION:g} of the device for weights, activations and KV "
                  "cache (vllm/engine/arg_utils.py @ 99d7eb5d)",
    batch_source=f"vLLM max_num_seqs = {VLLM_LARGE_MAX_NUM_SEQS} on >= {VLLM_LARGE_GPU_BYTES // 2**30} GiB GPUs other "
                 f"than A100, else {_VLLM_MAX_NUM_SEQS} "
                 "(EngineArgs default_max_num_seqs, vllm/engine/arg_utils.py @ 99d7eb5d)",
    calibration="TensorRT-LLM's calibrated fractions: vLLM runs the same roofline-bound kernels; a vLLM 0.23 "
                "decode measurement (Llama-3.1-8B, A100 40GB, batch 1: J. Musgrave, 'vLLM throughput-latency sweep "
                "on NVIDIA A100', johnmusgrave.com) is within 8%",
    # vllm/v1/worker/gpu_worker.py @ 35d5cda123ec28581759b6d34cde8052314fb1e6: init_device takes its
    # memory snapshot "after NCCL is initialized" (the CUDA context exists by then) and sets
    # requested_memory = total memory × gpu_memory_utilization; determine_available_memory gives the KV
    # cache requested_memory − what the profiling run added since that snapshot (weights, peak activations,
    # non-torch increase). So the context and NCCL's start-up buffers are held beside the budget. CUDA
    # graphs: captured after the KV cache at that commit, outside the budget; estimated into it by default
    # since v0.21.0 (vLLM 0.27.1's start-up log: "CUDA graph memory profiling is enabled (default since
    # v0.21.0)"), which the plan assumes.
    budget_after_context=False, workspace_in_budget=True,
    budget_source="vllm/v1/worker/gpu_worker.py init_device, determine_available_memory @ 35d5cda1",
    memory_setting="gpu_memory_utilization",
    kv_source="vLLM kv_cache_dtype 'auto' is the model's dtype unless the checkpoint's quantization_config is "
              "ModelOpt's with a kv_cache_quant_algo (vllm @ 959009b4 vllm/utils/torch_utils.py "
              "resolve_kv_cache_dtype_string, kv_cache_dtype_str_to_dtype): llm-compressor's FP8 checkpoints and "
              "--quantization fp8 keep a 16-bit KV cache unless --kv-cache-dtype fp8 is passed",
)

SGLANG = Engine(
    id="sglang", name="SGLang",
    # sgl-project/sglang python/sglang/srt/server_args.py, ServerArgs mem_fraction_static when unset
    # (2025 releases; found by content, commit not pinned): (GPU memory − reserved) / GPU memory, the
    # reserve by GPU class (engine_memory_fraction applies it); weights and KV pool inside it.
    # 0.88 where the GPU's memory is unknown (and in the v0.4 releases at TP 1).
    memory_fraction=0.88, fraction_of="device",
    # max_running_requests defaults to what the KV pool holds (no fixed cap).
    max_batch=None, prefill_chunk=8192,
    **TRT_FRACTIONS,
    continuous_batching=True,
    memory_source="SGLang mem_fraction_static = (GPU memory − a reserve by GPU class: 10 GiB on an H100 at "
                  "TP 1, 12.5 GiB on an H200) ÷ GPU memory, for weights and KV pool "
                  "(python/sglang/srt/server_args.py)",
    batch_source="SGLang max_running_requests: by default what the KV pool holds",
    calibration="TensorRT-LLM's calibrated fractions: LMSYS's SGLang benchmarks (\"Achieving Faster Open-Source "
                "Llama3 Serving with SGLang Runtime\", 2024-07-25) put its offline throughput on par with "
                "TensorRT-LLM's on Llama 3 8B and 70B",
    # sgl-project/sglang python/sglang/srt/model_executor/model_runner.py (found by content, commit not pinned):
    # init_torch_distributed returns min_per_gpu_memory = get_available_gpu_memory(...) once the context and
    # NCCL exist; profile_max_num_token sizes the pool as rest_memory = available_gpu_memory (after the weights
    # are loaded) − total_gpu_memory × (1 − mem_fraction_static), total_gpu_memory being that figure. So
    # weights + pool = mem_fraction_static × the memory free at start; --mem-fraction-static is "the fraction
    # of the memory used for static allocation (model weights and KV cache memory pool)" (server_args.py
    # help): activations and CUDA graphs use the rest.
    budget_after_context=True, workspace_in_budget=False,
    budget_source="sglang model_runner.py init_torch_distributed, profile_max_num_token",
    kv_source="SGLang --kv-cache-dtype auto is the model's dtype unless the checkpoint's quantization config "
              "states kv_cache_quant_algo FP8 (sgl-project/sglang @ 0005834c python/sglang/srt/model_executor/"
              "model_runner.py configure_kv_cache_dtype)",
)

HF = Engine(
    id="hf", name="Hugging Face transformers (generate)",
    # No pre-allocation: the KV cache grows through PyTorch's caching allocator, which holds back
    # ALLOCATOR_RESERVE (estimate/breakdown.py).
    memory_fraction=1.0, fraction_of="none",
    # generate() runs a static batch: all sequences start and end together; the batch is what
    # fits in memory (no continuous batching).
    max_batch=None, prefill_chunk=8192,
    **TRT_FRACTIONS,
    continuous_batching=False,
    memory_source="Hugging Face transformers: no pre-allocation; PyTorch's caching allocator",
    batch_source="Hugging Face generate(): a static batch, as large as memory allows",
    calibration="none: no published measurement of transformers' generate() with stated settings was "
                "found, and its eager, static-batch decoding is slower than the engines' by an amount "
                "proposalkit cannot source; its speed is refused (memory is modelled)",
    speed_modelled=False,
    whole_prompt_prefill=True,
    kv_source="Hugging Face transformers' cache keeps the key and value states as the attention computes them, "
              "in the activations' 16-bit dtype",
)

_BY_ID = {e.id: e for e in (VLLM, SGLANG, TRT_LLM, HF)}

# vLLM's V0 engine runs each step's CPU work (gathering the last step's output, scheduling, preparing inputs,
# sampling) between GPU steps: the vLLM team's profile of Llama 3 8B on one H100 found the GPU busy 38% of the
# time, the API server 33% and scheduling 29% ("vLLM v0.6.0: 2.7x Throughput Improvement and 5x Latency
# Reduction", blog.vllm.ai 2024-09-05). The V1 engine moves the API server and detokenization to other
# processes and cuts the CPU work of scheduling and input preparation ("vLLM V1: A Major Upgrade to vLLM's Core
# Architecture", blog.vllm.ai 2025-01-27); it is the default from vLLM 0.8.0 (its release notes), and a V1
# release is planned at the calibrated fractions alone (vLLM 0.23 at batch 1 on an A100 is within 8%,
# docs/validation.md). Seconds per decode step of V0 beside the
# roofline, fitted on vLLM's CI latency of Llama 3.1 8B at batch 8 on A100, H100 and H200 (benchmarks/
# calibrate_inference.py, rows fits: decode-step; the 70B rows of the same builds are held out).
VLLM_V0_DECODE_STEP_SECONDS = 1.435e-3
VLLM_V1_RELEASE = (0, 8, 0)
# TensorRT-LLM v0.5 builds an fp8 model with fp8 GEMMs and an fp8 KV cache but its attention plugin, and with it the
# context FMHA, in fp16: every fp8 build of its performance page (docs/source/performance.md @ 77d24b5f, the v0.5
# first-token table's GPT-J 6B, Llama-2 7B/70B and Falcon-180B) passes --enable_fp8 --fp8_kv_cache beside
# --use_gpt_attention_plugin float16 --enable_context_fmha. Releases through this one run a prefill's attention
# at the 16-bit rate; later ones plan as today's (when an fp8 context FMHA became their default is not sourced here).
TRT_FP16_CONTEXT_FMHA_THROUGH = (0, 5)
ENGINE_GENERATIONS = ("v0", "v1")      # vLLM's engine generations, accepted as engine_version beside releases


def release_tuple(version: str) -> tuple[int, ...] | None:
    """(major, minor[, patch]) of a release such as 0.6.3; None for a generation name (v0, v1)."""
    return None if version in ENGINE_GENERATIONS else tuple(int(part) for part in version.split("."))


def engine_at_version(e: Engine, version: str | None) -> tuple[Engine, str]:
    """The engine as a release (or, for vLLM, an engine generation) runs, and why, in words for the plan.

    vLLM before 0.8.0 (or v0) runs its V0 engine: each decode step pays VLLM_V0_DECODE_STEP_SECONDS; from 0.8.0
    (v1, or no version: today's release) the V1 engine's overlapped scheduling, at the calibrated fractions.
    TensorRT-LLM through 0.5 (TRT_FP16_CONTEXT_FMHA_THROUGH) runs a prefill's attention in fp16 beside fp8 GEMMs.
    No other release is modelled apart: measured differences between them were not found."""
    if version is None:
        return e, ""
    if e.id != "vllm":
        if version in ENGINE_GENERATIONS:
            raise ValueError(f"engine_version {version!r}: the engine generations v0 and v1 are vLLM's; give "
                             f"{e.name}'s release number")
        if e.id == "trt-llm" and release_tuple(version)[:2] <= TRT_FP16_CONTEXT_FMHA_THROUGH:
            return (replace(e, release=version, context_attention_16bit=True),
                    f"{e.name} {version}: fp8 weights run fp8 GEMMs, but the context FMHA runs in fp16 (its fp8 "
                    "builds set --use_gpt_attention_plugin float16): a prefill's attention at the 16-bit rate; "
                    "otherwise its calibrated speed")
        return replace(e, release=version), (f"{e.name} {version}: no measured difference between {e.name}'s "
                                             "releases is modelled; its calibrated speed is used")
    release = release_tuple(version)
    v0 = version == "v0" or (release is not None and release < VLLM_V1_RELEASE)
    if not v0:
        return replace(e, release=version), (f"vLLM {version}: the V1 engine (default from 0.8.0), whose CPU work "
                                             "between steps is off the GPU's path: no cost per step beside the "
                                             "roofline")
    return (replace(e, release=version, decode_step_seconds=VLLM_V0_DECODE_STEP_SECONDS),
            f"vLLM {version}: the V0 engine (before 0.8.0), whose CPU work between decode steps is not overlapped "
            f"with the GPU: {VLLM_V0_DECODE_STEP_SECONDS * 1e3:g} ms per decode step, fitted on vLLM's CI latency "
            "of Llama 3.1 8B at batch 8 (A100, H100, H200)")

# SGLang's reserve outside mem_fraction_static, GiB, by the GPU's memory (MiB below the bound):
# a + p × b GiB for p = tensor × pipeline parallel GPUs (server_args.py, comments there: T4/4080;
# A10/L40/4090; H100/A100 (chunked prefill 8k, CUDA graphs to batch 160); H20; H200; B200/MI300 32 GiB).
_SGLANG_RESERVE = ((20 * 1024, 2.8, 0.1), (35 * 1024, 2.8, 0.1), (90 * 1024, 9.5, 0.5), (100 * 1024, 12, 0.5),
                   (160 * 1024, 12, 0.5), (float("inf"), 32, 0.0))


def engine(name: str | Engine | None) -> Engine:
    """The Engine for a `framework` value (None: vLLM, the most common open engine; an Engine: itself)."""
    if name is None:
        return VLLM
    if isinstance(name, Engine):
        return name
    try:
        return _BY_ID[name]
    except KeyError:
        raise ValueError(f"inference engine: expected one of {', '.join(ENGINES)}, got {name!r}") from None


def engine_memory_fraction(e: Engine, tensor_parallel: int, device_bytes: int | None = None) -> float:
    """The engine's memory fraction on a GPU of `device_bytes` at a tensor-parallel size (SGLang's depends
    on both: round((memory − reserve) / memory, 3), memory in MiB; 0.88 when the memory is not given)."""
    if e.id == "sglang" and device_bytes is not None:
        mib = device_bytes / 2**20
        base, per_gpu = next((a, b) for bound, a, b in _SGLANG_RESERVE if mib < bound)
        return round((mib - (base + per_gpu * tensor_parallel) * 1024) / mib, 3)
    return e.memory_fraction


def engine_max_batch(e: Engine, gpu_id: str, usable_memory_bytes: int) -> int | None:
    """The engine's default cap on concurrent sequences on this GPU (None: the KV cache alone)."""
    if e.id == "vllm" and usable_memory_bytes >= VLLM_LARGE_GPU_BYTES and "a100" not in gpu_id:
        return VLLM_LARGE_MAX_NUM_SEQS
    return e.max_batch
