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

The public API (importing it loads no Jinja2 or WeasyPrint):

    import proposalkit
    files = proposalkit.load_files(["workloads/code-models.yaml"])
    plan = proposalkit.plan(files)
    print(proposalkit.plan_json(plan))
    proposalkit.write_reports(plan, "build", ["md", "html"])
"""

from __future__ import annotations

from .errors import InfeasibleError, InputError, ProposalkitError

__all__ = ["load_files", "plan", "plan_dict", "plan_json", "plan_text", "write_reports",
           "InputError", "InfeasibleError", "ProposalkitError"]


def load_files(paths):
    """Read and validate workload files → LoadedFile records; InputError lists every problem."""
    from .input.loading import load_files as _load_files
    return _load_files(list(paths))


def plan(files):
    """LoadedFile records → Plan (GPU choice, memory, tokens, runtime, GPU-hours, charges)."""
    from .planning.planner import plan_files
    return plan_files(list(files))


def plan_dict(plan):
    """Plan → the plan JSON's structure (schema_version 1) as Python values."""
    from .render.output import plan_dict as _plan_dict
    return _plan_dict(plan)


def plan_json(plan) -> str:
    """Plan → the text `proposalkit plan --format json` prints."""
    from .render.output import plan_json as _plan_json
    return _plan_json(plan)


def plan_text(plan) -> str:
    """Plan → the table `proposalkit plan` prints."""
    from .render.output import plan_text as _plan_text
    return _plan_text(plan)


def write_reports(plan, output_dir, formats=("md", "html", "pdf")):
    """Write the report in each format (md, html, pdf) into output_dir → WrittenReports (the paths
    written, the body's length in pages, warnings); prints nothing."""
    from .render.report import write_reports as _write_reports
    return _write_reports(plan, output_dir, list(formats))
