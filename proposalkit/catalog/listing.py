"""`proposalkit catalog gpus|models|resources`: each catalog as a table, every row with its sources in short
(kind: publisher, title (version)); the full citations, with what each row reads there, are the report's
references."""

from __future__ import annotations

from . import PRECISION_HARDWARE, gpus, models, row_sources
from . import resources as _resources
from ..units import GiB


def listing(what: str) -> str:
    """The catalog `what` (gpus, models or resources) as text, one row a line after a header."""
    cited = citations(what)
    if what == "gpus":
        def formats(g) -> str:
            return ",".join(p for p in ("fp16", *PRECISION_HARDWARE) if g.supports(p))

        # MAMF: the maximum achievable matmul rate (gpus.yaml mamf_flops), '*' where the table measures no such GPU
        # and its vendor's lowest efficiency is taken.
        lines = [f"{'id':<16} {'usable memory':>14} {'16-bit dense':>14} {'MAMF':>15} {'bandwidth':>11}  "
                 f"{'formats':<17} source; usable memory's source; MAMF's source (*: the table measures no such "
                 "GPU, its vendor's lowest efficiency is taken)"]
        lines += [f"{g.id:<16} {g.usable_memory_bytes / GiB:>10.2f} GiB {g.peak_16bit_flops / 1e12:>8.1f} TFLOP/s "
                  f"{g.mamf_flops / 1e12:>7.1f}{' ' if g.mamf_measured else '*'} TFLOP/s "
                  f"{g.memory_bandwidth / 1e12:>6.3f} TB/s  {formats(g):<17} "
                  f"{cited[g.id, 'source']}; {cited[g.id, 'usable_memory_source']}; {cited[g.id, 'mamf_source']}"
                  for g in gpus().values()]
    elif what == "models":
        lines = [f"{'id':<16} {'params':>16} {'L':>4} {'h':>6} {'a':>4} {'kv':>4} {'ffn':>6} {'vocab':>7} "
                 f"{'ctx':>7}  {'Hugging Face Hub id':<52} source; parameter count's source"]
        lines += [f"{m.id:<16} {m.params:>16,} {m.layers:>4} {m.hidden:>6} {m.heads:>4} {m.kv_head_count:>4} "
                  f"{m.ffn_hidden:>6} {m.vocab:>7} {m.max_context or 0:>7}  {m.hf_id or '-':<52} "
                  f"{cited[m.id, 'source']}; {cited[m.id, 'params_source']}"
                  for m in models().values()]
    else:
        lines = [f"{'id':<25} {'unit':<12} {'GPUs':<24} {'per node':>8} {'nodes':>7} {'GPUs':>7} {'largest job':>12}  "
                 f"{'price/instance-h, region, read':<34}  source; size's source; price's source"]
        lines += [f"{r.id:<25} {r.unit:<12} {g:<24} {r.gpus_per_node:>8} {r.node_count(g):>7,} {r.gpu_count(g):>7,} "
                  f"{_resources.gpus_text(r.largest_job_gpus(g)):>12}  {r.price.short if r.is_cloud else '-':<34}  "
                  f"{cited[r.id, 'source']}; {cited[r.id, 'size_source']}"
                  + (f"; {cited[r.id, 'price.source']}" if r.is_cloud else "")
                  for r in _resources.resources().values() for g in r.gpus]
    return "".join(line + "\n" for line in lines)


def citations(what: str) -> dict[tuple[str, str], str]:
    """(row id, field) → its sources in short: 'datasheet: NVIDIA, NVIDIA H100 … datasheet (2023)', '; ' between
    works."""
    out: dict[tuple[str, str], list[str]] = {}
    for rs in row_sources(what):
        s = rs.source
        out.setdefault((rs.row, rs.field), []).append(f"{s.kind}: {s.by}, {s.title} ({s.version})")
    return {key: "; ".join(texts) for key, texts in out.items()}
