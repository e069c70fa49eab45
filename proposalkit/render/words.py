"""Section B's sentences, worded from the plan's records: each workload's derivation in one line, the FLOPs
formula's symbols (defined once), storage and calendar under one concurrency assumption, and the caveats.

The figures are the plan's, formatted by format.py as everywhere else: the supplement's full derivation
and `proposalkit plan` give the same ones (tests/test_section_b.py).
"""

from __future__ import annotations

from ..planning.records import Plan, StorageTotals, WorkloadPlan
from ..units import ms_text
from .format import and_list, fmt_count, fmt_days, fmt_gib, fmt_hours, fmt_rate, fmt_si

# How a rate without a pilot is estimated, said once in section B (estimate/flops.py FlopsPerToken).
RATE_RULE = ("Without a pilot, tokens/s = GPUs × peak 16-bit FLOP/s × MFU ÷ FLOPs per token, with FLOPs per token "
             "= {dense} + 12·L·H·Q·T ({sources}): N the weights in matrix multiplies, L layers, H attention heads of "
             "Q dimensions, T tokens per sequence.")


def _gpus(n: int, gpu: str) -> str:
    return f"{n}× {gpu}"


def tokens_words(w: WorkloadPlan) -> str:
    """How a training run's tokens were counted: samples × length × epochs, or as given."""
    d = w.data
    if d is not None:
        return (f"{fmt_count(d.samples)} samples × {fmt_count(d.seq_len)} tokens × {d.epochs:g} "
                f"epoch{'' if d.epochs == 1 else 's'} = {fmt_si(w.tokens)} tokens")
    return f"{fmt_si(w.tokens)} tokens"


def batch_tokens_words(w: WorkloadPlan) -> str:
    """A batch job's tokens generated: requests × output tokens."""
    i = w.inference
    return f"{fmt_si(i.requests)} requests × {fmt_count(i.output_tokens)} output tokens = {fmt_si(w.tokens)} tokens generated"


def n_explained(w: WorkloadPlan, n: int) -> str:
    """'N = 7,070,619,136, the 7,615,616,512 parameters less the input embedding'."""
    return f"N = {fmt_count(n)}, {_difference(w, n)}"


def _difference(w: WorkloadPlan, n: int) -> str:
    """Why N differs from the model's parameter count (catalog/shapes.py matmul_params), in a few words."""
    m = w.model
    if n == m.params:
        return "all the parameters"
    of = (f"the {fmt_count(m.active_params)} a token uses of {fmt_count(m.params)} (mixture of experts)"
          if m.active_params != m.params else f"the {fmt_count(m.params)} parameters")
    if m.active_params == n:
        return of
    return of + " less the input embedding" + (" and the vision tower" if m.vision_params else "")


def rate_clause(w: WorkloadPlan) -> str:
    """Where the tokens/s came from, in one clause."""
    tp = w.throughput
    rate = f"{fmt_rate(tp.tokens_per_second)} tokens/s"
    if tp.source == "pilot" and w.pilots:
        run = w.pilots[0].run
        if run.illustrative:
            return f"{rate} from an illustrative {run.format} pilot log, not a measurement, on {_gpus(run.gpus, run.gpu)}"
        # A log without per-step figures (a Trainer's trainer_state.json, a benchmark's result) gives one rate
        # over its whole run: for training, the warm-up steps are in it (pilot/documents.py).
        steps = f"its {run.steps_used:,} steady steps" if run.steps_used else "a whole-run average"
        return f"{rate} measured in a pilot on {_gpus(run.gpus, run.gpu)} ({run.format} log, {steps})"
    if tp.source == "pilot":
        return f"{rate} measured on {_gpus(w.gpu_count, w.gpu.id)}"
    if tp.source == "pilot-extrapolated":
        return f"{rate} extrapolated from a pilot: {tp.derivation}"
    fpt = tp.flops_per_token
    if fpt is None or tp.mfu is None:
        return f"{rate} ({tp.derivation})"
    shape = ""
    if fpt.attention_shape is not None:
        layers, heads, head_size, seq_len = fpt.attention_shape
        shape = f"; L = {layers}, H = {heads}, Q = {head_size}, T = {fmt_count(seq_len)}"
    counted = f"{fpt.dense_factor}·N with {n_explained(w, fpt.matmul_params)}{shape}"
    if tp.step is not None:
        # The step's parts time the step; the rate is tokens per step ÷ that time as printed, and the MFU is what
        # it implies (an equation with the rounded MFU would not give the printed rate).
        step = tp.step
        return (f"{rate} ({step.tokens:,} tokens per step ÷ {ms_text(step.seconds)}: MFU {_mfu(tp.mfu)} at "
                f"{fpt.model / 1e9:,.2f} GFLOP per token; {counted})")
    return (f"{rate} ({w.gpu_count} × {w.gpu.peak_16bit_flops / 1e12:,.0f} TFLOP/s × MFU {_mfu(tp.mfu)} ÷ "
            f"{fpt.model / 1e9:,.2f} GFLOP; {counted})")


def _mfu(x: float) -> str:
    """MFU with two decimals, three when the third is not zero: 0.40, 0.313."""
    return f"{x:.3f}".removesuffix("0")


def derivation_line(w: WorkloadPlan) -> str:
    """One workload's hours per run, from what it processes and how fast."""
    i = w.inference
    if i is not None and i.mode == "rate":
        capacity = ""
        if i.rate_per_replica_max is not None:
            targets = [f"TTFT p{i.ttft_percentile:g} ≤ {fmt_count(i.ttft_target_ms)} ms"
                       if i.ttft_target_ms is not None else "",
                       f"TPOT ≤ {i.tpot_target_ms:g} ms" if i.tpot_target_ms is not None else ""]
            within = " and ".join(t for t in targets if t) or "the KV pool's limit"
            capacity = (f"; one replica sustains {i.rate_per_replica_max:,.3g} requests/s within {within} "
                        f"({i.engine}, estimated)")
        replicas = f"{i.replicas} replica{'s' if i.replicas > 1 else ''} of {i.tensor_parallel} GPU" + (
            "s" if i.tensor_parallel > 1 else "")
        return (f"kept up {fmt_hours(w.runtime_hours)} h (given) by {replicas} for {i.request_rate:g} "
                f"request{'' if i.request_rate == 1 else 's'}/s of {fmt_count(i.input_tokens)} prompt and "
                f"{fmt_count(i.output_tokens)} output tokens{capacity}.")
    if i is not None and i.mode == "hours":
        return (f"kept up {fmt_hours(w.runtime_hours)} h (given), {fmt_count(i.batch)} sequences of "
                f"{fmt_count(i.context)} tokens at once on {_gpus(w.gpu_count, w.gpu.id)} (its KV cache holds "
                f"{fmt_count(i.max_concurrency)}).")
    if i is not None and i.mode == "batch":
        return (f"{batch_tokens_words(w)} at {fmt_rate(i.output_tokens_per_second)} output tokens/s "
                f"({i.engine}, batch {fmt_count(i.batch)}, estimated) = {fmt_hours(w.runtime_hours)} h per run.")
    return f"{tokens_words(w)} at {rate_clause(w)} = {fmt_hours(w.runtime_hours)} h per run."


def flops_rule(workloads) -> str | None:
    """How the rates without a pilot are estimated, once, with the formulas' symbols and sources."""
    dense: dict[int, str] = {}
    attention = None
    for w in workloads:
        fpt = w.throughput.flops_per_token
        if w.throughput.source == "flops" and fpt is not None:
            dense.setdefault(fpt.dense_factor, fpt.dense_source)
            attention = fpt.attention_source
    if not dense:
        return None
    factors = sorted(dense, reverse=True)
    term = f"{factors[0]}·N" + "".join(f" ({f}·N for LoRA and QLoRA: frozen weights need no weight gradients)"
                                         for f in factors[1:])
    sources = "; ".join(f"{f}·N: {dense[f]}" for f in factors) + f"; 12·L·H·Q·T: {attention}"
    return RATE_RULE.format(dense=term, sources=sources)


def storage_sentence(plan: Plan) -> str | None:
    """Calendar time and storage under the one assumption the plan makes: the workloads one after another."""
    stored = [w for w in plan.workloads if w.storage is not None]
    if not stored:
        return None
    totals = plan.storage_totals()
    fullest = max(stored, key=lambda w: w.storage.peak_scratch_bytes)
    st = fullest.storage
    what = (f" ({fullest.name}'s {st.retained} checkpoint{'s' if st.retained > 1 else ''}"
            + (f" × {st.concurrency} runs" if st.concurrency > 1 else "") + (" and data" if st.dataset_bytes else "")
            + ")") if st.checkpoint_bytes else ""
    # A store the plan does not use is said to be unused, not "0.00 GiB" (a reviewer reads a zero as a slip), and
    # each store names only what it holds: an inference service makes no final weights to keep.
    scratch = (f"scratch at most {fmt_gib(totals.scratch_bytes, 2)} at once{what}" if totals.scratch_bytes
               else "no scratch")
    project = (f"project {fmt_gib(totals.project_bytes, 2)} ({and_list(_project_contents(totals, SHORT))})"
               if totals.project_bytes else "no project space")
    archive = (f"archive {fmt_gib(totals.archive_bytes, 2)} ({and_list(_archive_contents(totals, SHORT))})"
               if totals.archive_bytes else "no archive")
    return (f"{ONE_AFTER_ANOTHER}, each at its stated concurrency: {fmt_days(plan.calendar_days)} "
            f"days of calendar time, queue wait not included; {scratch}; {project}; {archive}.")


# The plan's one concurrency assumption, which calendar time (Plan.calendar_days adds the workloads' days) and
# scratch (storage_totals takes the largest workload's peak) both make.
ONE_AFTER_ANOTHER = "The workloads run one after another"

# What project space and the archive hold, in section B's sentence (SHORT) and under the supplement's table (LONG).
SHORT = {"data": "data", "model": "model weights", "final": "final weights", "raw": "raw data"}
LONG = {"data": "the datasets (tokenized and raw)", "model": "the model files the workloads start from",
        "final": "every run's final weights", "raw": "the raw data"}


def _project_contents(totals: StorageTotals, words: dict[str, str]) -> list[str]:
    return [words[k] for k, size in (("data", totals.data_bytes), ("model", totals.model_weights_bytes),
                                     ("final", totals.final_weights_bytes)) if size]


def _archive_contents(totals: StorageTotals, words: dict[str, str]) -> list[str]:
    return [words[k] for k, size in (("final", totals.final_weights_bytes), ("raw", totals.raw_data_bytes)) if size]


def storage_note(plan: Plan) -> str | None:
    """The note under the supplement's storage table: how its peaks are worked, what project space and the
    archive hold (only what the plan stores) and their totals."""
    stored = [w.storage for w in plan.workloads if w.storage is not None]
    if not stored:
        return None
    totals = plan.storage_totals()
    project = (f"Project space holds {and_list(_project_contents(totals, LONG))}: "
               f"{fmt_gib(totals.project_bytes, 2)} in all" if totals.project_bytes else "No project space is needed")
    if any(st.model_weights_shared_with for st in stored):
        project += ", each model file counted once (\"shared with\": the copy of an earlier workload)"
    archive = (f"the archive keeps {and_list(_archive_contents(totals, LONG))}: {fmt_gib(totals.archive_bytes, 2)}"
               if totals.archive_bytes else "nothing is archived")
    scratch = (f"Peak scratch = checkpoint × kept × runs at once + dataset (NAIRR community guide); "
               f"{ONE_AFTER_ANOTHER[0].lower()}{ONE_AFTER_ANOTHER[1:]}, so the most any one needs is the request's."
               if totals.scratch_bytes else "No workload keeps checkpoints or data on scratch.")
    return f"{scratch} {project}; {archive}. Each sum is worked from the sizes as printed."


def caveats(plan: Plan) -> tuple[str, ...]:
    """The plan's warnings as statements, one sentence each; the same statement of several workloads once.

    A workload's warnings begin with its name (planner.py); the plan's own (its caps) follow them."""
    out: dict[str, list[str]] = {}
    own = set()
    for w in plan.workloads:
        if any(c.run.illustrative for c in w.pilots):
            out.setdefault("its pilot log is illustrative, an example, not a measurement", []).append(w.name)
        for text in w.warnings:
            own.add(text)
            out.setdefault(text.removeprefix(f"{w.name}: "), []).append(w.name)
    for text in plan.warnings:
        if text not in own:
            out.setdefault(text[0].upper() + text[1:], [])
    return tuple((f"{', '.join(who)}: " if who else "") + (text if text.endswith(".") else text + ".")
                 for text, who in out.items())
