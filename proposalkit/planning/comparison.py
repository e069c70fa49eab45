"""Each pilot log beside the estimate for its own GPU type and count (the rule and the record,
Comparison, are in pilots.py): the memory the planner's fit gives there and, for training, the
FLOPs rate at the default or given MFU.
"""

from __future__ import annotations

from ..catalog import GPUSpec
from ..catalog.shapes import ModelSpec
from . import search, speed
from .pilots import ESTIMATE_STATISTIC, Comparison, runs_of
from .records import Settings


def compare(model: ModelSpec, w, s: Settings, gpus: dict[str, GPUSpec], mfu: tuple[float, str] | tuple[None, None]
            ) -> tuple[Comparison, ...]:
    """Each pilot beside the estimate for its GPU type and count (estimates None where none is made)."""
    runs = runs_of(w)
    if not runs:
        return ()
    unmeasured = w.model_copy(update={"throughput": None})
    # A training copy spans t·p·ep·cp GPUs (planning/search.py): a pilot on a count that is no whole number
    # of copies ran other parallel settings than the workload's, and there is no estimate of it to compare with.
    per_copy = 1 if w.kind == "inference" else (s.tensor_parallel * s.pipeline_parallel * s.expert_parallel
                                                * s.context_parallel)
    out = []
    for run in runs:
        gpu = gpus[run.gpu]
        rate = memory = key = None
        if run.gpus % per_copy == 0:
            _, mem, stage, ckpt = search.fit(model, unmeasured, s, gpu, run.gpus, {})
            if run.peak_memory:
                key = ESTIMATE_STATISTIC[run.peak_memory[0]]
                memory = mem.statistics()[key]
            if w.kind != "inference":   # no estimate of an inference rate here: the pilot is the rate
                rate = speed.throughput(model, unmeasured, s, gpu, run.gpus, ckpt, gpus, mfu,
                                        stage).tokens_per_second
        out.append(Comparison(run, rate, memory, key))
    return tuple(out)
