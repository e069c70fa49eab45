"""Memory per GPU under a pre-allocating inference engine: the engine's whole reservation.

vLLM, SGLang and TensorRT-LLM allocate their KV pool once at start-up, sized by their memory rule
(catalog/engines.py), and hold it whatever the batch; the device (nvidia-smi) shows the reservation,
not the planned batch's KV cache. So the plan's memory under such an engine is the replica's
(estimate/inference.replica): weights + activation workspace + CUDA context + the whole KV pool:
  vLLM     gpu_memory_utilization × the device's memory for weights, workspace and pool, and the CUDA
           context beside it: its budget is measured from a snapshot taken once the context and NCCL
           exist (vllm/v1/worker/gpu_worker.py init_device, determine_available_memory @ 35d5cda1).
           Before (@ 0012cf69) the budget held the context too;
  SGLang   mem_fraction_static × the memory free once the context exists, for weights and pool; the
           workspace and the context beside it (model_runner.py profile_max_num_token; catalog/engines.py);
  TensorRT-LLM  weights + workspace + free_gpu_memory_fraction × the memory free after them.
The weights and the pool are torch allocations made once (vLLM's KV cache is torch.zeros tensors), so
no caching-allocator reserve is added: allocated = reserved = device − the CUDA context.
Hugging Face transformers (no pool) is not costed here: it allocates as the batch grows
(estimate/memory.inference_memory).
"""

from __future__ import annotations

from ..units import GB, GiB
from .breakdown import CUDA_CONTEXT_BYTES, MemoryBreakdown
from ..catalog.engines import engine_memory_fraction
from ..notes import Note
from .memory import BATCH_SIZED_KINDS



def engine_memory(rep, batch_memory: MemoryBreakdown, batch: int, context: int) -> MemoryBreakdown:
    """The engine's reservation per GPU as a MemoryBreakdown (weights, activations = the workspace,
    kv_cache = the whole pool, overhead = the CUDA context), with the batch's use of the pool stated.
    `batch_memory` is inference_memory() for the planned batch: its notes on weights are kept."""
    e, gpu, t = rep.engine, rep.gpu, rep.tensor_parallel
    context_bytes = CUDA_CONTEXT_BYTES
    activations = rep.workspace_bytes - context_bytes      # replica: workspace = activations + CUDA context
    pool = rep.kv_pool_bytes
    total = rep.weights_bytes + rep.workspace_bytes + pool
    device = gpu.usable_memory_bytes
    fraction = engine_memory_fraction(e, t, device)
    if e.fraction_of == "device":
        of = (f"the {(device - context_bytes) / GiB:.2f} GiB free once the CUDA context exists"
              if e.budget_after_context else f"the GPU's {device / GiB:.2f} GiB")
        inside = total - context_bytes - (0 if e.workspace_in_budget else activations)
        held, beside = (("weights, workspace and KV pool", "the CUDA context") if e.workspace_in_budget
                        else ("weights and KV pool", "the workspace and the CUDA context"))
        rule = (f"{fraction:g} × {of} = {inside / GiB:.2f} GiB for {held}, {beside} beside it "
                f"({e.budget_source}) = {total / GiB:.2f} GiB per GPU")
    else:
        free = device - rep.weights_bytes - rep.workspace_bytes
        rule = (f"weights + workspace + {fraction:g} × the {free / GiB:.2f} GiB free after them = "
                f"{total / GiB:.2f} GiB per GPU of the {device / GiB:.2f} GiB")
    used = batch * rep.kv_bytes_per_sequence(context)
    # inference_memory()'s notes on a batch-sized allocation give way to the reservation's own.
    notes = [n for n in batch_memory.notes if not (isinstance(n, Note) and n.kind in BATCH_SIZED_KINDS)]
    notes += [
        f"{e.name} pre-allocates its KV pool at start-up and holds its whole reservation whatever the batch: "
        f"{rule}: weights {rep.weights_bytes / GiB:.2f} GiB + workspace {activations / GiB:.2f} GiB + CUDA "
        f"context {context_bytes / GiB:.2f} GiB + KV pool {pool / GiB:.2f} GiB",
        f"KV cache: the engine's whole pool, {pool / GB:,.2f} GB = {rep.kv_tokens:,} tokens per GPU; the planned "
        f"batch of {batch:,} × {context:,} tokens uses {used / GB:,.2f} GB of it "
        f"({used / pool:.0%})" if pool else "KV cache: no pool",
        f"activations: {e.name}'s workspace, one forward pass of {e.prefill_chunk:,} tokens (chunked prefill) + "
        "fp32 logits, held from start-up",
        "allocated ≈ reserved: the weights and the KV pool are allocated once (no caching-allocator reserve on "
        "top); the device adds the CUDA context and library workspaces",
    ]
    return MemoryBreakdown(weights=rep.weights_bytes, gradients=0, optimizer=0, activations=activations,
                           kv_cache=pool, allocator_reserve=0, cuda_context=context_bytes, notes=tuple(notes))
