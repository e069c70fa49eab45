"""`proposalkit check`: exit 0 feasible and under the caps, 1 with every reason on stderr, 2 for invalid input.

Workloads pin `gpu`/`gpus` and give a pilot on that GPU and count, so requested
GPU-hours = tokens ÷ tokens/s ÷ 3600 (rounded up to 0.01 h) × GPUs × variants × 1.3 by hand, rounded half
up to 0.01 as printed: 200M tokens at 55,000 tokens/s = 1.0101 h, carried 1.02 h; × 10 variants × 1.3 = 13.26.
"""

from __future__ import annotations

import textwrap

import pytest

import conftest as hand
from proposalkit.cli import main


def workload(name, tokens="200M", tps=55000, variants=1, model="llama-3.1-8b", method="lora", gpu="a100-80gb"):
    return textwrap.indent(textwrap.dedent(f"""\
        - name: {name}
          kind: finetune
          method: {method}
          model: {model}
          tokens: {tokens}
          throughput: {{tokens_per_second: {tps}, gpu: {gpu}, gpus: 1}}
          gpu: {gpu}
          gpus: 1
          variants: {variants}
        """), "  ")


def requested(tokens, tps, variants=1):
    return hand.requested(tokens / tps / 3600, 1, variants, 0.3)


SWEEP = workload("sweep", variants=10)                                  # 13.26 requested GPU-hours
SMALL = workload("small", "18M", 20000, model="stable-code-3b")         # 0.25 h × 1.3 = 0.325 → 0.33
TOO_BIG = workload("too-big", method="full", model="llama-3.1-70b")     # 70B full fine-tune on one 80 GB GPU


def write(tmp_path, name, *workloads, head=""):
    path = tmp_path / name
    path.write_text(head + "workloads:\n" + "".join(workloads), encoding="utf-8")
    return path


def run(capsys, *argv):
    code = main(["check", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_ok(tmp_path, capsys):
    path = write(tmp_path, "w.yaml", SWEEP, SMALL)
    total = requested(200e6, 55000, 10) + requested(18e6, 20000)
    assert run(capsys, path) == (0, f"OK: 2 workloads in 1 file feasible; requested {total:,.2f} GPU-hours of "
                                    "a100-80gb.\n", "")
    assert f"{total:,.2f}" == "13.59"


def test_ok_under_the_cap(tmp_path, capsys):
    a, b = write(tmp_path, "a.yaml", SWEEP), write(tmp_path, "b.yaml", SMALL)
    assert run(capsys, a, b, "--max-gpu-hours", "14") == (
        0, "OK: 2 workloads in 2 files feasible; requested 13.59 GPU-hours of a100-80gb within --max-gpu-hours 14.\n", "")


def test_over_the_cap(tmp_path, capsys):
    path = write(tmp_path, "w.yaml", SWEEP, SMALL)
    code, out, err = run(capsys, path, "--max-gpu-hours", "10")
    assert (code, out) == (1, "")
    assert err == (f"{path}: total requested GPU-hours 13.59 exceed --max-gpu-hours 10 by 3.59 "
                   "(largest: sweep 13.26, small 0.33)\n")


def test_every_reason_at_once(tmp_path, capsys):
    """Two infeasible workloads in two files and the cap: three lines, each naming its file."""
    a = write(tmp_path, "a.yaml", SWEEP, TOO_BIG)
    b = write(tmp_path, "b.yaml", TOO_BIG.replace("too-big", "also-too-big"), SMALL)
    code, out, err = run(capsys, a, b, "--max-gpu-hours", "5")
    assert (code, out) == (1, "")
    lines = err.splitlines()
    assert len(lines) == 3, err
    assert lines[0].startswith(f"{a}:11: workloads[1]: too-big does not fit: it needs ")
    assert lines[1].startswith(f"{b}:2: workloads[0]: also-too-big does not fit: it needs ")
    assert lines[2] == (f"{a}, {b}: total requested GPU-hours 13.59 exceed --max-gpu-hours 5 by 8.59 "
                        "(largest: sweep 13.26, small 0.33; 2 infeasible workload(s) not counted)")


def test_infeasible_without_a_cap(tmp_path, capsys):
    path = write(tmp_path, "w.yaml", TOO_BIG)
    code, out, err = run(capsys, path)
    assert (code, out) == (1, "")
    assert err.startswith(f"{path}:2: workloads[0]: too-big does not fit: it needs ")
    assert err.count("\n") == 1


def test_startup_track_cap(tmp_path, capsys):
    """Start-Up is capped near 2,000 GPU-hours (resources catalog): 1,600 variants × 1.02 h (1.0101 rounded up) × 1.3 = 2,121.6."""
    head = "proposal:\n  track: startup\n"
    path = write(tmp_path, "w.yaml", workload("sweep", variants=1600), head=head)
    code, out, err = run(capsys, path)
    assert (code, out) == (1, "")
    assert err.startswith(f"{path}:2: proposal.track: The plan requests 2,122 GPU-hours; ")
    assert "capped near 2,000 GPU-hours" in err and err.count("\n") == 1
    # Under the cap, and the standard track has none.
    assert run(capsys, write(tmp_path, "ok.yaml", workload("sweep", variants=1500), head=head))[0] == 0
    assert run(capsys, write(tmp_path, "std.yaml", workload("sweep", variants=1600),
                             head="proposal:\n  track: standard\n"))[0] == 0


def test_startup_track_cap_over_two_gpu_types_says_they_are_counted_together(tmp_path, capsys):
    """800 runs on a100-80gb and 800 on h100-80gb, each 800 × 1.02 h × 1.3 = 1,060.8: the cap counts the 2,121.6
    GPU-hours of both types together, and the message says so instead of naming them one request."""
    head = "proposal:\n  track: startup\n"
    path = write(tmp_path, "w.yaml", workload("sweep", variants=800),
                 workload("other", variants=800, gpu="h100-80gb"), head=head)
    code, out, err = run(capsys, path)
    assert (code, out) == (1, "")
    assert err.startswith(f"{path}:2: proposal.track: The plan requests 2,122 GPU-hours of all GPU types together; ")


def test_track_cap_and_given_cap_both_reported(tmp_path, capsys):
    path = write(tmp_path, "w.yaml", workload("sweep", variants=1600), head="proposal:\n  track: startup\n")
    code, _, err = run(capsys, path, "--max-gpu-hours", "1000")
    assert code == 1
    assert [line.split(": ", 2)[1] for line in err.splitlines()] == ["total requested GPU-hours 2,121.60 exceed "
                                                                     "--max-gpu-hours 1,000 by 1,121.60 (largest",
                                                                     "proposal.track"]


# ----------------------------------------------------------------- invalid input: exit 2

def test_invalid_yaml(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - name: a\n    kind: [finetune\n", encoding="utf-8")
    code, out, err = run(capsys, path)
    assert (code, out) == (2, "")
    assert err.startswith(f"{path}:3: malformed YAML: ") and "Traceback" not in err


def test_invalid_field_in_one_of_two_files(tmp_path, capsys):
    good = write(tmp_path, "good.yaml", SWEEP)
    bad = write(tmp_path, "bad.yaml", SMALL.replace("variants: 1", "variants: many"))
    code, out, err = run(capsys, good, bad, "--max-gpu-hours", "1")
    assert (code, out) == (2, "")
    assert err.startswith(f"{bad}:10: workloads[0].variants: ")
    assert "Traceback" not in err and "exceed" not in err


def test_missing_file(tmp_path, capsys):
    code, _, err = run(capsys, tmp_path / "nope.yaml")
    assert code == 2
    assert err == f"{tmp_path / 'nope.yaml'}: cannot read the file (No such file or directory)\n"


@pytest.mark.parametrize("cap", ["0", "-5", "nan", "inf"])
def test_bad_cap(tmp_path, capsys, cap):
    code, out, err = run(capsys, write(tmp_path, "w.yaml", SMALL), "--max-gpu-hours", cap)
    assert (code, out) == (2, "")
    assert err.startswith("proposalkit check: --max-gpu-hours: expected a positive number of GPU-hours (got ")


def test_cap_that_is_not_a_number(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["check", str(write(tmp_path, "w.yaml", SMALL)), "--max-gpu-hours", "lots"])
    assert exit_.value.code == 2
    assert "--max-gpu-hours: invalid float value: 'lots'" in capsys.readouterr().err
