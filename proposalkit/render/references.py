"""Appendix B: the works the plan's records cite (by id, catalog/references.py), then the GPU, resource
and model sources used."""

from __future__ import annotations

from dataclasses import dataclass

from ..planning.records import Plan


@dataclass(frozen=True)
class Reference:
    key: str                     # the in-text citation, e.g. "Rajbhandari et al. 2020"
    text: str                    # the full citation


def references(plan: Plan) -> tuple[Reference, ...]:
    """The works the plan's records cite (Plan.references: the ids its notes and derivations name, each
    once), then every GPU datasheet, resource and model config used."""
    refs = [Reference(r.key, r.text) for r in plan.references]
    seen: set[str] = set()
    for w in plan.workloads:
        if w.gpu.id not in seen:
            seen.add(w.gpu.id)
            usable = w.gpu.usable_memory_source
            refs.append(Reference(w.gpu.name, " ".join(w.gpu.source.split())
                                  + (f" Usable memory: {' '.join(usable.split())}" if usable else "")))
    for w in plan.workloads:
        charge = w.charge
        if charge is not None and charge.resource_id not in seen:
            seen.add(charge.resource_id)
            r = charge.resource
            source = " ".join(r.source.split())
            price = f" Price: {r.price.text}; {_sentence(r.price.source)}" if r.is_cloud and not r.price.set_by else ""
            refs.append(Reference(r.name, _sentence(source) + price + " Size: " + " ".join(r.size_source.split())))
    for w in plan.workloads:
        if w.model.id not in seen and w.model.source:
            seen.add(w.model.id)
            refs.append(Reference(w.model.name, " ".join(w.model.source.split())))
    return tuple(refs)


def _sentence(text: str) -> str:
    """A citation ending with one full stop (catalog citations end with one already: catalog/sources.text)."""
    return text if text.endswith(".") else text + "."
