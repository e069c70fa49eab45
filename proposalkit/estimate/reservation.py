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

from .breakdown import CUDA_CONTEXT_BYTES, MemoryBreakdown
from ..catalog.engines import engine_memory_fraction
from ..notes import Note, note
from ..units import memory_carried
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
    # The engine's rule: a fraction of the device (of what is free once the CUDA context exists) holding what
    # it allocates (weights and pool, or the workspace too), or a fraction of what is free after the weights
    # and workspace (render/notes.py words the two).
    budget = {"rule": "device", "after_context": e.budget_after_context,
              "workspace_in_budget": e.workspace_in_budget,
              "inside_bytes": total - context_bytes - (0 if e.workspace_in_budget else activations),
              "why": e.budget_source} if e.fraction_of == "device" else \
        {"rule": "free", "free_bytes": device - rep.weights_bytes - rep.workspace_bytes}
    used = batch * rep.kv_bytes_per_sequence(context)
    # inference_memory()'s notes on a batch-sized allocation give way to the reservation's own.
    notes = [n for n in batch_memory.notes if n.kind not in BATCH_SIZED_KINDS]
    notes += [
        note("engine-reservation", e.paper, engine=e.name, fraction=fraction, device_bytes=device,
             context_bytes=context_bytes, total_bytes=total, weights_bytes=rep.weights_bytes,
             workspace_bytes=activations, pool_bytes=pool, **budget),
        note("kv-pool-use", pool_bytes=pool, kv_tokens=rep.kv_tokens, batch=batch, context=context, used_bytes=used),
        note("engine-workspace", e.paper, engine=e.name, prefill_chunk=e.prefill_chunk),
        note("allocated-is-reserved"),
    ]
    return MemoryBreakdown(weights=rep.weights_bytes, gradients=0, optimizer=0, activations=activations,
                           kv_cache=pool, allocator_reserve=0, cuda_context=context_bytes, notes=tuple(notes))


def reservation_as_printed(m: MemoryBreakdown) -> MemoryBreakdown:
    """engine_memory()'s reservation as the plan carries it and the documents print it (breakdown.as_printed's
    rule, the engine's order): weights and workspace rounded up to 0.01 GiB; under a budget of the device the
    budget rounded up too (0.9 × 44.34 GiB = 39.906 → 39.91) and the KV pool what it leaves, as the engine sizes
    it, so weights + workspace + CUDA context + pool is the printed total; under a fraction of the free memory
    the pool rounded up and the total their sum."""
    said = next(n for n in m.notes if n.kind == "engine-reservation")
    weights, workspace, context = (memory_carried(x) for x in (m.weights, m.activations, m.cuda_context))
    carried = {"weights_bytes": weights, "workspace_bytes": workspace, "context_bytes": context}
    if said["rule"] == "device":
        # The pool in whole bytes is the budget's less the others' (each less than a byte below its printed
        # figure), so it prints as their difference and the total is never below the exact one.
        carried["inside_bytes"] = memory_carried(said["inside_bytes"])
        pool = carried["inside_bytes"] - weights - (workspace if said["workspace_in_budget"] else 0)
    else:
        pool = memory_carried(m.kv_cache)
    carried.update(pool_bytes=pool, total_bytes=weights + workspace + context + pool)
    notes = tuple(
        Note(n.kind, tuple((k, carried.get(k, v)) for k, v in n.values), n.sources)
        if n.kind in ("engine-reservation", "kv-pool-use") else n for n in m.notes)
    return MemoryBreakdown(weights=weights, gradients=0, optimizer=0, activations=workspace, kv_cache=pool,
                           allocator_reserve=0, cuda_context=context, notes=notes, estimated=m.estimated or m)
