"""Workload files → validated workloads (LoadedFile), with every problem reported as FILE:LINE: field: message.

All problems of a file are collected before giving up. The YAML with its
line map is yamlfile.py, the wording of messages messages.py, config.json
reading model_config.py.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from pydantic import ValidationError

from .. import catalog
from ..errors import InputError, Problem
from ..notes import Note
from ..catalog.shapes import ModelSpec
from ..units import SECONDS_PER_HOUR
from .messages import translate, unknown_gpu, unknown_model, unknown_resource
from .price_rules import price_problems, proposal_price_problem
from .hub import looks_like_hub_id, revision_problem
from .inference_rules import inference_problems
from .mapping import from_mapping, lora_target_problem
from .model_config import read_config, read_hub_config
from .pilots import measured_throughput, read_pilots
from ..bounds import BOUNDS
from ..files import WORKLOAD_FILE, Refused, read_limited
from .frameworks import Behaviour, apply_preset, behaviour, framework_problem
from .schema import UNION_TAGS, Proposal, Workload, WorkloadFile
from .lengths import LengthStats, length_stats
from .values import AUTO, describe
from .source import Path, Source, field_name
from .from_python import plain_values
from .yamlfile import parse_yaml
from .state_rules import state_rules


@dataclass(frozen=True)
class LoadedWorkload:
    """A validated workload with its model resolved and where it came from."""

    spec: Workload
    model: ModelSpec
    path: str
    line: int | None
    index: int
    preset_notes: tuple[Note, ...] = ()      # the framework preset's defaults, as assumptions (frameworks.py)
    lines: tuple[tuple[str, int | None], ...] = ()     # (field, line) of the fields the workload sets
    # A batch job's input and output lengths where given as distributions ({mean, p50, p99}); the spec holds their
    # means as input_tokens and output_tokens.
    lengths: tuple[LengthStats | None, LengthStats | None] = (None, None)

    @functools.cached_property
    def behaviour(self) -> Behaviour:
        """The workload's framework as behaviour flags (frameworks.py), resolved once."""
        return behaviour(self.spec)

    def field_line(self, name: str) -> int | None:
        """The line of a field of this workload (its own, or its default's), else the workload's."""
        return next((line for field, line in self.lines if field == name and line), self.line)


@dataclass(frozen=True)
class LoadedFile:
    path: str
    proposal: Proposal | None
    workloads: tuple[LoadedWorkload, ...]
    lines: tuple[tuple[str, int | None], ...] = ()     # (field, line): `proposal`, its fields, `workloads`

    def field_line(self, name: str) -> int | None:
        """The line of `proposal`, a field of it (proposal.track) or `workloads`; None where the file has none."""
        return next((line for field, line in self.lines if field == name), None)


def _merge_defaults(data: dict, source: Source) -> dict:
    """Copy each `defaults` field into every workload that does not set it."""
    defaults = data.get("defaults")
    workloads = data.get("workloads")
    if not isinstance(defaults, dict) or not isinstance(workloads, list):
        return data
    merged = []
    for index, workload in enumerate(workloads):
        if isinstance(workload, dict):
            workload = dict(workload)
            for key, value in defaults.items():
                if key not in workload and key in Workload.model_fields and key != "name":
                    workload[key] = value
                    _copy_lines(source, ("defaults", key), ("workloads", index, key))
        merged.append(workload)
    return {**data, "workloads": merged}


def _copy_lines(source: Source, src: Path, dst: Path) -> None:
    for path, line in list(source.lines.items()):
        if path[: len(src)] == src:
            moved = dst + path[len(src):]
            source.lines[moved] = line
            source.from_defaults.add(moved)


def _resolve_model(workload: Workload, index: int, source: Source, base_dir: str) -> tuple[ModelSpec | None, list[Problem]]:
    at = ("workloads", index, "model")
    ref = workload.model
    if isinstance(ref, str):
        known = catalog.models()
        if ref in known:
            return known[ref], []
        if looks_like_hub_id(ref):
            return read_hub_config(ref, None, source, at)
        return None, [Problem(source.path, source.line(at), field_name(at), unknown_model(ref, known))]
    if ref.config is not None and ref.hf is not None:
        return None, [Problem(source.path, source.line(at), field_name(at), "config and hf both given (expected "
                              "one source of config.json: a local file, or a Hugging Face Hub id)")]
    if ref.revision is not None and ref.hf is None:
        return None, [Problem(source.path, source.line(at + ("revision",)), field_name(at + ("revision",)),
                              "a revision without hf (expected hf: ORG/NAME beside it; a revision names a branch, "
                              "tag or commit of a Hugging Face Hub repository)")]
    problem = revision_problem(ref.revision) if ref.revision is not None else None
    if problem:
        return None, [Problem(source.path, source.line(at + ("revision",)), field_name(at + ("revision",)), problem)]
    base = None
    if ref.config is not None or ref.hf is not None:
        base, problems = (read_config(ref.config, base_dir, source, at + ("config",)) if ref.hf is None
                          else read_hub_config(ref.hf, ref.revision, source, at + ("hf",)))
        if base is None:
            return None, problems
    spec, problem = from_mapping(ref, base)
    if problem:
        key, message = problem
        where = at if key is None else at + (key,)
        return None, [Problem(source.path, source.line(where), field_name(where), message)]
    return spec, []


def _coverage(workload: Workload) -> list[tuple[tuple, str]]:
    """coverage sets the buffer, so it goes with buffer: auto only."""
    if workload.coverage is None or workload.buffer == AUTO:
        return []
    got = "no buffer (the default 0.30)" if workload.buffer is None else f"buffer: {workload.buffer:g}"
    return [(("coverage",), f"sets the buffer only with buffer: auto (got {got}, expected buffer: auto beside it, "
                            "or no coverage)")]


def _check(workload: Workload, model: ModelSpec | None, index: int, source: Source, resource_ids) -> list[Problem]:
    """Rules that span fields: catalog ids, kind/method, tokens, parallel degrees, the model's shape."""
    problems: list[Problem] = []

    def add(path: Path, message: str) -> None:
        full = ("workloads", index) + path
        problems.append(Problem(source.path, source.line(full), field_name(full), message))

    for path, message in (_parallel(workload, model) + _pilot(workload) + _lora_modules(workload, model)
                          + state_rules(workload) + _coverage(workload)):
        add(path, message)
    framework = framework_problem(workload)
    if framework:
        add(("framework",), framework)

    gpus = catalog.gpus()
    if workload.gpu is not None and workload.gpu not in gpus:
        add(("gpu",), unknown_gpu(workload.gpu, gpus))
    if workload.throughput is not None and workload.throughput.gpu not in gpus:
        add(("throughput", "gpu"), unknown_gpu(workload.throughput.gpu, gpus))
    if workload.resource is not None and resource_ids is not None and workload.resource not in resource_ids:
        add(("resource",), unknown_resource(workload.resource, resource_ids))
    if workload.kind == "inference":
        for name in ("method", "optimizer", "zero_stage", "lora", "data", "loss", "activation_offload",
                     "context_parallel", "compile", "gradient_accumulation_steps"):
            if getattr(workload, name) is not None:
                add((name,), f"not used by inference (got {name}, expected it only on finetune or pretrain)")
        if workload.attention not in (None, "eager") and workload.flash_attention is False:
            add(("attention",), f"flash_attention: false says no fused kernel (got attention: {workload.attention}; "
                                "expected eager, or one of the two fields)")
        for path, message in inference_problems(workload, model):
            add(path, message)
    else:
        if workload.kind == "pretrain" and workload.method not in (None, "full"):
            add(("method",), f"pretraining trains every weight (got {workload.method!r}, expected 'full' or nothing)")
        if workload.kind == "finetune" and workload.method is None:
            add(("method",), "required for finetune (expected full, lora or qlora)")
        if workload.tokens is None and workload.data is None:
            add(("tokens",), "required (expected tokens, e.g. 200M, or data: {samples, seq_len, epochs})")
        if workload.tokens is not None and workload.data is not None:
            add(("data",), "given twice (expected tokens or data, not both)")
        if workload.data is not None:
            d = workload.data
            tokens = d.samples * d.seq_len * d.epochs
            bound = BOUNDS["tokens"]
            if tokens > bound.high:
                add(("data",), f"implausibly large (got {d.samples:,} samples × {d.seq_len:,} tokens × {d.epochs:g} "
                               f"epochs = {tokens:.3g} tokens, expected {bound.reason})")
            elif round(tokens) < bound.low:
                add(("data",), f"implausibly small (got {d.samples:,} samples × {d.seq_len:,} tokens × {d.epochs:g} "
                               f"epochs = {tokens:.3g} tokens, expected at least 1 token)")
        if workload.attention is not None:
            add(("attention",), "an inference setting (for training, flash_attention: true or false)")
        if workload.hours is not None:
            add(("hours",), "only for an inference service (the training runtime is computed from the tokens)")
        for name in ("requests", "input_tokens", "output_tokens", "request_rate", "ttft_ms", "tpot_ms",
                     "ttft_percentile", "engine_version"):
            if getattr(workload, name) is not None:
                add((name,), f"only for inference (got {name} on {workload.kind}; expected it only on kind: "
                             "inference)")
        if workload.lora is not None and workload.method not in ("lora", "qlora"):
            add(("lora",), f"LoRA settings on a {workload.method or 'full'} run (expected method lora or qlora)")
        if workload.method == "qlora" and workload.precision not in (None, "bf16", "fp16"):
            add(("precision",), f"QLoRA computes in 16-bit over a 4-bit base (got {workload.precision!r}, "
                                "expected bf16 or fp16)")
        if workload.precision in ("fp8", "int8", "int4") and workload.method != "qlora":
            add(("precision",), f"training precision {workload.precision!r} is not modelled "
                                "(expected fp32, bf16 or fp16; use method qlora for a 4-bit base)")
    if (workload.throughput is not None and workload.kind == "inference" and workload.hours is not None
            and workload.request_rate is None):     # a service by load: inference_rules names it
        add(("pilot",) if workload.pilot is not None else ("throughput",),
            "an inference service is costed by hours; a measured throughput applies to a token count")
    return problems


def _parallel(workload: Workload, model: ModelSpec | None) -> list[tuple[Path, str]]:
    """Tensor and pipeline parallelism against the pinned GPU count and the model's heads and layers."""
    ep = workload.expert_parallel or 1
    tp, pp = workload.tensor_parallel or 1, workload.pipeline_parallel or 1
    # vLLM (ModelConfig.verify_with_parallel_config) and Megatron-LM (arguments.py) refuse a
    # tensor-parallel size that does not divide the attention heads: each rank holds the same number.
    heads = (model.heads if model is not None and model.has_architecture and 1 < tp <= model.heads
             and model.heads % tp else None)
    uneven = [(("tensor_parallel",), f"does not divide the model's {heads} attention heads (got {tp}, expected a "
                                     f"divisor of {heads}: each tensor-parallel rank holds the same number of heads)")
              ] if heads else []
    if workload.kind == "inference":
        if ep > 1:
            return [(("expert_parallel",), "not used by inference (got expert_parallel; an inference replica already "
                                           "splits every weight, the experts included, over its GPUs; expected it only "
                                           "on finetune or pretrain)")]
        replica = workload.gpus     # an inference replica on n GPUs is n-way tensor parallel (planning/search.py)
        if (not uneven and replica is not None and model is not None and model.has_architecture
                and 1 < replica <= model.heads and model.heads % replica):
            uneven = [(("gpus",), f"an inference replica on {replica} GPUs is {replica}-way tensor parallel, which "
                                  f"does not divide the model's {model.heads} attention heads (expected a divisor of "
                                  f"{model.heads}: each tensor-parallel rank holds the same number of heads)")]
        return uneven
    out = uneven
    if ep > 1 and model is not None:
        if model.experts == 1:      # a dense shape, or a parameter count alone (no experts known)
            out.append((("expert_parallel",), f"the model has no routed experts (got {ep}; expert parallelism "
                                              "splits a mixture of experts, expected 1 or nothing for a dense model)"))
        elif model.experts % ep:
            out.append((("expert_parallel",), f"does not divide the {model.experts} routed experts (got {ep}; "
                                              "each rank holds the same number of experts)"))
    if model is not None and model.has_architecture:
        if tp > model.heads:
            out.append((("tensor_parallel",), f"more ranks than the model has attention heads (got {tp}, expected "
                                              f"at most {model.heads}: each tensor-parallel rank holds at least "
                                              "one head)"))
        if pp > model.layers:
            out.append((("pipeline_parallel",), f"more stages than the model has layers (got {pp}, expected at most "
                                                f"{model.layers}: each pipeline stage holds at least one layer)"))
    cp = workload.context_parallel or 1
    if cp > 1:
        # torchtitan's context parallelism runs ring attention on the fused SDPA kernels
        # (torch.distributed.tensor.experimental.context_parallel): no eager s×s attention.
        if workload.flash_attention is False:
            out.append((("context_parallel",), f"ring attention needs a fused attention kernel (got context_parallel "
                                               f"{cp} with flash_attention: false; expected flash_attention: true "
                                               "or nothing)"))
        seq_len = workload.seq_len or (workload.data.seq_len if workload.data is not None else None)
        if seq_len is not None and seq_len % cp:
            out.append((("context_parallel",), f"does not divide the sequence length (got {cp} for seq_len "
                                               f"{seq_len:,}; expected a divisor: each GPU holds the same number "
                                               "of the sequence's tokens)"))
    per_copy = tp * pp * ep * cp
    if workload.gpus is not None and workload.gpus % per_copy:
        given = " × ".join(f"{name} {value}" for name, value in
                           (("tensor_parallel", workload.tensor_parallel),
                            ("pipeline_parallel", workload.pipeline_parallel),
                            ("expert_parallel", workload.expert_parallel),
                            ("context_parallel", workload.context_parallel)) if value)
        what = "fewer GPUs than one model copy takes" if workload.gpus < per_copy else "not a whole number of model copies"
        out.append((("gpus",), f"{what} (got {workload.gpus}; {given} puts one copy on {per_copy} GPUs, expected a "
                               f"multiple of {per_copy}, e.g. {per_copy} or {2 * per_copy})"))
    return out


def _pilot(workload: Workload) -> list[tuple[Path, str]]:
    """A measured rate beyond what a GPU can do, or so slow the run would not end, is a slip (BOUNDS)."""
    pilot = workload.throughput
    if pilot is None:
        return []
    per_gpu = pilot.tokens_per_second / pilot.gpus
    bound = BOUNDS["tokens_per_second_per_gpu"]
    at = ("pilot",) if workload.pilot is not None else ("throughput", "tokens_per_second")
    if per_gpu > bound.high:
        return [(at, f"implausibly large (got {describe(pilot.tokens_per_second)} on {pilot.gpus} GPU"
                     f"{'s' if pilot.gpus > 1 else ''}, expected {bound.expected})")]
    data = workload.data
    tokens = workload.tokens or (data.samples * data.seq_len * data.epochs if data else 0)
    # Even scaled to the most GPUs there can be (linear scaling, as the planner extrapolates),
    # a run longer than the service-hours bound is a slip of the rate's unit.
    most, longest = BOUNDS["gpus"].high, BOUNDS["hours"]
    hours = tokens / (per_gpu * most) / SECONDS_PER_HOUR
    if hours > longest.high:
        return [(at, f"implausibly small for the tokens (got {describe(pilot.tokens_per_second)}: even on "
                     f"{most:,} GPUs, {tokens:.3g} tokens would take {hours:.3g} hours, expected a run of at most "
                     f"{longest.high:,} hours (11 years); check the unit is tokens per second, for all GPUs "
                     "together)")]
    return []


def _lora_modules(workload: Workload, model: ModelSpec | None) -> list[tuple[Path, str]]:
    """LoRA target modules the model has, in its family's names (GPT-2's c_attn, Falcon's query_key_value)."""
    if workload.lora is None or workload.lora.targets is None or model is None:
        return []
    problem = lora_target_problem(workload.lora.targets, model)
    return [(("lora", "targets"), problem)] if problem else []


def _raw_ids(item: dict, index: int, source: Source, resource_ids, invalid: set[Path]) -> list[Problem]:
    """Catalog ids of a workload that failed validation, checked as they were written.

    So a file's unknown ids are reported with its other errors at once, not
    only after those are fixed. Fields that have an error of their own are skipped.
    """
    problems: list[Problem] = []
    throughput = item.get("throughput")
    checks = [(("model",), item.get("model"), catalog.models(), unknown_model),
              (("gpu",), item.get("gpu"), catalog.gpus(), unknown_gpu),
              (("throughput", "gpu"), throughput.get("gpu") if isinstance(throughput, dict) else None,
               catalog.gpus(), unknown_gpu)]
    if resource_ids is not None:
        checks.append((("resource",), item.get("resource"), resource_ids, unknown_resource))
    for sub, got, known, message in checks:
        at = ("workloads", index) + sub
        if isinstance(got, str) and got not in known and at not in invalid and not (
                sub == ("model",) and looks_like_hub_id(got)):   # fetched only for a valid workload
            problems.append(Problem(source.path, source.line(at), field_name(at), message(got, known)))
    return problems


def _valid(model_type, value):
    """`value` validated as `model_type`, or None if it is not valid (its errors are reported elsewhere)."""
    try:
        return model_type.model_validate(value)
    except ValidationError:
        return None


def known_resource_ids() -> set[str]:
    from ..catalog import resources

    return set(resources.known_ids())


def load_file(path: str, resource_ids=None, *, raw: bytes | None = None, base_dir: str | None = None) -> LoadedFile:
    """Read, validate and resolve one workload file; raise InputError with every problem.

    `raw` gives the file's bytes when they do not come from `path` (a version
    read from git); `path` then only names them in messages, and `config:`
    paths resolve against `base_dir`. `resource_ids` defaults to the catalog's.
    """
    if resource_ids is None:
        resource_ids = known_resource_ids()
    if raw is None:
        try:
            raw = read_limited(path, WORKLOAD_FILE)
        except Refused as refused:
            raise InputError([Problem(path, None, "", str(refused))]) from None
        except OSError as error:
            raise InputError([Problem(path, None, "", f"cannot read the file ({error.strerror})")]) from None
    elif len(raw) > WORKLOAD_FILE.bytes:
        raise InputError([Problem(path, None, "", WORKLOAD_FILE.too_large(len(raw)))])
    data, source = parse_yaml(path, raw)
    return _load_document(data, source, resource_ids, base_dir)


def load_data(data: object, path: str = "<dict>", resource_ids=None, *, base_dir: str | None = None) -> LoadedFile:
    """A workload file's structure as Python values (from_python.py) → LoadedFile, as load_file reads a file.

    `path` names it in messages, which carry no line; `config:` and pilot `log:` paths resolve
    against `base_dir` (default: the current directory).
    """
    value, source = plain_values(path, data)
    return _load_document(value, source, resource_ids if resource_ids is not None else known_resource_ids(),
                          base_dir if base_dir is not None else os.getcwd())


def _load_document(data: object, source: Source, resource_ids, base_dir: str | None) -> LoadedFile:
    """The parsed document → LoadedFile; InputError with every problem (load_file, load_data)."""
    path = source.path
    if not isinstance(data, dict):
        raise InputError([Problem(path, source.line(()), "",
                                  f"expected a mapping with a 'workloads' list at the top level, got {describe(data)}")])
    data = _merge_defaults(data, source)
    problems: list[Problem] = []
    try:
        document = WorkloadFile.model_validate(data)
        proposal, workloads = document.proposal, list(enumerate(document.workloads))
    except ValidationError as error:
        # A bad value in `defaults` is reported once, at defaults, not again for every workload.
        located = [(tuple(p for p in e["loc"] if not (isinstance(p, str) and p in UNION_TAGS)), e)
                   for e in error.errors(include_url=False)]
        problems = [translate(e, source) for loc, e in located if loc not in source.from_defaults]
        # The rest of the file is still checked, so every problem is reported at once:
        # the parts that validate on their own get the checks below; the catalog ids of
        # the workloads that do not are checked as written.
        invalid = {loc for loc, _ in located}
        proposal = _valid(Proposal, data["proposal"]) if isinstance(data.get("proposal"), dict) else None
        workloads = []
        items = data.get("workloads")
        for index, item in enumerate(items if isinstance(items, list) else []):
            workload = _valid(Workload, item)
            if workload is not None:
                workloads.append((index, workload))
            elif isinstance(item, dict):
                problems += _raw_ids(item, index, source, resource_ids, invalid)

    if proposal and proposal.resource is not None and resource_ids is not None \
            and proposal.resource not in resource_ids:
        problems.append(Problem(path, source.line(("proposal", "resource")), "proposal.resource",
                                unknown_resource(proposal.resource, resource_ids)))
    if (message := proposal_price_problem(proposal, resource_ids)) is not None:
        problems.append(Problem(path, source.line(("proposal", "price_per_hour")), "proposal.price_per_hour", message))
    seen: dict[str, int] = {}
    loaded = []
    base_dir = base_dir if base_dir is not None else os.path.dirname(os.path.abspath(path))
    for index, workload in workloads:
        at = ("workloads", index, "name")
        if workload.name in seen:
            problems.append(Problem(path, source.line(at), field_name(at),
                                    f"duplicate name (got {workload.name!r}, first used by workloads[{seen[workload.name]}])"))
        seen.setdefault(workload.name, index)
        model, model_problems = _resolve_model(workload, index, source, base_dir)
        problems += model_problems
        runs, pilot_problems = read_pilots(workload, index, source, base_dir)
        problems += pilot_problems
        if runs:    # the planner uses the logs' rate as it uses a throughput: given by hand
            workload = workload.model_copy(update={"throughput": measured_throughput(runs)})
        workload, lengths, length_problems = length_stats(workload, index, source)
        problems += length_problems
        problems += _check(workload, model, index, source, resource_ids)
        for at, message in price_problems(workload, proposal, resource_ids):
            full = ("proposal", "resource") if at is None else ("workloads", index) + at
            problems.append(Problem(path, source.line(full), field_name(full), message))
        if model is not None:
            lines = tuple((name, source.line(("workloads", index, name))) for name in sorted(workload.model_fields_set))
            workload, preset_notes = apply_preset(workload)
            loaded.append(LoadedWorkload(workload, model, path, source.line(("workloads", index)), index, preset_notes,
                                         lines, lengths))
    if problems:
        problems.sort(key=lambda p: (p.line or 0))
        raise InputError(_unique(problems))
    lines = tuple((field_name(at), line) for at, line in source.lines.items()
                  if at == ("workloads",) or (at[:1] == ("proposal",) and len(at) <= 2))
    return LoadedFile(path, proposal, tuple(loaded), lines)


def _unique(problems: list[Problem]) -> list[Problem]:
    out, seen = [], set()
    for p in problems:
        if (p.line, p.field, p.message) not in seen:
            seen.add((p.line, p.field, p.message))
            out.append(p)
    return out


def load_files(paths: list[str], resource_ids=None) -> list[LoadedFile]:
    """Load every file; all files' problems together, then raise. Names unique across files."""
    if resource_ids is None:
        resource_ids = known_resource_ids()
    loaded, problems = [], []
    for path in paths:
        try:
            loaded.append(load_file(path, resource_ids))
        except InputError as error:
            problems += error.problems
    if not problems:
        first: dict[str, LoadedWorkload] = {}
        for file in loaded:
            for w in file.workloads:
                if w.spec.name in first:
                    other = first[w.spec.name]
                    problems.append(Problem(w.path, w.line, f"workloads[{w.index}].name",
                                            f"duplicate name (got {w.spec.name!r}, also in {other.path}:{other.line})"))
                first.setdefault(w.spec.name, w)
    if problems:
        raise InputError(problems)
    return loaded

