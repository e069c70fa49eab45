"""The works a plan cites: the reference ids of its notes and derivations, resolved once.

Appendix B lists what this returns (Plan.references), never what a search of the report's text
finds: each record names the ids of the works it cites (a Note's sources, Throughput.sources,
InferencePlan.sources, WorkloadStorage.checkpoint_sources, CrossCheck.sources, WorkloadPlan.sources
for its warnings).
"""

from __future__ import annotations

from ..catalog.references import cited
from ..notes import Reference
from .records import WorkloadPlan

# The report's memory line rests on ZeRO's model states for training (it names the ZeRO stage) and
# on PagedAttention's KV cache for inference (render/views.py _memory_step); its MFU line with
# recompute on llm-foundry's MFU and HFU columns.
TRAINING_MEMORY_SOURCES = ("rajbhandari-2020",)
INFERENCE_MEMORY_SOURCES = ("kwon-2023",)
RECOMPUTE_MFU_SOURCES = ("llm-foundry",)


def workload_sources(w: WorkloadPlan) -> list[str]:
    """The reference ids `w`'s notes, derivation, cross-checks and warnings cite, in no particular order,
    repeats allowed."""
    ids = [id_ for n in w.assumptions for id_ in n.sources]
    ids += INFERENCE_MEMORY_SOURCES if w.kind == "inference" else TRAINING_MEMORY_SOURCES
    tp = w.throughput
    if tp.source not in ("service", "pilot", "pilot-extrapolated") and tp.flops_per_token is not None \
            and tp.mfu_base is not None:
        ids += RECOMPUTE_MFU_SOURCES
    ids += tp.sources
    if w.inference is not None:
        ids += w.inference.sources
    if w.storage is not None:
        ids += w.storage.checkpoint_sources
    ids += [id_ for c in w.cross_checks for id_ in c.sources]
    if w.charge is not None and w.charge.resource.is_cloud:     # the provider's pricing page
        ids.append(w.charge.resource.price.reference)
    return ids + list(w.sources)


def plan_references(plans) -> tuple[Reference, ...]:
    """The works the workloads' records cite, once each, in catalog order."""
    return cited(id_ for p in plans for id_ in workload_sources(p))
