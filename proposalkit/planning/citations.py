"""The works a plan cites: the reference ids of its notes and derivations, resolved once.

Appendix B lists what this returns (Plan.references), never what a search of the report's text
finds. A note that is a record (notes.Note) names its sources; the sentences not yet made records
(TEXT notes, and the derivation strings below) are cited by catalog/references.legacy_sources
until their emitters name theirs.
"""

from __future__ import annotations

from ..catalog.references import cited, legacy_sources
from ..notes import Note, Reference, text_note
from .records import WorkloadPlan

# The report's memory line rests on ZeRO's model states for training (it names the ZeRO stage) and
# on PagedAttention's KV cache for inference (render/views.py _memory_step); its MFU line with
# recompute on llm-foundry's MFU and HFU columns.
TRAINING_MEMORY_SOURCES = ("rajbhandari-2020",)
INFERENCE_MEMORY_SOURCES = ("kwon-2023",)
RECOMPUTE_MFU_SOURCES = ("llm-foundry",)


def as_notes(items) -> tuple[Note, ...]:
    """Notes and sentences not yet made records, as Notes (a sentence: a TEXT note citing the works it
    names)."""
    return tuple(n if isinstance(n, Note) else text_note(n, legacy_sources(n)) for n in items)


def _derivation_texts(w: WorkloadPlan) -> list[str]:
    """The plan's derivation strings the report prints for `w` (not yet records)."""
    tp = w.throughput
    texts = [w.tokens_derivation, tp.derivation, tp.mfu_source or ""]
    fpt = tp.flops_per_token
    if fpt is not None:
        texts += [fpt.model_formula, fpt.dense_source, fpt.attention_source, fpt.checkpointing_name,
                  fpt.recompute_formula, fpt.recompute_source]
    if w.inference is not None:
        texts += [text for _, text in w.inference.steps] + [w.inference.engine_source]
    if w.charge is not None:
        texts.append(w.charge.arithmetic)
    if w.storage is not None:
        texts += [w.storage.checkpoint_arithmetic, w.storage.dataset_arithmetic]
    texts += [c.source + " " + c.name for c in w.cross_checks]
    texts += [c.reason for c in w.alternatives]
    return texts + list(w.warnings)


def workload_sources(w: WorkloadPlan) -> list[str]:
    """The reference ids `w`'s notes and derivation cite, in no particular order, repeats allowed."""
    ids = [id_ for n in w.assumptions for id_ in n.sources]
    ids += INFERENCE_MEMORY_SOURCES if w.kind == "inference" else TRAINING_MEMORY_SOURCES
    tp = w.throughput
    if tp.source not in ("service", "pilot", "pilot-extrapolated") and tp.flops_per_token is not None \
            and tp.mfu_base is not None:
        ids += RECOMPUTE_MFU_SOURCES
    ids += [id_ for text in _derivation_texts(w) for id_ in legacy_sources(text)]
    return ids


def plan_references(plans, warnings) -> tuple[Reference, ...]:
    """The works the workloads' records and the plan's own warnings cite, once each, in catalog order."""
    ids = [id_ for p in plans for id_ in workload_sources(p)]
    ids += [id_ for text in warnings for id_ in legacy_sources(text)]
    return cited(ids)
