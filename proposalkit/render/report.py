"""Plan → report context → Jinja2 → Markdown, HTML and PDF (section B of a NAIRR Pilot proposal).

Pipeline: `report_context(plan)` turns the Plan into a context made for the
templates (views with every derivation written out, references, charts);
`render_markdown` / `render_html` fill `templates/report.md.j2` and
`templates/report.html.j2`; `render_pdf` runs the HTML through WeasyPrint with
a URL fetcher that refuses everything outside the templates folder;
`write_reports` writes the files atomically.

Numbers are formatted in one place, the `FILTERS` below (gib, gb, size,
hours, hours_precise, days, count, si, rate, pct, factor), by type, never by
key name; the derivation lines built here call the same functions. The templates may not print
a bare float: both environments refuse one (`_finalize`), so every number
goes through a filter.

User text is escaped in every format: HTML by Jinja's autoescape; Markdown by
`md_escape`, applied automatically to every string the Markdown template
prints (the Markdown environment's `finalize`), unless a filter already made
it safe.

Templates folder: `proposalkit/render/templates/`, shipped inside the package
(package data), so a regular `pip install .` renders reports from any folder.

Page length: the body (everything before Appendix A) should fit about
BODY_PAGES pages. With a PDF, the length is measured there (the page and
height of the `body-end` mark); without one, estimated from the Markdown
(estimate_body_lines). Beyond BODY_PAGES + PAGE_TOLERANCE a warning goes to
stderr.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from . import charts
from ..planning import resources as res_catalog
from ..estimate.flops import matmul_params
from ..errors import InputError
from .format import (
    FILTERS, Safe, fmt_count, fmt_days, fmt_gib, fmt_hours, fmt_hours_precise, fmt_pct, fmt_rate, fmt_size,
    md_escape,
)
from ..planning.planner import Candidate, Plan, WorkloadPlan
from ..units import SECONDS_PER_HOUR, GiB

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"

# The body (everything before the appendix) should fit about two US Letter
# pages: NAIRR Pilot proposals run about three pages in all (CloudBank's
# best-practices page), and section B shares them with A, C and D.
BODY_PAGES = 2
PAGE_TOLERANCE = 0.2        # "about two pages": warn from 2.2 on
# Lines of 10-pt body text on a US Letter page with the print stylesheet's
# margins (11 in - 1.45 in = 9.55 in ≈ 688 pt at 13.5 pt per line ≈ 51, less
# headings' spacing). Calibrated: on four plans of 2-4 workloads the estimate
# came within 0.06 pages of the PDF's measured body length.
LINES_PER_PAGE = 49
CHARS_PER_LINE = 100        # 10-pt text on a 6.9 in column
PX_PER_LINE = 18            # a chart's height in CSS px per text line (13.5 pt = 18 px)

CHART_FILES = {"gpu_hours": "charts/gpu-hours.svg", "memory": "charts/memory.svg"}
APPENDIX_MARKER = "<!-- appendix -->"

PANGO_HELP = ("install Pango, which WeasyPrint needs: Debian/Ubuntu `apt-get install libpango-1.0-0 "
              "libpangoft2-1.0-0`; macOS `brew install pango`")


class PdfUnavailableError(InputError):
    """WeasyPrint (or the Pango library under it) cannot be loaded; the PDF is not written.

    A subclass of InputError so the command line exits 2 with the message, as
    it does for any input it cannot turn into a report. The Markdown and HTML
    were written before this is raised (`written`).
    """

    def __init__(self, message: str, written: list[str]):
        super().__init__([])
        self.message = message
        self.written = written

    def __str__(self) -> str:
        return self.message


def _refuse_float(value: object) -> object:
    if isinstance(value, float):
        raise TypeError(f"template prints a bare float ({value!r}): format it with a filter "
                        f"({', '.join(sorted(FILTERS))})")
    return value


def _finalize_html(value: object) -> object:
    return _refuse_float(value)


def _finalize_md(value: object) -> object:
    value = _refuse_float(value)
    if isinstance(value, (Safe, int)) and not isinstance(value, bool):
        return value
    return md_escape(value)


# --------------------------------------------------------------------------
# The context the templates get.
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One line of a derivation: what is computed and the arithmetic with every number substituted."""

    label: str
    text: str


@dataclass(frozen=True)
class Component:
    name: str
    bytes: int
    share: float


@dataclass(frozen=True)
class CrossCheckRow:
    name: str
    formula: str
    bytes: int
    ratio: float | None          # rule ÷ this estimate (all GPUs together)
    source: str


@dataclass(frozen=True)
class Setting:
    name: str
    value: str


@dataclass(frozen=True)
class StorageView:
    """One workload's storage (issue 6), bytes."""

    checkpoint_bytes: int        # one checkpoint a restart reads
    retained: int
    concurrency: int
    peak_scratch_bytes: int      # checkpoint × retained × concurrency + dataset
    dataset_bytes: int           # tokenized
    final_weights_bytes: int     # per variant
    variants: int


@dataclass(frozen=True)
class WorkloadView:
    name: str
    kind: str                    # "fine-tuning (LoRA)", "pretraining", "inference service", ...
    short_kind: str              # for the summary table: "finetune/lora"
    description: str | None
    model_id: str
    model_name: str
    params: int
    gpu_id: str
    gpu_name: str
    gpu_count: int
    usable_bytes: int
    memory_bytes: int
    components: tuple[Component, ...]       # the non-zero ones, in the plan's order
    tokens: int | None           # None for a service costed by hours
    throughput_source: str
    runtime_hours: float
    variants: int
    gpu_hours: float
    buffer: float
    gpu_hours_requested: float
    steps: tuple[Step, ...]      # the body's derivation
    details: tuple[Step, ...]    # the appendix's: sources and arithmetic too long for the body
    settings: tuple[Setting, ...]
    alternatives: tuple[Candidate, ...]   # the planner's immutable records, as they are
    cross_checks: tuple[CrossCheckRow, ...]
    assumptions: tuple[str, ...]
    warnings: tuple[str, ...]
    charge_amount: float | None
    charge_unit: str | None
    charge_resource: str | None
    storage: StorageView | None
    calendar_days: float | None


@dataclass(frozen=True)
class TitleBlock:
    title: str | None
    pi: str | None
    institution: str | None
    resource: str | None
    track: str | None
    date: str | None

    @property
    def items(self) -> tuple[tuple[str, str], ...]:
        """The lines under the title that are given: (label, value)."""
        pairs = (("PI: ", self.pi), ("", self.institution), ("target resource: ", self.resource),
                 ("track: ", self.track), ("", self.date))
        return tuple((label, value) for label, value in pairs if value)


@dataclass(frozen=True)
class GpuTotal:
    gpu_id: str
    gpu_name: str
    gpu_hours: float
    gpu_hours_requested: float


@dataclass(frozen=True)
class ResourceTotal:
    resource: str
    unit: str
    amount: float


# Marks for a catalog fact that was not read on the provider's own page (catalog `confidence`).
CONFIDENCE_MARKS = {"secondhand": "†", "inferred": "‡"}
CONFIDENCE_NOTES = {
    "secondhand": "Second-hand source, not the provider's own page: re-check before quoting",
    "inferred": "Inferred from documented numbers, not stated by the provider (see the catalog notes)",
}


@dataclass(frozen=True)
class ResourceRow:
    """One resource (partition) and GPU type the request runs on: requested GPU-hours → rule → its unit.

    A partition offers one GPU type except NERSC Perlmutter (A100 40 GB and 80 GB), which gets a
    row per type. `resource_id` None: workloads with no target resource, requested in GPU-hours.
    """

    resource_id: str | None
    system: str                  # system id (ncsa-delta): partitions of one system share an allocation
    partition: str               # as the provider names it: "gpuH200x8" ("" without a resource)
    name: str                    # the catalog's full name, the reference key in Appendix B
    gpu_type: str
    gpus_per_node: int | None
    rule: str                    # the charging rule in words (resources.describe_rule)
    rule_source: str
    rule_confidence: str         # verified | secondhand | inferred ("" without a resource)
    gpu_hours_requested: float   # buffer included, all workloads on it
    amount: float                # in `unit`, all workloads on it (per-job rounding and minimums applied)
    unit: str
    walltime: str                # the per-job limit(s) that apply to the plan's jobs, in words
    walltime_source: str
    walltime_confidence: str
    workloads: tuple[str, ...]

    @property
    def rule_mark(self) -> str:
        return CONFIDENCE_MARKS.get(self.rule_confidence, "")

    @property
    def walltime_mark(self) -> str:
        return CONFIDENCE_MARKS.get(self.walltime_confidence, "")


@dataclass(frozen=True)
class UnitTotal:
    """The amount requested on one system in one unit: partitions of one system add up, systems do not."""

    label: str                   # the partition id when it is the only one, else the system id
    system: str                  # "" for workloads with no target resource (GPU-hours)
    unit: str
    gpu_hours_requested: float
    amount: float
    rows: int                    # resource rows summed


@dataclass(frozen=True)
class ResourcesView:
    """The units table (section B.3): one row per resource, totals per system and unit, footnotes."""

    rows: tuple[ResourceRow, ...]
    totals: tuple[UnitTotal, ...]    # one per (system, unit), in order of first use
    notes: tuple[tuple[str, str], ...]   # (mark, meaning) for each mark the table uses

    @property
    def summed(self) -> tuple[UnitTotal, ...]:
        """The totals that add several rows (a one-row total would repeat its row)."""
        return tuple(t for t in self.totals if t.rows > 1)

    @property
    def adds_partitions(self) -> bool:
        """Whether a total adds the amounts of a system's partitions (the table says why it may)."""
        return any(t.system for t in self.summed)

    @property
    def charged(self) -> tuple[UnitTotal, ...]:
        """The totals on named resources (not the GPU-hours of workloads without one)."""
        return tuple(t for t in self.totals if t.system)


@dataclass(frozen=True)
class StorageTotals:
    project_bytes: int
    scratch_bytes: int
    archive_bytes: int


@dataclass(frozen=True)
class Reference:
    key: str                     # the in-text citation, e.g. "Rajbhandari et al. 2020"
    text: str                    # the full citation


@dataclass(frozen=True)
class Chart:
    svg: str                     # inline SVG (HTML and PDF)
    path: str                    # the file written beside report.md, relative to it
    alt: str
    height: float                # CSS px, for the page-length estimate


@dataclass(frozen=True)
class AccessView:
    """The request in ACCESS Credits, shown when the proposal names an ACCESS project type."""

    tier: str                   # the project type asked for, e.g. "Explore ACCESS"
    limit: float                # its credit limit
    arithmetic: str             # per resource: amount × rate = credits
    credits: float | None       # None: some resource has no rate in the catalog
    fits: str | None            # the smallest project type that covers the credits (None: Maximize)
    within: bool                # the credits are within the limit of the type asked for
    secondhand: bool
    missing: tuple[str, ...]


def _access_view(plan: Plan) -> AccessView | None:
    tier_id = plan.proposal.access_tier if plan.proposal is not None else None
    access = plan.access
    if tier_id is None or access is None:
        return None
    from ..planning.resources import credit_tiers

    tier = next(t for t in credit_tiers() if t.id == tier_id)
    within = access.credits is not None and access.credits <= tier.credits
    return AccessView(tier.name, tier.credits, access.arithmetic, access.credits,
                      access.tier.name if access.tier else None, within, access.secondhand, access.missing)


@dataclass(frozen=True)
class ReportContext:
    heading: str
    title: TitleBlock
    workloads: tuple[WorkloadView, ...]
    gpu_hours: float
    gpu_hours_requested: float
    by_gpu: tuple[GpuTotal, ...]
    by_resource: tuple[ResourceTotal, ...]
    resources: ResourcesView | None  # the units table; None when no workload has a target resource
    has_charges: bool
    has_storage: bool
    storage: StorageTotals | None
    calendar_days: float | None  # all workloads one after another
    warnings: tuple[str, ...]
    references: tuple[Reference, ...]
    charts: dict[str, Chart]
    access: AccessView | None = None

    @property
    def resources_heading(self) -> str | None:
        """Section B.3's title: the units table and storage share it; None when there is neither."""
        if self.resources is not None:
            return ("Resources, allocation units, storage and calendar time" if self.has_storage
                    else "Resources and allocation units")
        return "Storage and calendar time" if self.has_storage else None


# Papers and documents the estimate stands on, by the in-text citation the plan
# and this report use. A reference is listed only when its key (a regular
# expression) appears in the report's text.
PAPERS: tuple[tuple[str, str, str], ...] = (
    ("Chowdhery et al. 2022", r"Chowdhery et al\.? 2022|PaLM",
     ("A. Chowdhery, S. Narang, J. Devlin, et al. PaLM: Scaling Language Modeling with Pathways. "
      "arXiv:2204.02311, 2022; JMLR 24(240), 2023. (Appendix B: model FLOPs per token, MFU.)")),
    ("Dao et al. 2022", r"Dao et al\.? 2022|FlashAttention",
     ("T. Dao, D. Y. Fu, S. Ermon, A. Rudra, C. Ré. FlashAttention: Fast and Memory-Efficient Exact "
      "Attention with IO-Awareness. NeurIPS 2022; arXiv:2205.14135.")),
    ("Dettmers et al. 2022", r"Dettmers et al\.? 2022",
     ("T. Dettmers, M. Lewis, S. Shleifer, L. Zettlemoyer. 8-bit Optimizers via Block-wise Quantization. "
      "ICLR 2022; arXiv:2110.02861.")),
    ("Dettmers et al. 2023", r"Dettmers et al\.? 2023|QLoRA|NF4",
     ("T. Dettmers, A. Pagnoni, A. Holtzman, L. Zettlemoyer. QLoRA: Efficient Finetuning of Quantized LLMs. "
      "NeurIPS 2023; arXiv:2305.14314.")),
    ("Dubey et al. 2024", r"Dubey et al\.? 2024",
     ("A. Dubey, A. Jauhri, A. Pandey, et al. The Llama 3 Herd of Models. arXiv:2407.21783, 2024.")),
    ("Frantar et al. 2023", r"Frantar et al\.? 2023|GPTQ",
     ("E. Frantar, S. Ashkboos, T. Hoefler, D. Alistarh. GPTQ: Accurate Post-Training Quantization for "
      "Generative Pre-trained Transformers. ICLR 2023; arXiv:2210.17323.")),
    ("Guo et al. 2024", r"Guo et al\.?,? (ASPLOS )?2024|GMLake",
     ("C. Guo, R. Zhang, J. Xu, J. Leng, et al. GMLake: Efficient and Transparent GPU Memory "
      "Defragmentation for Large-scale DNN Training with Virtual Memory Stitching. ASPLOS 2024; "
      "arXiv:2401.08156.")),
    ("Hoffmann et al. 2022", r"Hoffmann et al\.? 2022|Chinchilla",
     ("J. Hoffmann, S. Borgeaud, A. Mensch, et al. Training Compute-Optimal Large Language Models. "
      "NeurIPS 2022; arXiv:2203.15556.")),
    ("Hu et al. 2021", r"Hu et al\.? 2021|LoRA",
     ("E. J. Hu, Y. Shen, P. Wallis, Z. Allen-Zhu, Y. Li, S. Wang, L. Wang, W. Chen. LoRA: Low-Rank "
      "Adaptation of Large Language Models. ICLR 2022; arXiv:2106.09685, 2021.")),
    ("Kaplan et al. 2020", r"Kaplan et al\.? 2020",
     ("J. Kaplan, S. McCandlish, T. Henighan, T. B. Brown, B. Chess, R. Child, S. Gray, A. Radford, J. Wu, "
      "D. Amodei. Scaling Laws for Neural Language Models. arXiv:2001.08361, 2020.")),
    ("Korthikanti et al. 2022", r"Korthikanti et al\.? 2022",
     ("V. Korthikanti, J. Casper, S. Lym, L. McAfee, M. Andersch, M. Shoeybi, B. Catanzaro. Reducing "
      "Activation Recomputation in Large Transformer Models. MLSys 2023; arXiv:2205.05198, 2022.")),
    ("Kwon et al. 2023", r"Kwon et al\.? 2023|vLLM",
     ("W. Kwon, Z. Li, S. Zhuang, Y. Sheng, L. Zheng, C. H. Yu, J. E. Gonzalez, H. Zhang, I. Stoica. "
      "Efficient Memory Management for Large Language Model Serving with PagedAttention (vLLM). SOSP 2023; "
      "arXiv:2309.06180.")),
    ("Lin et al. 2024", r"Lin et al\.? 2024|AWQ",
     ("J. Lin, J. Tang, H. Tang, S. Yang, W.-M. Chen, W.-C. Wang, G. Xiao, X. Dang, C. Gan, S. Han. AWQ: "
      "Activation-aware Weight Quantization for LLM Compression and Acceleration. MLSys 2024; "
      "arXiv:2306.00978.")),
    ("Micikevicius et al. 2018", r"Micikevicius et al\.? 2018|fp32 master",
     ("P. Micikevicius, S. Narang, J. Alben, G. Diamos, E. Elsen, D. Garcia, B. Ginsburg, M. Houston, "
      "O. Kuchaiev, G. Venkatesh, H. Wu. Mixed Precision Training. ICLR 2018; arXiv:1710.03740.")),
    ("NAIRR community guide", r"NAIRR community guide|seed 000",
     ("NAIRR Pilot community documentation (nairr.readthedocs.io): \"GPU Estimate\" and \"Generalized "
      "Resource Estimation\".")),
    ("Rajbhandari et al. 2020", r"Rajbhandari et al\.? 2020|ZeRO",
     ("S. Rajbhandari, J. Rasley, O. Ruwase, Y. He. ZeRO: Memory Optimizations Toward Training Trillion "
      "Parameter Models. SC20, 2020; arXiv:1910.02054.")),
    ("torchtune", r"torchtune",
     ("pytorch/torchtune, README at commit 30b8519e: memory and throughput table (Llama 3.1 8B LoRA and "
      "QLoRA on one RTX 4090).")),
    ("Touvron et al. 2023", r"Touvron et al\.? 2023",
     ("H. Touvron, L. Martin, K. Stone, et al. Llama 2: Open Foundation and Fine-Tuned Chat Models. "
      "arXiv:2307.09288, 2023.")),
)

_COMPONENT_NAMES = {"weights": "weights", "gradients": "gradients", "optimizer": "optimizer",
                    "activations": "activations", "kv_cache": "KV cache", "overhead": "overhead"}


def _kind(w: WorkloadPlan) -> tuple[str, str]:
    if w.kind == "inference":
        return ("inference service" if w.throughput.source == "service" else "batch inference"), "inference"
    method = w.method or "full"
    if w.kind == "pretrain":
        return "pretraining", "pretrain"
    label = {"full": "full fine-tuning", "lora": "fine-tuning (LoRA)", "qlora": "fine-tuning (QLoRA)"}[method]
    return label, f"finetune/{method}"


def _gpus(n: int) -> str:
    return f"{n} GPU" if n == 1 else f"{n} GPUs"


def _memory_step(w: WorkloadPlan) -> Step:
    parts = [f"{fmt_gib(b, 2, unit=False)} {_COMPONENT_NAMES[k]}"
             for k, b in w.memory.components().items() if b]
    used = w.memory.total / w.gpu.usable_memory_bytes
    if w.kind != "inference":
        how = (f"ZeRO stage {w.zero_stage or 0}, activation checkpointing "
               + ("on" if w.activation_checkpointing else "off"))
    else:
        how = "KV cache: Kwon et al. 2023"
    text = (f"{' + '.join(parts)} = {fmt_gib(w.memory.total, 2)} of {fmt_gib(w.gpu.usable_memory_bytes, 2)} "
            f"usable on one {w.gpu.id} ({fmt_pct(round(used, 3))}; {how})")
    return Step("Memory per GPU", text)


def _throughput_steps(w: WorkloadPlan, appendix: str) -> tuple[list[Step], list[Step]]:
    """(body steps, appendix details) for where the throughput came from."""
    tp = w.throughput
    if tp.source == "service":
        return [], []
    if tp.source == "pilot":
        return [Step("Throughput", f"{fmt_rate(tp.tokens_per_second)} tokens/s, measured in a pilot on "
                                   f"{w.gpu_count}× {w.gpu.id}")], []
    if tp.source == "pilot-extrapolated":
        return [Step("Throughput", f"extrapolated from a pilot: {tp.derivation}")], []
    steps, details = [], []
    fpt = tp.flops_per_token
    if fpt is not None:
        n = matmul_params(w.model)
        factor = 6 if (w.method or "full") == "full" else 4
        terms = [f"{factor} × {fmt_count(n)}"]
        if fpt.attention:
            m = w.model
            terms.append(f"12 × {m.layers} × {m.heads} × {m.head_size} × {fmt_count(w.settings.seq_len)}")
        text = f"{fpt.formula.split(' (')[0]} = {' + '.join(terms)} = {fpt.model / 1e9:,.2f} GFLOP"
        if fpt.recompute:
            text += (f"; + {fpt.recompute / 1e9:,.2f} GFLOP recomputed (activation checkpointing) "
                     f"= {fpt.hardware / 1e9:,.2f} GFLOP on the hardware")
        cite = "Kaplan et al. 2020" if factor == 6 else "Hu et al. 2021"
        text += f" ({cite}; attention: Chowdhery et al. 2022, App. B)"
        steps.append(Step("FLOPs per token", text))
    if fpt is not None and tp.mfu is not None:
        gpus = f"{w.gpu_count} GPU" + ("s" if w.gpu_count > 1 else "")
        steps.append(Step("Throughput", f"{gpus} × {w.gpu.peak_16bit_flops / 1e12:,.0f} TFLOP/s × MFU {_mfu(tp.mfu)} "
                                        f"({appendix}) ÷ {fpt.hardware / 1e9:,.2f} GFLOP = "
                                        f"{fmt_rate(tp.tokens_per_second)} tokens/s"))
    else:
        steps.append(Step("Throughput", tp.derivation))
    if tp.mfu_source:
        details.append(Step("MFU", tp.mfu_source))
    return steps, details


def _mfu(x: float) -> str:
    """MFU with two decimals, three when the third is not zero: 0.40, 0.313."""
    text = f"{x:.3f}"
    return text.removesuffix("0")


def _runtime_step(w: WorkloadPlan) -> Step:
    tp = w.throughput
    if tp.source == "service":
        return Step("Runtime", f"{fmt_hours_precise(w.runtime_hours)} h kept up (given in the workload file)")
    return Step("Runtime", f"{fmt_count(w.tokens)} tokens ÷ {fmt_rate(tp.tokens_per_second)} tokens/s ÷ "
                           f"{SECONDS_PER_HOUR:,} s/h = {fmt_hours_precise(w.runtime_hours)} h per run")


def _gpu_hours_step(w: WorkloadPlan) -> Step:
    s = w.settings
    runs = "1 run" if s.variants == 1 else f"{s.variants} runs"
    return Step("GPU-hours", f"{fmt_hours_precise(w.runtime_hours)} h × {_gpus(w.gpu_count)} × {runs} = "
                             f"{fmt_hours_precise(w.gpu_hours)}; × (1 + {fmt_pct(s.buffer)} buffer) = "
                             f"{fmt_hours_precise(w.gpu_hours_requested)} requested")


def _walltime_step(w: WorkloadPlan) -> Step | None:
    segments = getattr(w, "walltime_segments", 1) or 1
    limit = getattr(w, "walltime_hours", None)
    if segments <= 1 or limit is None:
        return None
    return Step("Walltime", f"⌈{fmt_hours_precise(w.runtime_hours)} h ÷ {fmt_hours(limit)} h job limit⌉ = "
                            f"{segments} jobs per run, chained through checkpoints")


def _calendar_step(w: WorkloadPlan, days: float | None) -> Step | None:
    if days is None:
        return None
    s = w.settings
    if s.variants == 1:
        return Step("Calendar", f"{fmt_hours_precise(w.runtime_hours)} h ÷ 24 = {fmt_days(days)} days "
                                "(queue wait not included)")
    waves = math.ceil(s.variants / s.concurrency)
    return Step("Calendar", f"⌈{s.variants} runs ÷ {s.concurrency} at once⌉ = {waves} × "
                            f"{fmt_hours_precise(w.runtime_hours)} h ÷ 24 = {fmt_days(days)} days "
                            "(queue wait not included)")


def _settings(w: WorkloadPlan) -> tuple[Setting, ...]:
    s = w.settings
    out = [Setting("precision", s.precision)]
    if w.kind == "inference":
        if s.context:
            out.append(Setting("context", f"{fmt_count(s.context)} tokens"))
        out.append(Setting("concurrent sequences", fmt_count(s.batch or 1)))
    else:
        out += [Setting("sequence length", f"{fmt_count(s.seq_len)} tokens"),
                Setting("micro-batch", fmt_count(s.micro_batch)),
                Setting("optimizer", s.optimizer),
                Setting("ZeRO stage", str(w.zero_stage or 0)),
                Setting("activation checkpointing", "on" if w.activation_checkpointing else "off"),
                Setting("FlashAttention", "on" if s.flash_attention else "off")]
        if s.tensor_parallel > 1 or s.pipeline_parallel > 1:
            out.append(Setting("tensor × pipeline parallel", f"{s.tensor_parallel} × {s.pipeline_parallel}"))
        if s.lora is not None:
            out.append(Setting("LoRA", f"rank {s.lora.rank} on {', '.join(s.lora.targets)}"))
        if w.trainable_params is not None:
            out.append(Setting("trainable parameters", fmt_count(w.trainable_params)))
    if s.concurrency > 1:
        out.append(Setting("concurrent runs", fmt_count(s.concurrency)))
    return tuple(out)


def _storage(w: WorkloadPlan) -> tuple[StorageView | None, list[Step]]:
    st = getattr(w, "storage", None)
    if st is None:
        return None, []
    view = StorageView(st.checkpoint_bytes, st.retained, st.concurrency, st.peak_scratch_bytes,
                       st.dataset_bytes, st.final_weights_bytes, st.variants)
    details = [Step("Checkpoint", f"{fmt_size(st.checkpoint_bytes)} = {st.checkpoint_arithmetic}"),
               Step("Dataset", st.dataset_arithmetic)]
    return view, details


def workload_view(w: WorkloadPlan, appendix: str = "Appendix A") -> WorkloadView:
    """Everything the templates show for one workload, derivations written out."""
    kind, short_kind = _kind(w)
    total = w.memory.total
    components = tuple(Component(_COMPONENT_NAMES[k], b, b / total if total else 0.0)
                       for k, b in w.memory.components().items() if b)
    all_gpus = total * w.gpu_count
    checks = tuple(CrossCheckRow(c.name, c.formula, c.bytes, c.bytes / all_gpus if all_gpus else None, c.source)
                   for c in w.cross_checks)
    throughput, details = _throughput_steps(w, appendix)
    steps = [_memory_step(w)]
    if w.throughput.source != "service" and "×" in w.tokens_derivation:
        # A product (samples × length × epochs); tokens given outright appear in the runtime line.
        steps.append(Step("Tokens", w.tokens_derivation))
    steps += throughput
    steps += [_runtime_step(w), _gpu_hours_step(w)]
    charge = getattr(w, "charge", None)
    if charge is not None:
        steps.append(Step(charge.unit, f"{charge.resource_id}: {charge.arithmetic}"))
    days = getattr(w, "calendar_days", None)
    for step in (_calendar_step(w, days), _walltime_step(w)):
        if step is not None:
            details.append(step)
    storage, storage_details = _storage(w)
    details += storage_details
    return WorkloadView(
        name=w.name, kind=kind, short_kind=short_kind, description=w.description,
        model_id=w.model.id, model_name=w.model.name, params=w.model.params,
        gpu_id=w.gpu.id, gpu_name=w.gpu.name, gpu_count=w.gpu_count,
        usable_bytes=w.gpu.usable_memory_bytes, memory_bytes=total, components=components,
        tokens=None if w.throughput.source == "service" else w.tokens,
        throughput_source=w.throughput.source, runtime_hours=w.runtime_hours, variants=w.settings.variants,
        gpu_hours=w.gpu_hours, buffer=w.settings.buffer, gpu_hours_requested=w.gpu_hours_requested,
        steps=tuple(steps), details=tuple(details), settings=_settings(w),
        alternatives=w.alternatives,
        cross_checks=checks, assumptions=tuple(w.assumptions), warnings=tuple(w.warnings),
        charge_amount=getattr(charge, "amount", None), charge_unit=getattr(charge, "unit", None),
        charge_resource=getattr(charge, "resource_id", None),
        storage=storage, calendar_days=days,
    )


def _title(plan: Plan) -> TitleBlock:
    p = plan.proposal
    get = (lambda name: getattr(p, name, None)) if p is not None else (lambda name: None)
    return TitleBlock(get("title"), get("pi"), get("institution"), get("resource"), get("track"), get("date"))


def _references(plan: Plan, views: tuple[WorkloadView, ...]) -> tuple[Reference, ...]:
    """The papers the report's text cites, then every GPU datasheet, resource and model config used."""
    text = "\n".join(
        [s.text for v in views for s in v.steps + v.details]
        + [a for v in views for a in v.assumptions]
        + [c.source + " " + c.name for v in views for c in v.cross_checks]
        + [a.reason for v in views for a in v.alternatives]
        + list(plan.warnings)
    )
    refs = [Reference(key, full) for key, pattern, full in PAPERS if re.search(pattern, text)]
    seen: set[str] = set()
    for w in plan.workloads:
        if w.gpu.id not in seen:
            seen.add(w.gpu.id)
            usable = getattr(w.gpu, "usable_memory_source", "")
            refs.append(Reference(w.gpu.name, " ".join(w.gpu.source.split())
                                  + (f" Usable memory: {' '.join(usable.split())}" if usable else "")))
    for w in plan.workloads:
        charge = getattr(w, "charge", None)
        if charge is not None and charge.resource_id not in seen:
            seen.add(charge.resource_id)
            r = res_catalog.resource(charge.resource_id)
            refs.append(Reference(r.name, " ".join(r.source.split())))
    for w in plan.workloads:
        if w.model.id not in seen and w.model.source:
            seen.add(w.model.id)
            refs.append(Reference(w.model.name, " ".join(w.model.source.split())))
    return tuple(refs)


def _charts(views: tuple[WorkloadView, ...]) -> dict[str, Chart]:
    bars = [(v.name, v.gpu_hours_requested, f"{fmt_hours(v.gpu_hours_requested)}") for v in views]
    gpu_svg = charts.bar_chart(bars, title="Requested GPU-hours per workload, buffer included",
                               unit="GPU-hours requested")
    stacked = [charts.StackedBar(
        label=v.name,
        parts=tuple((c.name, c.bytes / GiB) for c in v.components),
        capacity=v.usable_bytes / GiB,
        shown=f"{fmt_gib(v.memory_bytes, 1, unit=False)} of {fmt_gib(v.usable_bytes)} ({v.gpu_id})",
    ) for v in views]
    mem_svg = charts.memory_chart(stacked, title="Memory per GPU by component against the GPU's usable memory",
                                  unit="GiB per GPU")

    def height(svg: str) -> float:
        return float(re.search(r'height="([0-9.]+)"', svg).group(1))

    return {
        "gpu_hours": Chart(gpu_svg, CHART_FILES["gpu_hours"], "Requested GPU-hours per workload, buffer included",
                           height(gpu_svg)),
        "memory": Chart(mem_svg, CHART_FILES["memory"], "Memory per GPU by component against the GPU's usable "
                        "memory", height(mem_svg)),
    }


def _limit_hours(hours: float) -> str:
    """A walltime limit: '48 h', '0.5 h'."""
    return f"{hours:,.0f} h" if hours == round(hours) else f"{fmt_hours(hours)} h"


def _walltime_text(res: res_catalog.Resource, gpus_per_job: tuple[int, ...]) -> str:
    """The per-job walltime limit(s) that apply to jobs of these sizes; tiers name their node range."""
    parts = []
    for gpus in gpus_per_job:
        limit = res.walltime_limit_hours(gpus)
        tier = res.walltime_tier(gpus)
        if limit is None:
            text = "none"
        elif tier is not None:
            text = f"{_limit_hours(limit)} ({tier.min_nodes}–{tier.max_nodes} nodes)"
        else:
            text = _limit_hours(limit)
        if text not in parts:
            parts.append(text)
    return "; ".join(parts)


def resources_view(plan: Plan) -> ResourcesView | None:
    """The units table: for each resource (partition) used, requested GPU-hours → rule → amount.

    Amounts are the planner's charges summed (whole-node rounding and per-job
    minimums already applied per workload). Totals are per system and unit:
    partitions of one system draw on one allocation in the same unit (Delta's
    A100, A40 and H200 SUs), so their amounts add; amounts on different
    systems are never added, even when both are called SUs. Workloads with no
    target resource get a row per GPU type in GPU-hours. None when no workload
    has a target resource.
    """
    if all(getattr(w, "charge", None) is None for w in plan.workloads):
        return None
    keyed: dict[tuple[str | None, str], list[WorkloadPlan]] = {}
    for w in plan.workloads:
        charge = getattr(w, "charge", None)
        key = (charge.resource_id, charge.gpu_type) if charge is not None else (None, w.gpu.id)
        keyed.setdefault(key, []).append(w)
    rows = []
    for (rid, gpu), ws in sorted(keyed.items(), key=lambda item: item[0][0] is None):   # stable: uncharged last
        if rid is None:
            hours = sum(w.gpu_hours_requested for w in ws)
            rows.append(ResourceRow(
                resource_id=None, system="", partition="", name="", gpu_type=gpu, gpus_per_node=None,
                rule="GPU-hours as requested", rule_source="", rule_confidence="",
                gpu_hours_requested=hours, amount=hours, unit="GPU-hours",
                walltime="—", walltime_source="", walltime_confidence="", workloads=tuple(w.name for w in ws)))
            continue
        res = res_catalog.resource(rid)
        rows.append(ResourceRow(
            resource_id=rid, system=res_catalog.system_of(rid), partition=res.partition, name=res.name,
            gpu_type=gpu, gpus_per_node=res.gpus_per_node, rule=res_catalog.describe_rule(res),
            rule_source=" ".join(res.source.split()), rule_confidence=res.confidence,
            gpu_hours_requested=sum(w.charge.gpu_hours for w in ws),
            amount=sum(w.charge.amount for w in ws), unit=res.unit,
            walltime=_walltime_text(res, tuple(w.charge.gpus_per_job for w in ws)),
            walltime_source=" ".join(res.walltime_source.split()), walltime_confidence=res.walltime_confidence,
            workloads=tuple(w.name for w in ws),
        ))
    groups: dict[tuple[str, str], list[ResourceRow]] = {}
    for row in rows:
        groups.setdefault((row.system, row.unit), []).append(row)
    totals = []
    for (system, unit), members in groups.items():
        ids = list(dict.fromkeys(m.resource_id for m in members))
        label = (ids[0] if len(ids) == 1 else system) if system else "no target resource"
        totals.append(UnitTotal(label=label, system=system, unit=unit,
                                gpu_hours_requested=sum(m.gpu_hours_requested for m in members),
                                amount=sum(m.amount for m in members), rows=len(members)))
    used = {c for row in rows for c in (row.rule_confidence, row.walltime_confidence)}
    notes = tuple((mark, CONFIDENCE_NOTES[level]) for level, mark in CONFIDENCE_MARKS.items() if level in used)
    return ResourcesView(rows=tuple(rows), totals=tuple(totals), notes=notes)


def report_context(plan: Plan) -> ReportContext:
    """The context the templates get: views of the plan with every derivation written out."""
    views = tuple(workload_view(w, f"A.{i}") for i, w in enumerate(plan.workloads, start=1))
    by_gpu: dict[str, list] = {}
    for w in plan.workloads:
        row = by_gpu.setdefault(w.gpu.id, [w.gpu.name, 0.0, 0.0])
        row[1] += w.gpu_hours
        row[2] += w.gpu_hours_requested
    by_resource: dict[tuple[str, str], float] = {}
    for v in views:
        if v.charge_amount is not None:
            key = (v.charge_resource or "", v.charge_unit or "")
            by_resource[key] = by_resource.get(key, 0.0) + v.charge_amount
    storage = None
    if any(v.storage is not None for v in views):
        t = plan.storage_totals()
        storage = StorageTotals(t.project_bytes, t.scratch_bytes, t.archive_bytes)
    days = [v.calendar_days for v in views if v.calendar_days is not None]
    return ReportContext(
        heading="B. Estimate of Compute, Storage and Other Resources",
        title=_title(plan),
        workloads=views,
        gpu_hours=plan.gpu_hours,
        gpu_hours_requested=plan.gpu_hours_requested,
        by_gpu=tuple(GpuTotal(k, v[0], v[1], v[2]) for k, v in by_gpu.items()),
        by_resource=tuple(ResourceTotal(r, u, a) for (r, u), a in by_resource.items()),
        resources=resources_view(plan),
        has_charges=any(v.charge_amount is not None for v in views),
        has_storage=storage is not None,
        storage=storage,
        calendar_days=sum(days) if days else None,
        warnings=tuple(plan.warnings),
        references=_references(plan, views),
        charts=_charts(views),
        access=_access_view(plan),
    )


# --------------------------------------------------------------------------
# Rendering.
# --------------------------------------------------------------------------


def environment(kind: str):
    """The Jinja2 environment for 'md' or 'html': StrictUndefined, filters in one place.

    HTML autoescapes; Markdown escapes every printed string with md_escape
    (through `finalize`) unless it is already Safe.
    """
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=(kind == "html"),
        undefined=StrictUndefined,
        finalize=_finalize_html if kind == "html" else _finalize_md,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(FILTERS)
    if kind == "md":
        env.filters["md"] = md_escape
    return env


def render_markdown(context: ReportContext) -> str:
    text = environment("md").get_template("report.md.j2").render(r=context)
    return re.sub(r"\n{3,}", "\n\n", text)


def render_html(context: ReportContext) -> str:
    from markupsafe import Markup

    charts_html = {k: Markup(c.svg) for k, c in context.charts.items()}   # built by charts.py, escaped there
    return environment("html").get_template("report.html.j2").render(r=context, svg=charts_html)


def plan_markdown_table(plan: Plan) -> str:
    """The summary table alone (`proposalkit plan --format markdown`)."""
    context = report_context(plan)
    text = environment("md").get_template("summary.md.j2").render(r=context, in_report=False)
    return text if text.endswith("\n") else text + "\n"      # a text stream ends its last line


# --------------------------------------------------------------------------
# PDF: WeasyPrint, with a fetcher that reads nothing outside the templates folder.
# --------------------------------------------------------------------------


class RefusedURL(ValueError):
    """A URL the report's PDF renderer will not fetch."""


def allowed_path(url: str, root: Path = TEMPLATES_DIR) -> Path:
    """The file inside `root` that a file: URL names; RefusedURL for anything else.

    Only file: URLs are considered (no http, https, ftp, data); the path is
    resolved (symlinks, '..') before it is compared with the resolved root.
    """
    parts = urlsplit(url)
    if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost"):
        raise RefusedURL(f"refused to fetch {url!r}: only files in {root} may be read")
    path = Path(unquote(parts.path)).resolve()
    base = root.resolve()
    if path != base and base not in path.parents:
        raise RefusedURL(f"refused to fetch {url!r}: outside {root}")
    if not path.is_file():
        raise RefusedURL(f"refused to fetch {url!r}: not a file")
    return path


def _import_weasyprint():
    import weasyprint
    return weasyprint


def safe_url_fetcher(root: Path = TEMPLATES_DIR):
    """A WeasyPrint URL fetcher that serves files under `root` and refuses every other URL.

    Refused URLs are recorded in `.refused` (WeasyPrint logs the error and
    renders without the resource).
    """
    weasyprint = _import_weasyprint()
    from weasyprint.urls import URLFetcher, URLFetcherResponse

    class TemplatesOnlyFetcher(URLFetcher):
        def __init__(self):
            super().__init__(allowed_protocols=("file",))
            self.refused: list[str] = []

        def fetch(self, url, headers=None):
            try:
                path = allowed_path(url, root)
            except RefusedURL:
                self.refused.append(url)
                raise
            mime = {".css": "text/css", ".svg": "image/svg+xml", ".png": "image/png"}.get(path.suffix, "")
            return URLFetcherResponse(path.as_uri(), path.read_bytes(), {"Content-Type": mime} if mime else {})

    del weasyprint
    return TemplatesOnlyFetcher()


# Font subsets carry a 'modified' timestamp (the TrueType head table), which
# fontTools takes from SOURCE_DATE_EPOCH when it is set
# (https://reproducible-builds.org/specs/source-date-epoch/). A fixed default
# (1980-01-01, the ZIP epoch) makes two builds of the same plan byte-identical;
# a SOURCE_DATE_EPOCH the user set is kept.
DEFAULT_SOURCE_DATE_EPOCH = "315532800"


@contextlib.contextmanager
def _fixed_source_date():
    if "SOURCE_DATE_EPOCH" in os.environ:
        yield
        return
    os.environ["SOURCE_DATE_EPOCH"] = DEFAULT_SOURCE_DATE_EPOCH
    try:
        yield
    finally:
        os.environ.pop("SOURCE_DATE_EPOCH", None)


def render_pdf(html: str, fetcher=None) -> tuple[bytes, float | None]:
    """PDF bytes from the report HTML, and the body's length in pages (None without a body-end mark).

    The body's length is the page holding the `body-end` anchor (the last
    element before the appendix) plus the fraction of that page above it:
    2.25 is two full pages and a quarter of the third.

    No creation or modification date is written (the HTML has no dcterms
    meta), no file identifier, and font subsets get a fixed timestamp, so the
    same HTML gives the same bytes.
    """
    weasyprint = _import_weasyprint()
    fetcher = fetcher if fetcher is not None else safe_url_fetcher()
    with _fixed_source_date():
        document = weasyprint.HTML(string=html, base_url=TEMPLATES_DIR.as_uri() + "/",
                                   url_fetcher=fetcher).render()
        body_pages = None
        for index, page in enumerate(document.pages):
            if "body-end" in page.anchors:
                body_pages = index + page.anchors["body-end"][1] / page.height
        return document.write_pdf(), body_pages


# --------------------------------------------------------------------------
# Writing.
# --------------------------------------------------------------------------


def _file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to a temporary file beside `path`, fsync it, then os.replace it into place.

    A reader sees the old file or the new one, never a half-written one; on
    any failure the temporary file is removed and `path` is untouched.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _file_mode())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def estimate_body_lines(markdown: str, context: ReportContext) -> float:
    """Printed lines of the body (the Markdown before the appendix marker), when no PDF is built.

    Rule: a heading counts 2 lines; a table row 1.3 (cell padding, 9-pt
    text), its |---| rule 0; a chart its SVG height ÷ 18 px; any other line
    ⌈characters ÷ 100⌉; a blank line 0.4. LINES_PER_PAGE of them make a
    page. When a PDF is built, its measured body length (render_pdf) is used
    instead.
    """
    body = markdown.split(APPENDIX_MARKER)[0]
    heights = {c.path: c.height for c in context.charts.values()}
    lines = 0.0
    for line in body.splitlines():
        stripped = line.strip()
        if not stripped:
            lines += 0.4
        elif stripped.startswith("#"):
            lines += 2
        elif re.fullmatch(r"\|[\s:|-]+\|", stripped):
            continue
        elif stripped.startswith("|"):
            lines += 1.3
        elif stripped.startswith("!["):
            path = re.search(r"\]\(([^)]+)\)", stripped)
            lines += heights.get(path.group(1) if path else "", 200) / PX_PER_LINE
        else:
            lines += math.ceil(len(stripped) / CHARS_PER_LINE)
    return lines


def write_reports(plan: Plan, out_dir: str, formats) -> list[str]:
    """Write report.md (with charts/*.svg beside it), report.html and report.pdf into `out_dir`.

    Returns the paths written. Prints a warning on stderr when the body runs
    past BODY_PAGES pages. Raises PdfUnavailableError, after writing the other
    formats, when WeasyPrint or Pango cannot be loaded.
    """
    out = Path(out_dir)
    context = report_context(plan)
    written: list[str] = []
    markdown = render_markdown(context)
    if "md" in formats:
        for chart in context.charts.values():
            write_atomic(out / chart.path, chart.svg.encode("utf-8"))
            written.append(str(out / chart.path))
        write_atomic(out / "report.md", markdown.encode("utf-8"))
        written.append(str(out / "report.md"))
    html = render_html(context) if ("html" in formats or "pdf" in formats) else None
    if "html" in formats:
        write_atomic(out / "report.html", html.encode("utf-8"))
        written.append(str(out / "report.html"))
    body_pages = None      # measured in the PDF when one is built, else estimated
    if "pdf" in formats:
        try:
            _import_weasyprint()
        except (ImportError, OSError) as error:
            done = f"; wrote {', '.join(written)}" if written else ""
            raise PdfUnavailableError(
                f"proposalkit report: cannot write {out / 'report.pdf'}: WeasyPrint could not load "
                f"({type(error).__name__}: {' '.join(str(error).split())[:200]}). To build PDFs, {PANGO_HELP}; "
                f"or pass --format md,html{done}", written) from None
        pdf, body_pages = render_pdf(html)
        write_atomic(out / "report.pdf", pdf)
        written.append(str(out / "report.pdf"))
    if body_pages is None:
        body_pages = estimate_body_lines(markdown, context) / LINES_PER_PAGE
        how = "estimated from the Markdown"
    else:
        how = "in the PDF"
    if body_pages > BODY_PAGES + PAGE_TOLERANCE:
        print(f"proposalkit report: warning: the section B body runs to {body_pages:.1f} pages {how}; about "
              f"{BODY_PAGES} fit a NAIRR proposal of about 3 pages: shorten descriptions, or move workloads "
              "to a separate request", file=sys.stderr)
    return written
