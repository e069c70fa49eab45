"""`proposalkit check --review`: each reviewer's rule through the command line, on a workload that
breaks it and on one that does not, naming FILE:LINE: field; and the examples' findings.

Errors exit 1 (as `check` does for a cap), warnings print and exit 0, invalid options exit 2.
Arithmetic by hand where a threshold is crossed: a pinned LoRA of 200M tokens at 55,000 tokens/s
is 200e6 / 55,000 / 3,600 = 1.0101 h a run; × 1.3 = 1.3131 requested GPU-hours a run.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from proposalkit.cli import main
from proposalkit.input.frameworks import FRAMEWORKS
from proposalkit.input.pilots import LOG_FRAMEWORKS, LOG_FRAMEWORKS_ALSO
from proposalkit.pilot import FORMATS
from proposalkit.render import output

from conftest import weasyprint_available

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "workloads" / "code-models.yaml"
EVALUATION = ROOT / "workloads" / "inference" / "evaluation.yaml"
EXAMPLE_LOG = ROOT / "tests" / "data" / "pilot" / "lora-sweep_log_1763900000.txt"   # torchtune's DiskLogger format
RUN_HOURS = 1.02                         # 200e6 / 55000 / 3600 = 1.0101 h, carried rounded up to 0.01 h


def workload(name="sweep", *, variants=1, gpu="a100-80gb", extra="", description="LoRA sweep of ranks",
             measured="throughput: {tokens_per_second: 55000, gpu: a100-80gb, gpus: 1}"):
    lines = [f"- name: {name}"]
    if description is not None:
        lines.append(f"  description: {description}")
    lines += ["  kind: finetune", "  method: lora", "  model: llama-3.1-8b", "  tokens: 200M"]
    if measured:
        lines.append(f"  {measured}")
    lines += [f"  gpu: {gpu}", "  gpus: 1", f"  variants: {variants}"]
    lines += [f"  {line}" for line in textwrap.dedent(extra).splitlines() if line]
    return textwrap.indent("\n".join(lines) + "\n", "  ")


def write(tmp_path, *workloads, head="", name="w.yaml"):
    path = tmp_path / name
    path.write_text(head + "workloads:\n" + "".join(workloads), encoding="utf-8")
    return path


def review(capsys, *argv):
    code = main(["check", "--review", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def line_of(path: Path, text: str) -> int:
    """The 1-based line of the first line of `path` holding `text`."""
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_clean(tmp_path, capsys):
    path = write(tmp_path, workload())
    code, out, err = review(capsys, path)
    assert (code, err) == (0, "")
    assert out == (f"OK: 1 workload in 1 file feasible; requested {RUN_HOURS * 1.3:,.2f} GPU-hours of a100-80gb. "
                   "Review: no finding.\n")


# ----------------------------------------------------------------- description

def test_no_description(tmp_path, capsys):
    path = write(tmp_path, workload(description=None), workload("other"))
    code, out, err = review(capsys, path)
    assert (code, out) == (1, "")
    assert err.startswith(f"{path}:2: workloads[0].description: sweep has no description: a reviewer meets 1.33 "
                          "GPU-hours without what they are for")
    assert err.endswith("; add description: one line on what the runs are for and why this many\n")
    assert err.count("\n") == 1
    assert main(["check", str(path)]) == 0      # plain check does not review
    capsys.readouterr()


def test_blank_description(tmp_path, capsys):
    code, _, err = review(capsys, write(tmp_path, workload(description="'  '")))
    assert code == 1 and "workloads[0].description: sweep has no description" in err


# ----------------------------------------------------------------- pilot

FLOPS = ""      # no throughput: the FLOPs estimate


def test_large_workload_without_pilot(tmp_path, capsys):
    path = write(tmp_path, workload(measured=FLOPS, variants=200))
    code, out, err = review(capsys, path)
    assert code == 1
    finding = err.splitlines()[0]
    assert finding.startswith(f"{path}:2: workloads[0].pilot: sweep requests ")
    assert ", over 1,000, with no pilot: its runtime rests on FLOPs at MFU " in finding
    assert finding.endswith("; run a short pilot on 1× a100-80gb and add pilot: {log, gpu, gpus} (proposalkit pilot "
                            "reads its log)")


def test_the_pilot_threshold_is_an_option(tmp_path, capsys):
    # buffer: auto: the FLOPs estimate's request at the coverage asked, so no coverage finding joins the pilot's
    path = write(tmp_path, workload(measured=FLOPS, variants=200, extra="buffer: auto"))
    code, _, err = review(capsys, path, "--pilot-above", "1e9")
    assert (code, err) == (0, "")
    assert review(capsys, write(tmp_path, workload(measured=FLOPS, extra="buffer: auto"),
                                name="small.yaml"))[0] == 0   # under 1,000


def test_the_threshold_counts_requested_hours(tmp_path, capsys):
    """The request the finding names (buffer included) is what --pilot-above is held against."""
    path = write(tmp_path, workload(variants=770, measured=FLOPS, extra="mfu: 0.3\nbuffer: auto"))
    code, _, err = review(capsys, path)
    requested = float(err.split("sweep requests ")[1].split(" GPU-hours")[0].replace(",", ""))
    assert code == 1 and requested > 1000
    assert review(capsys, path, "--pilot-above", str(requested + 1))[0] == 0
    assert review(capsys, path, "--pilot-above", str(requested - 1))[0] == 1


def test_a_measured_rate_is_a_pilot(tmp_path, capsys):
    assert review(capsys, write(tmp_path, workload(variants=800)))[:1] == (0,)    # 1,050 requested, measured


def test_service_by_hours_needs_no_pilot(tmp_path, capsys):
    """A service kept up hours costs hours × GPUs whatever its speed: nothing to measure for the request."""
    path = write(tmp_path, textwrap.indent(textwrap.dedent("""\
        - name: chat
          description: Demo service for the workshop
          kind: inference
          model: llama-3.1-8b
          context: 4k
          batch: 8
          hours: 2000
        """), "  "))
    code, _, err = review(capsys, path)
    assert (code, err) == (0, "")


def test_service_by_rate_without_a_benchmark(tmp_path, capsys):
    path = write(tmp_path, textwrap.indent(textwrap.dedent("""\
        - name: assistant
          description: Code assistant for the user study
          kind: inference
          model: llama-3.1-8b
          request_rate: 5
          input_tokens: 1k
          output_tokens: 256
          ttft_ms: 1000
          tpot_ms: 50
          hours: 2000
        """), "  "))
    code, _, err = review(capsys, path)
    assert code == 1
    assert err.startswith(f"{path}:2: workloads[0].pilot: assistant requests ")
    assert "with no pilot: its replicas rest on the vllm engine's calibrated roofline" in err
    assert "(a service by request_rate takes no pilot log)" in err


@pytest.mark.parametrize("value", ["-1", "nan"])
def test_bad_pilot_threshold(tmp_path, capsys, value):
    code, out, err = review(capsys, write(tmp_path, workload()), f"--pilot-above={value}")
    assert (code, out) == (2, "")
    assert err.startswith("proposalkit check: --pilot-above: expected a number of GPU-hours, 0 or more")


def test_pilot_threshold_without_review(tmp_path, capsys):
    assert main(["check", str(write(tmp_path, workload())), "--pilot-above", "10"]) == 2
    assert "--pilot-above: applies to the reviewer's findings (expected --review beside it)" in capsys.readouterr().err


# ----------------------------------------------------------------- extrapolation

def test_pilot_on_another_gpu(tmp_path, capsys):
    """Measured on an A100 80GB, pinned to an H100: carried by the step-time model's rates on the two setups
    (tests/test_pilot_workload.py works such a ratio out by hand)."""
    path = write(tmp_path, workload(gpu="h100-80gb", extra="buffer: auto"))     # auto: no coverage finding beside
    code, out, err = review(capsys, path)
    assert (code, out) == (1, "")
    at = line_of(path, "throughput:")
    assert err.startswith(f"{path}:{at}: workloads[0].extrapolation: sweep is measured on a100-80gb and planned on "
                          "1× h100-80gb: the rate is carried there by the estimate's model of the two setups "
                          "(55,000 tokens/s measured on 1× a100-80gb × (the step-time model's 10,012 tokens/s on 1× "
                          "h100-80gb ÷ its 4,136 on 1× a100-80gb = 2.421) = 133,155 tokens/s on 1× h100-80gb")
    assert err.endswith("; state it in extrapolation: (e.g. a published a100-80gb to h100-80gb speed ratio for this "
                        "kind of job, with its source), run the pilot on h100-80gb, or pin gpu: a100-80gb\n")


def test_stated_extrapolation_is_shown_in_the_report(tmp_path, capsys):
    said = "MLPerf Training v4.0 LoRA: H100 2.4x A100 per GPU"
    path = write(tmp_path, workload(gpu="h100-80gb", extra=f"extrapolation: '{said}'\nbuffer: auto"))
    code, _, err = review(capsys, path)
    assert (code, err) == (0, "")
    assert main(["plan", str(path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["workloads"][0]["extrapolation"] == said
    assert main(["report", str(path), "-o", str(tmp_path / "out"), "--format", "md"]) == 0
    capsys.readouterr()
    report = (tmp_path / "out" / "supplement.md").read_text()
    assert "= 133,155 tokens/s on 1× h100-80gb" in report and f"; {said}" in report     # 55,000 × 2.421


def test_another_count_of_the_same_gpu_is_not_this_rule(tmp_path, capsys):
    path = write(tmp_path, workload(extra="buffer: auto").replace("gpus: 1\n    variants", "gpus: 2\n    variants"))
    assert review(capsys, path)[:1] == (0,)


# ----------------------------------------------------------------- buffer

@pytest.mark.parametrize("buffer", ["0.2", "0.25", "0.3"])
def test_buffer_within_the_guides_range(tmp_path, capsys, buffer):
    assert review(capsys, write(tmp_path, workload(extra=f"buffer: {buffer}")))[0] == 0


@pytest.mark.parametrize("buffer, shown", [("0.1", "10%"), ("0.5", "50%"), ("0", "0%")])
def test_buffer_outside_without_a_reason(tmp_path, capsys, buffer, shown):
    path = write(tmp_path, workload(extra=f"buffer: {buffer}"))
    code, _, err = review(capsys, path)
    assert code == 1
    first, *more = err.splitlines()
    assert first == (f"{path}:{line_of(path, 'buffer:')}: workloads[0].buffer: sweep's buffer of {shown} is outside "
                     "the NAIRR community guide's 20%–30% and no reason is given; state why in buffer_reason: (shown "
                     "beside the buffer in the report), or set a buffer from 0.20 to 0.30")
    # No buffer covers about half the measured rate's own steps (its ranges): that finding too, only there.
    assert all(" suffices with a chance of " in line for line in more) and (buffer == "0") == bool(more)


def test_buffer_from_defaults_is_found_at_its_line(tmp_path, capsys):
    path = write(tmp_path, workload(), workload("other"), head="defaults:\n  buffer: 0.5\n")
    code, _, err = review(capsys, path)
    assert code == 1
    assert [line.split(": ")[0:2] for line in err.splitlines()] == [[f"{path}:2", "workloads[0].buffer"],
                                                                     [f"{path}:2", "workloads[1].buffer"]]


def test_buffer_reason(tmp_path, capsys):
    why = "48 h walltime: each run restarts twice from a checkpoint"
    path = write(tmp_path, workload(extra=f"buffer: 0.5\nbuffer_reason: '{why}'"))
    assert review(capsys, path)[:1] == (0,)
    assert main(["report", str(path), "-o", str(tmp_path / "out"), "--format", "md"]) == 0
    capsys.readouterr()
    assert f"requested (the buffer: {why})" in (tmp_path / "out" / "supplement.md").read_text()
    assert main(["plan", str(path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["workloads"][0]["settings"]["buffer_reason"] == why


# ----------------------------------------------------------------- cap

def test_over_the_startup_cap(tmp_path, capsys):
    """1,600 runs × 1.02 h × 1.3 = 2,122 requested GPU-hours, the Start-Up track's cap near 2,000."""
    path = write(tmp_path, workload(variants=1600), head="proposal:\n  title: T\n  track: startup\n")
    code, out, err = review(capsys, path)
    assert (code, out) == (1, "")
    assert err.startswith(f"{path}:3: proposal.track: The plan requests 2,122 GPU-hours; ")
    assert "capped near 2,000 GPU-hours" in err and err.count("\n") == 1


def test_over_the_access_tier(tmp_path, capsys):
    """Delta H200: 2,000 h × 3 SU = 6,000 SUs × 66.7 = 400,200 ACCESS credits, above Explore's 400,000
    (tests/test_check_caps.py)."""
    path = write(tmp_path, "  - {name: serve, description: Demo, kind: inference, model: llama-3.1-8b, context: 4k, "
                           "hours: 2000, gpu: h200, gpus: 1, buffer: 0, buffer_reason: a fixed demo period}\n",
                 head="proposal:\n  resource: ncsa-delta\n  access_tier: explore\n")
    code, _, err = review(capsys, path)
    assert code == 1
    assert err.startswith(f"{path}:3: proposal.access_tier: The plan comes to 400,200 ACCESS credits ")
    assert err.count("\n") == 1


# ----------------------------------------------------------------- pages

def test_body_over_its_page_budget(tmp_path, capsys):
    """Twelve workloads, each a table row and a derivation line: well past 1.5 pages (no PDF needed to tell)."""
    path = write(tmp_path, *(workload(f"w{i}", description="A long description " * 10) for i in range(12)))
    code, _, err = review(capsys, path)
    assert code == 1
    finding = next(line for line in err.splitlines() if ": workloads: " in line)
    assert finding.startswith(f"{path}:1: workloads: section B runs to ")
    assert " pages estimated from the Markdown, over the 1.5 it has in a NAIRR proposal of about 3 pages; " in finding
    assert finding.endswith("; or move w0, w1, w10, w11, w2, w3, the smallest requests, to a separate request "
                            "(section B holds up to 6 workloads)")
    assert float(finding.split("runs to ")[1].split(" pages")[0]) > 1.7


# ----------------------------------------------------------------- coverage

def _with_coverage(monkeypatch, coverage, *, asked=None):
    """The plan JSON as a plan with ranges gives it (CONTRACT.md: request_coverage; buffer: auto's coverage)."""
    plain = output.workload_dict

    def with_ranges(w):
        out = plain(w)
        out["request_coverage"] = coverage
        if asked is not None:
            out["coverage"] = asked
        return out
    monkeypatch.setattr(output, "workload_dict", with_ranges)


def test_low_chance_to_suffice(tmp_path, capsys, monkeypatch):
    _with_coverage(monkeypatch, 0.72)
    path = write(tmp_path, workload(extra="buffer: 0.25"))
    code, _, err = review(capsys, path)
    assert code == 1    # 1.02 h × 1.25 = 1.275 → 1.28
    assert err == (f"{path}:{line_of(path, 'buffer:')}: workloads[0].buffer: sweep's request of 1.28 GPU-hours "
                   "suffices with a chance of 72% (its ranges), under the 80% a reviewer expects; raise the buffer, "
                   "or set buffer: auto with coverage: 0.9 to take the least that reaches 90%\n")


def test_enough_chance_to_suffice(tmp_path, capsys, monkeypatch):
    _with_coverage(monkeypatch, 0.8)
    assert review(capsys, write(tmp_path, workload()))[0] == 0


def test_a_measured_rate_on_its_own_gpus_covers_its_request(tmp_path, capsys):
    """test_clean's plan: a rate measured on the planned GPUs ranges by the step-to-step spread of measured runs,
    which 30% covers: no coverage finding."""
    path = write(tmp_path, workload())
    assert main(["plan", str(path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["workloads"][0]["request_coverage"] >= 0.8
    assert review(capsys, path)[0] == 0


def test_a_buffer_chosen_for_coverage_has_its_reason(tmp_path, capsys, monkeypatch):
    """buffer: auto (the plan JSON's coverage) chose the buffer: outside 20-30% is no finding then."""
    _with_coverage(monkeypatch, 0.9, asked=0.9)
    assert review(capsys, write(tmp_path, workload(extra="buffer: 0.45")))[0] == 0


# ----------------------------------------------------------------- framework (a warning), and plan's hint

def _with_log(tmp_path, extra=""):
    shutil.copy(EXAMPLE_LOG, tmp_path / "tune.txt")
    return write(tmp_path, workload(gpu="a100-40gb", measured="pilot: {log: tune.txt, gpu: a100-40gb, gpus: 1}",
                                    extra=extra))


def test_pilot_log_names_its_framework(tmp_path, capsys):
    path = _with_log(tmp_path)
    code, out, err = review(capsys, path)
    assert code == 0 and out.endswith("Review: no finding that fails (warnings on stderr).\n")
    at = line_of(path, "pilot:")
    assert (f"{path}:{at}: workloads[0].framework: warning: the pilot log tune.txt is torchtune's, but sweep names "
            "no framework: the estimate beside the measurement follows the planner's generic defaults, not the "
            "recipe that ran; set framework: torchtune\n") in err
    assert main(["plan", str(path)]) == 0
    err = capsys.readouterr().err
    assert err == (f"{path}:{at}: workloads[0].framework: hint: the pilot log tune.txt is torchtune's, but sweep "
                   "names no framework: the estimate beside the measurement follows the planner's generic defaults, "
                   "not the recipe that ran; set framework: torchtune\n")


def test_framework_set_no_hint(tmp_path, capsys):
    path = _with_log(tmp_path, "framework: torchtune")
    assert main(["plan", str(path), "--format", "json"]) == 0
    assert capsys.readouterr().err == ""
    assert ": workloads[0].framework: " not in review(capsys, path)[2]


def test_log_formats_name_known_frameworks():
    assert set(LOG_FRAMEWORKS) <= set(FORMATS) and set(LOG_FRAMEWORKS.values()) <= set(FRAMEWORKS)
    assert {f for also in LOG_FRAMEWORKS_ALSO.values() for f in also} <= set(FRAMEWORKS)
    # The formats that name no framework of the format's list, said so here.
    assert set(FORMATS) - set(LOG_FRAMEWORKS) == {"lightning", "mlperf", "nvidia-smi"}


# ----------------------------------------------------------------- the examples

def rules(err: str) -> set[tuple[str, str]]:
    """(field, 'warning' or 'error') of each finding with a line (FILE:LINE: field: ...)."""
    out = set()
    for line in err.splitlines():
        where, field, rest = line.split(": ", 2)
        if where.rsplit(":", 1)[-1].isdigit():
            out.add((field, "warning" if rest.startswith("warning: ") else "error"))
    return out


def test_the_examples(capsys):
    """What the examples trigger, each a true finding that stands (see the report of issue 23 item 7):
    - code-models.yaml: none. Its pilots are measured (benchmarks/device/example_pilot.py on one H200, issue 23
      item 5), on the GPU each workload requests, and each workload names the framework its log came from;
      section B fits its 1.5 pages. full-finetune (47.43 GPU-hours) is under the size that needs a pilot.
    - evaluation.yaml: assistant-service, 5,616 GPU-hours on the engine's roofline without a benchmark (the
      file shows planning without a pilot; a service by request_rate takes no pilot log).
    """
    code, _, err = review(capsys, EXAMPLE)
    # And each workload whose request covers under 80% of its validated cases (its ranges; the FLOPs estimate's
    # spread over the validation rows, which moves with them).
    assert main(["plan", str(EXAMPLE), "--format", "json"]) == 0
    low = {(f"workloads[{i}].buffer", "error") for i, w in enumerate(json.loads(capsys.readouterr().out)["workloads"])
           if w["request_coverage"] < 0.8}
    assert (code, rules(err)) == (1 if low else 0, low)
    assert "illustrative" not in err
    code, _, err = review(capsys, EVALUATION)
    assert (code, rules(err)) == (1, {("workloads[1].pilot", "error")})
