"""proposalkit: planned AI compute → the resource justification of an allocation proposal.

The pipeline, one subpackage a stage, lowest first (a module imports only from its own
stage or lower ones):

    catalog/    GPUs, models (shapes, parameter counts), engines and resources, each row with
                its source; beside it units, precision, options, files, errors, text
    input/      workload YAML (with line numbers), the format's schema, config readers; pilot/
    estimate/   memory per GPU, FLOPs, inference speed, storage (pure)
    planning/   workload × catalogs → Plan (GPU choice, runtime, GPU-hours, charges)
    render/     Plan → text, JSON, Markdown table, report (Markdown, HTML, PDF)
    review/     diff and check for pull requests
    api.py, cli.py   the Python API and the command line over them

The Python API (docs/python-api.md): functions in api.py, the records they return
from the stages, exported here. Importing the package loads none of the stages (nor
Jinja2 or WeasyPrint): the records are imported on first use.

    import proposalkit
    plan = proposalkit.plan("workloads/code-models.yaml")   # or text=YAML, or data=mapping
    print(proposalkit.plan_text(plan))
    used = proposalkit.usage("workloads/code-models.yaml", jobs="workloads/accounting/2026-10.sacct")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .api import (diff, plan, plan_dict, plan_json, plan_markdown, plan_text, usage, usage_dict, usage_json,
                  usage_text, write_reports)
from .errors import InfeasibleError, InputError, Problem, ProposalkitError

if TYPE_CHECKING:
    from .estimate.breakdown import MemoryBreakdown
    from .estimate.storage import StorageTotals, WorkloadStorage
    from .notes import Note, Reference
    from .planning.charge_records import AccessCredits, CapFinding, Charge, ChargeGroup, SystemTotal
    from .planning.records import Candidate, InferencePlan, Plan, Settings, Throughput, WorkloadPlan
    from .planning.usage_records import (Burn, GpuTypeUsage, LostHours, MeasuredRate, UnattributedJob, Usage,
                                         WorkloadUsage)
    from .render.report import WrittenReports

# Record → the module that defines it, imported when the name is first asked for (PEP 562).
_RECORDS = {
    "Plan": "planning.records", "WorkloadPlan": "planning.records", "Settings": "planning.records",
    "Throughput": "planning.records", "InferencePlan": "planning.records", "Candidate": "planning.records",
    "Charge": "planning.charge_records", "ChargeGroup": "planning.charge_records",
    "SystemTotal": "planning.charge_records", "CapFinding": "planning.charge_records",
    "AccessCredits": "planning.charge_records",
    "MemoryBreakdown": "estimate.breakdown",
    "WorkloadStorage": "estimate.storage", "StorageTotals": "estimate.storage",
    "Note": "notes", "Reference": "notes",
    "WrittenReports": "render.report",
    "Usage": "planning.usage_records", "WorkloadUsage": "planning.usage_records", "Burn": "planning.usage_records",
    "LostHours": "planning.usage_records", "MeasuredRate": "planning.usage_records",
    "UnattributedJob": "planning.usage_records", "GpuTypeUsage": "planning.usage_records",
}

__all__ = [
    "plan", "plan_dict", "plan_json", "plan_text", "plan_markdown", "write_reports", "diff",
    "usage", "usage_dict", "usage_json", "usage_text",
    *_RECORDS,
    "ProposalkitError", "InputError", "InfeasibleError", "Problem",
]


def __getattr__(name: str) -> Any:
    module = _RECORDS.get(name)
    if module is None:
        raise AttributeError(f"module 'proposalkit' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value     # asked once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
