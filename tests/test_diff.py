"""`proposalkit diff`: added, removed, renamed and changed workloads; git REV:PATH; bad input; the CI workflow.

Every workload pins `gpu`/`gpus` and gives a pilot measured on that same GPU
and count, so the planner uses the pilot as is and the hours are computable by
hand: runtime = tokens ÷ tokens/s ÷ 3600, rounded up to 0.01 h, GPU-hours = that × GPUs × variants,
requested = GPU-hours × (1 + buffer), rounded half up to 0.01 as printed. E.g. 200M tokens at 55,000
tokens/s = 1.0101 h, carried as 1.02 h per run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from pathlib import Path

import pytest
import yaml

import conftest as hand
from proposalkit.cli import main

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "budget.yml"


def workload(name, tokens, tps, *, model="stable-code-3b", variants=1, gpu="a100-80gb", buffer=0.3, extra=""):
    return textwrap.indent(textwrap.dedent(f"""\
        - name: {name}
          kind: finetune
          method: lora
          model: {model}
          tokens: {tokens}
          throughput: {{tokens_per_second: {tps}, gpu: {gpu}, gpus: 1}}
          gpu: {gpu}
          gpus: 1
          variants: {variants}
          buffer: {buffer}
        """) + extra, "  ")


def document(*workloads):
    return "workloads:\n" + "".join(workloads)


def requested(tokens, tps, variants=1, gpus=1, buffer=0.3):
    """Hand arithmetic: requested GPU-hours of a pinned workload with a pilot on the same GPU and count, from
    the hours per run as carried (rounded up to 0.01 h)."""
    return hand.requested(tokens / tps / 3600, gpus, variants, buffer)


OLD = document(
    workload("sweep", "200M", 55000, model="llama-3.1-8b", variants=10),   # 1.02 h × 10 × 1.3 = 13.26
    workload("old-name", "100M", 20000),                                    # 1.39 h × 1.3 = 1.807 → 1.81
    workload("gone", "45M", 20000),                                         # 0.63 h × 1.3 = 0.819 → 0.82
    workload("same", "18M", 20000),                                         # 0.25 h × 1.3 = 0.325 → 0.33
)
NEW = document(
    workload("sweep", "400M", 55000, model="llama-3.1-8b", variants=20),   # 2.03 h × 20 × 1.3 = 52.78
    workload("new-name", "100M", 20000),                                    # renamed: same settings
    workload("fresh", "72M", 20000),                                        # 1.00 h × 1.3 = 1.3
    workload("same", "18M", 20000),
)
BEFORE = {"sweep": requested(200e6, 55000, 10), "old-name": requested(100e6, 20000),
          "gone": requested(45e6, 20000), "same": requested(18e6, 20000)}
AFTER = {"sweep": requested(400e6, 55000, 20), "new-name": requested(100e6, 20000),
         "fresh": requested(72e6, 20000), "same": requested(18e6, 20000)}


@pytest.fixture
def files(tmp_path):
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(OLD, encoding="utf-8")
    new.write_text(NEW, encoding="utf-8")
    return old, new


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def plan_json(capsys, path):
    code, out, err = run(capsys, "plan", path, "--format", "json")
    assert code == 0, err
    return json.loads(out)


# ----------------------------------------------------------------- the numbers

def test_hand_arithmetic_matches_the_plans(files, capsys):
    old, new = (plan_json(capsys, p) for p in files)
    for plan, expected in ((old, BEFORE), (new, AFTER)):
        got = {w["name"]: w["gpu_hours_requested"] for w in plan["workloads"]}
        assert got == pytest.approx(expected, abs=1e-6)


def outward(x: float, up: bool) -> float:
    """A range's end to the diff's 0.1 GPU-h: the p10 rounded down, the p90 up (the range shown holds the plan's)."""
    return float(Decimal(repr(x)).quantize(Decimal("0.1"), ROUND_CEILING if up else ROUND_FLOOR))


def span(r: dict) -> str:
    """A p10–p90 as the diff writes it, from the plan JSON's."""
    return f"{outward(r['p10'], False):,.1f}–{outward(r['p90'], True):,.1f}"


def needed(plan: dict) -> str:
    """The whole request's p10–p90 as the diff writes it, from the plan JSON's totals."""
    return span(plan["totals"]["ranges"]["gpu_hours"])


def covers(c: float) -> str:
    return f"{100 * c:.0f}%" if abs(100 * c - round(100 * c)) < 1e-9 else f"{100 * c:.1f}%"


def test_summary_line(files, capsys):
    code, out, err = run(capsys, "diff", *files)
    assert code == 0, err
    old, new = (plan_json(capsys, p) for p in files)
    before, after = sum(BEFORE.values()), sum(AFTER.values())   # 16.22 → 56.22
    # Every workload gives a measured rate: one regime, one coverage on both sides, named once.
    assert old["totals"]["request_coverage"] == new["totals"]["request_coverage"]
    ranges = (f"needed p10–p90 {needed(old)} → {needed(new)} GPU-h, the request covering "
              f"{covers(new['totals']['request_coverage'])} of validated cases")
    assert out.splitlines()[0] == (
        f"Requested GPU-hours: {before:,.1f} → {after:,.1f} (+{after - before:,.1f}, "
        f"+{100 * (after - before) / before:.1f}%); {ranges}; 1 added, 1 removed, 1 renamed, 1 changed.")
    assert out.splitlines()[0].startswith("Requested GPU-hours: 16.2 → 56.2 (+40.0, +246.6%); needed p10–p90 ")


def test_table_rows(files, capsys):
    _, out, _ = run(capsys, "diff", *files)
    old, new = (plan_json(capsys, p) for p in files)
    sweep = [next(w for w in plan["workloads"] if w["name"] == "sweep")["ranges"]["gpu_hours"] for plan in (old, new)]
    spans = [f"{span(r)} GPU-h" for r in sweep]
    lines = out.splitlines()
    table = lines[lines.index("| workload | change | before | after | delta | what changed |"):]
    # Category order (added, removed, renamed, changed), then name. The GPU-hours needed move with the request.
    assert table[2:6] == [
        "| `fresh` | added | — | 1.3 | +1.3 | 1× a100-80gb, 72M tokens |",
        "| `gone` | removed | 0.8 | — | -0.8 | was 1× a100-80gb, 45M tokens |",
        "| `old-name` → `new-name` | renamed | 1.8 | 1.8 | +0.0 | name only |",
        "| `sweep` | changed | 13.3 | 52.8 | +39.5 (+298.0%) | tokens 200M → 400M; h/run 1.02 → 2.03; variants 10 → 20; "
        f"needed p10–p90 {spans[0]} → {spans[1]} |",
    ]
    assert "1 workload unchanged (0.3 requested GPU-hours)." in lines
    assert "`same`" not in out


def test_totals_table(files, capsys):
    _, out, _ = run(capsys, "diff", *files)
    before, after = sum(BEFORE.values()), sum(AFTER.values())
    assert f"| **requested GPU-hours** | {before:,.1f} | {after:,.1f} | +{after - before:,.1f} (+246.6%) |" in out
    assert out.count("| GPU-hours on ") == 1   # every workload runs on a100-80gb
    assert f"| GPU-hours on a100-80gb | {before:,.1f} | {after:,.1f} | +{after - before:,.1f} (+246.6%) |" in out
    # 1.02 × 10 + 1.39 + 0.63 + 0.25 = 12.47 h → 2.03 × 20 + 1.39 + 1.00 + 0.25 = 43.24 h: +30.77, +246.8%
    assert "| GPU-hours before the buffer | 12.5 | 43.2 | +30.8 (+246.8%) |" in out
    old, new = (plan_json(capsys, p)["totals"] for p in files)
    for p in ("p10", "p90"):
        a, b = (outward(t["ranges"]["gpu_hours"][p], up=p == "p90") for t in (old, new))
        assert f"| GPU-hours needed, {p} | {a:,.1f} | {b:,.1f} | +{b - a:,.1f} (+{100 * (b - a) / a:.1f}%) |" in out
    share = covers(new["request_coverage"])
    assert f"| request covers (validated cases) | {share} | {share} | +0.0 points |" in out


def test_json(files, capsys):
    code, out, err = run(capsys, "diff", *files, "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["schema_version"] == 1
    assert (d["old"], d["new"]) == (str(files[0]), str(files[1]))
    assert [e["name"] for e in d["added"]] == ["fresh"]
    assert [e["name"] for e in d["removed"]] == ["gone"]
    assert [(e["old_name"], e["name"]) for e in d["renamed"]] == [("old-name", "new-name")]
    assert [e["name"] for e in d["changed"]] == ["sweep"]
    assert [e["name"] for e in d["unchanged"]] == ["same"]
    sweep = d["changed"][0]
    assert [c["field"] for c in sweep["changes"]] == ["tokens", "runtime_hours", "variants", "ranges.gpu_hours"]
    assert sweep["changes"][0] | {"text": None} == {"field": "tokens", "before": 200_000_000,
                                                     "after": 400_000_000, "text": None}
    assert sweep["before"]["gpu_hours_requested"] == pytest.approx(BEFORE["sweep"], abs=1e-6)
    assert sweep["after"]["gpu_hours_requested"] == pytest.approx(AFTER["sweep"], abs=1e-6)
    assert sweep["delta_gpu_hours_requested"] == pytest.approx(AFTER["sweep"] - BEFORE["sweep"], abs=1e-5)
    assert d["added"][0]["before"] is None and d["removed"][0]["after"] is None
    # Totals are the plans' own totals; the delta is their difference.
    old, new = (plan_json(capsys, p) for p in files)
    assert d["totals"]["before"] == old["totals"] and d["totals"]["after"] == new["totals"]
    for key in ("gpu_hours", "gpu_hours_requested"):
        assert d["totals"]["delta"][key] == pytest.approx(new["totals"][key] - old["totals"][key], abs=1e-6)
    assert d["summary"] == run(capsys, "diff", *files)[1].splitlines()[0]


def test_output_is_deterministic(files, capsys):
    first = run(capsys, "diff", *files, "--format", "json")[1]
    assert run(capsys, "diff", *files, "--format", "json")[1] == first


def test_what_changed_lists_gpu_throughput_buffer_and_lora(tmp_path, capsys):
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(document(workload("a", "200M", 55000, model="llama-3.1-8b")), encoding="utf-8")
    new.write_text(document(workload("a", "200M", 110000, model="llama-3.1-8b", gpu="h100-80gb", buffer=0.2,
                                     extra="  lora: {rank: 32}\n")), encoding="utf-8")
    _, out, _ = run(capsys, "diff", old, new)
    row = next(line for line in out.splitlines() if line.startswith("| `a` |"))
    for piece in ("GPUs 1× a100-80gb → 1× h100-80gb", "throughput 55,000 tokens/s → 110,000 tokens/s",
                  "h/run 1.02 → 0.51", "buffer 30% → 20%", "LoRA rank 16 → 32", "memory/GPU "):
        assert piece in row
    # 1.0101 h, carried 1.02 h, × 1.3 → 0.50505 h, carried 0.51 h, × 1.2
    assert f"| {requested(200e6, 55000):,.1f} | {requested(200e6, 110000, buffer=0.2):,.1f} |" in row


def test_different_settings_under_a_new_name_are_not_a_rename(tmp_path, capsys):
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(document(workload("a", "100M", 20000)), encoding="utf-8")
    new.write_text(document(workload("b", "101M", 20000)), encoding="utf-8")
    _, out, _ = run(capsys, "diff", old, new)
    assert out.splitlines()[0].endswith("; 1 added, 1 removed.")


def test_a_description_does_not_stop_a_rename(tmp_path, capsys):
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(document(workload("a", "100M", 20000)), encoding="utf-8")
    new.write_text(document(workload("b", "100M", 20000, extra="  description: the same run\n")), encoding="utf-8")
    _, out, _ = run(capsys, "diff", old, new)
    assert "| `a` → `b` | renamed | 1.8 | 1.8 | +0.0 | description unset → the same run |" in out


def test_defaults_moved_into_defaults_is_no_change(tmp_path, capsys):
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(document(workload("a", "100M", 20000, buffer=0.25)), encoding="utf-8")
    new.write_text("defaults:\n  buffer: 0.25\n" + document(workload("a", "100M", 20000)).replace("    buffer: 0.3\n", ""),
                   encoding="utf-8")
    _, out, _ = run(capsys, "diff", old, new)
    assert out.splitlines()[0] == "Requested GPU-hours: 1.7 → 1.7 (+0.0); no workload changed."   # nor its range
    assert "1 workload unchanged (1.7 requested GPU-hours)." in out
    assert "| workload |" not in out


def test_totals_by_resource(tmp_path, capsys):
    """With a target resource, its charge (from the plans' JSON) gets a totals row and a JSON delta."""
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    head = "proposal:\n  resource: ncsa-delta\n"
    old.write_text(head + document(workload("a", "200M", 55000, gpu="a100-40gb")), encoding="utf-8")
    new.write_text(head + document(workload("a", "200M", 55000, gpu="a100-40gb", variants=3)), encoding="utf-8")
    before, after = (plan_json(capsys, p)["totals"]["by_resource"] for p in (old, new))
    assert list(before) == list(after) and len(before) == 1
    (rid, charge), = after.items()
    a, b = before[rid]["amount"], charge["amount"]
    _, out, _ = run(capsys, "diff", old, new)
    # 1.02 h × 1.3 = 1.326 → 1.33 SUs; × 3 runs 3.978 → 3.98: +199.2%, each side rounded as printed
    assert (a, b) == (1.33, 3.98)
    assert f"| {rid}, {charge['unit']} | {a:,.1f} | {b:,.1f} | +{b - a:,.1f} (+199.2%) |" in out
    d = json.loads(run(capsys, "diff", old, new, "--format", "json")[1])
    assert d["totals"]["delta"]["by_resource"] == {rid: {"unit": charge["unit"], "amount": pytest.approx(b - a)}}


def test_dev_null_is_an_added_or_deleted_file(files, capsys):
    """Nothing is needed without workloads (0.0), and there is no request whose coverage to name."""
    old, new = (plan_json(capsys, p) for p in files)
    _, out, _ = run(capsys, "diff", "/dev/null", files[1])
    assert out.splitlines()[0] == (f"Requested GPU-hours: 0.0 → {sum(AFTER.values()):,.1f} (+56.2); needed p10–p90 "
                                   f"0.0 → {needed(new)} GPU-h, the request covering "
                                   f"{covers(new['totals']['request_coverage'])} of validated cases; 4 added.")
    assert f"| request covers (validated cases) | — | {covers(new['totals']['request_coverage'])} | — |" in out
    _, out, _ = run(capsys, "diff", files[0], "/dev/null")
    assert out.splitlines()[0] == (f"Requested GPU-hours: 16.2 → 0.0 (-16.2, -100.0%); needed p10–p90 {needed(old)} "
                                   f"→ 0.0 GPU-h, the request covering {covers(old['totals']['request_coverage'])} "
                                   "of validated cases; 4 removed.")


FLOPS = """\
workloads:
  - name: pretrain
    kind: pretrain
    model: llama-3.2-1b
    tokens: 2B
    gpu: h100-80gb
    gpus: 8
"""


def test_a_change_of_range_and_of_coverage(tmp_path, capsys):
    """A rate from FLOPs instead of a measured one: the range widens by the FLOPs regime's rows and the request
    covers fewer cases; with buffer: auto the request moves to the coverage asked for, and the range does not."""
    measured, flops, auto = (tmp_path / f"{n}.yaml" for n in ("measured", "flops", "auto"))
    tps = 400_000
    # A 5% buffer: the FLOPs regime's p90 need is above it (with the default 30% every validated case is covered).
    measured.write_text(FLOPS + f"    throughput: {{tokens_per_second: {tps}, gpu: h100-80gb, gpus: 8}}\n"
                        "    buffer: 0.05\n", encoding="utf-8")
    flops.write_text(FLOPS + "    buffer: 0.05\n", encoding="utf-8")
    auto.write_text(FLOPS + "    buffer: auto\n    coverage: 0.9\n", encoding="utf-8")
    plans = {p.stem: plan_json(capsys, p)["workloads"][0] for p in (measured, flops, auto)}

    def hours(w):
        return f"{span(w['ranges']['gpu_hours'])} GPU-h"

    _, out, _ = run(capsys, "diff", measured, flops)
    row = next(line for line in out.splitlines() if line.startswith("| `pretrain` |"))
    a, b = plans["measured"], plans["flops"]
    assert b["request_coverage"] < a["request_coverage"]
    assert f"needed p10–p90 {hours(a)} → {hours(b)}" in row
    assert f"request covers {covers(a['request_coverage'])} → {covers(b['request_coverage'])}" in row
    assert out.splitlines()[0].startswith(
        f"Requested GPU-hours: {a['gpu_hours_requested']:,.1f} → {b['gpu_hours_requested']:,.1f} (")
    assert (f"needed p10–p90 {hours(a).removesuffix(' GPU-h')} → {hours(b)}, the request covering "
            f"{covers(a['request_coverage'])} → {covers(b['request_coverage'])} of validated cases; 1 changed.") \
        in out.splitlines()[0]

    _, out, _ = run(capsys, "diff", flops, auto)
    row = next(line for line in out.splitlines() if line.startswith("| `pretrain` |"))
    c = plans["auto"]
    assert c["ranges"]["gpu_hours"] == b["ranges"]["gpu_hours"] and c["request_coverage"] >= 0.9
    assert "needed p10–p90" not in row
    assert f"buffer {100 * b['buffer']:g}% → {100 * c['buffer']:g}%" in row
    assert f"request covers {covers(b['request_coverage'])} → {covers(c['request_coverage'])}" in row
    d = json.loads(run(capsys, "diff", flops, auto, "--format", "json")[1])
    change = next(x for x in d["changed"][0]["changes"] if x["field"] == "request_coverage")
    assert (change["before"], change["after"]) == (b["request_coverage"], c["request_coverage"])
    assert d["changed"][0]["after"]["gpu_hours_range"] == c["ranges"]["gpu_hours"]


# ----------------------------------------------------------------- git

def git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd, check=True,
                   capture_output=True)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repository whose HEAD has OLD as w.yaml, with NEW in the working tree."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "w.yaml").write_text(OLD, encoding="utf-8")
    git(root, "add", "w.yaml")
    git(root, "commit", "-q", "-m", "v1")
    (root / "w.yaml").write_text(NEW, encoding="utf-8")
    monkeypatch.chdir(root)
    return root


def test_git_rev_path(repo, capsys, files):
    code, out, err = run(capsys, "diff", "HEAD:w.yaml", "w.yaml")
    assert code == 0, err
    assert out == run(capsys, "diff", *files)[1]
    d = json.loads(run(capsys, "diff", "HEAD:w.yaml", "w.yaml", "--format", "json")[1])
    assert (d["old"], d["new"]) == ("HEAD:w.yaml", "w.yaml")
    assert sorted(os.listdir(repo)) == [".git", "w.yaml"]   # no temporary file left behind


def test_git_path_from_a_subfolder(repo, capsys, monkeypatch):
    (repo / "sub").mkdir()
    monkeypatch.chdir(repo / "sub")
    # git reads REV:PATH from the repository root, or from here when PATH starts with ./ or ../
    code, out, err = run(capsys, "diff", "HEAD:w.yaml", "HEAD:../w.yaml")
    assert code == 0, err
    assert out.splitlines()[0] == "Requested GPU-hours: 16.2 → 16.2 (+0.0); no workload changed."


def test_git_config_path_resolves_in_the_working_tree(tmp_path, capsys, monkeypatch):
    root = tmp_path / "repo"
    (root / "workloads").mkdir(parents=True)
    (root / "models" / "tiny").mkdir(parents=True)
    (root / "models" / "tiny" / "config.json").write_text(json.dumps({
        "hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 8,
        "intermediate_size": 1376, "vocab_size": 32000, "max_position_embeddings": 2048}), encoding="utf-8")
    text = document(workload("tiny", "100M", 20000, model="{config: ../models/tiny/config.json}"))
    (root / "workloads" / "w.yaml").write_text(text, encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "v1")
    (root / "workloads" / "w.yaml").write_text(text.replace("100M", "200M"), encoding="utf-8")
    monkeypatch.chdir(root)
    code, out, err = run(capsys, "diff", "HEAD:workloads/w.yaml", "workloads/w.yaml")
    assert code == 0, err
    assert "tokens 100M → 200M" in out
    assert sorted(os.listdir(root / "workloads")) == ["w.yaml"]


# ----------------------------------------------------------------- bad input

def test_bad_rev(repo, capsys):
    code, out, err = run(capsys, "diff", "no-such-rev:w.yaml", "w.yaml")
    assert code == 2 and out == ""
    assert err.startswith("no-such-rev:w.yaml: cannot read it from git (fatal: ")
    assert "no-such-rev" in err.split("(", 1)[1] and "Traceback" not in err


def test_path_missing_at_rev(repo, capsys):
    code, _, err = run(capsys, "diff", "HEAD:nope.yaml", "w.yaml")
    assert code == 2
    assert err.startswith("HEAD:nope.yaml: cannot read it from git (fatal: ") and "nope.yaml" in err


def test_missing_file(files, capsys, tmp_path):
    code, out, err = run(capsys, "diff", tmp_path / "missing.yaml", files[1])
    assert (code, out) == (2, "")
    assert err == f"{tmp_path / 'missing.yaml'}: cannot read the file (No such file or directory)\n"


def test_invalid_yaml_in_new(files, capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("workloads:\n  - name: a\n    kind: [finetune\n", encoding="utf-8")
    code, out, err = run(capsys, "diff", files[0], bad)
    assert (code, out) == (2, "")
    assert err.startswith(f"{bad}:3: malformed YAML: ")   # the line with the '[' not closed


def test_invalid_input_at_rev_is_named_rev_path_and_line(repo, capsys):
    (repo / "w.yaml").write_text(OLD.replace("variants: 10", "variants: ten"), encoding="utf-8")
    git(repo, "commit", "-q", "-am", "typo")
    code, _, err = run(capsys, "diff", "HEAD:w.yaml", "HEAD~1:w.yaml")
    assert code == 2
    assert err.startswith("HEAD:w.yaml:10: workloads[0].variants: ")
    assert ".proposalkit-diff" not in err and "Traceback" not in err


def test_git_missing(repo, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(repo))
    code, _, err = run(capsys, "diff", "HEAD:w.yaml", "w.yaml")
    assert code == 2
    assert err == "HEAD:w.yaml: cannot read it from git: the 'git' command was not found (install git, or give a file path)\n"


# ----------------------------------------------------------------- the CI workflow

def workflow():
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def step(name_part):
    return next(s for s in workflow()["jobs"]["budget"]["steps"] if name_part in s.get("name", ""))


def test_workflow_structure():
    w = workflow()
    on = w.get("on", w.get(True))            # YAML 1.1 reads the key `on` as true
    assert on == {"pull_request": {"paths": ["workloads/**"]}}
    assert w["permissions"]["pull-requests"] == "write"
    job = w["jobs"]["budget"]
    assert job["env"]["BASE"] == "origin/${{ github.base_ref }}"
    steps = job["steps"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    assert any(s.get("uses", "").startswith("actions/setup-python@") for s in steps)
    runs = [s.get("run", "") for s in steps]
    install = step("Install")["run"]
    assert "--constraint constraints.txt" in install and "-e ." in install   # the locked versions
    assert "proposalkit check workloads/*.yaml" in runs
    assert 'proposalkit diff "$old" "$new"' in step("Diff")["run"]
    assert "--no-renames" in step("Diff")["run"]   # a moved file is a deletion and an addition, both diffed
    assert 'gh pr comment "$PR" --body-file budget-diff.md' in step("Comment")["run"]
    assert step("Comment")["env"]["GH_TOKEN"] == "${{ github.token }}"


def bash(script, cwd, env):
    """Run a workflow step the way GitHub runs `shell: bash`."""
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=cwd, env=env,
                          capture_output=True, text=True)


def pull_request(tmp_path, base: dict, head: dict):
    """A repository with `base` files on main (as origin/main) and `head` files on a branch
    checked out; → (root, environment of a workflow step)."""
    root = tmp_path / "repo"
    (root / "workloads").mkdir(parents=True)
    for name, text in base.items():
        (root / "workloads" / name).write_text(text, encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    git(root, "update-ref", "refs/remotes/origin/main", "HEAD")      # what fetch-depth: 0 gives
    git(root, "checkout", "-q", "-b", "feature")
    for name in base:
        if name not in head:
            git(root, "rm", "-q", f"workloads/{name}")
    for name, text in head.items():
        (root / "workloads" / name).write_text(text, encoding="utf-8")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "change")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "BASE": "origin/main", "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    return root, env


def test_workflow_commands_on_a_pull_request(tmp_path):
    """The check and diff steps, run on a change that modifies one workload file, adds one
    and deletes one."""
    root, env = pull_request(tmp_path, {"plan.yaml": OLD, "retired.yaml": document(workload("retired", "45M", 20000))},
                             {"plan.yaml": NEW, "extra.yaml": document(workload("extra", "72M", 20000))})

    checked = bash(step("Check")["run"], root, env)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.startswith("OK: 5 workloads in 2 files feasible; ")

    diffed = bash(step("Diff")["run"], root, env)
    assert diffed.returncode == 0, diffed.stderr
    body = (root / "budget-diff.md").read_text(encoding="utf-8")
    assert (tmp_path / "summary.md").read_text(encoding="utf-8") == body
    sections = body.split("### Budget change: ")[1:]
    assert [s.splitlines()[0] for s in sections] == ["workloads/extra.yaml", "workloads/plan.yaml",
                                                     "workloads/retired.yaml"]
    # Each section's first line is the diff's summary (test_summary_line, test_dev_null_is_an_added_or_deleted_file).
    firsts = [s.splitlines()[2] for s in sections]
    assert firsts[0].startswith("Requested GPU-hours: 0.0 → 1.3 (+1.3); needed p10–p90 0.0 → ")
    assert firsts[0].endswith("; 1 added.")
    assert firsts[1].startswith("Requested GPU-hours: 16.2 → 56.2 (+40.0, +246.6%); needed p10–p90 ")
    assert firsts[1].endswith("; 1 added, 1 removed, 1 renamed, 1 changed.")
    assert firsts[2].startswith("Requested GPU-hours: 0.8 → 0.0 (-0.8, -100.0%); needed p10–p90 ")
    assert firsts[2].endswith(" → 0.0 GPU-h, the request covering 99.3% of validated cases; 1 removed.")


def test_workflow_on_invalid_input(tmp_path):
    """check fails the job with FILE:LINE; the comment still says why the diff failed."""
    root, env = pull_request(tmp_path, {"plan.yaml": OLD}, {"plan.yaml": OLD.replace("variants: 10", "variants: ten")})
    checked = bash(step("Check")["run"], root, env)
    assert checked.returncode == 2
    assert checked.stderr.startswith("workloads/plan.yaml:10: workloads[0].variants: ")
    diffed = bash(step("Diff")["run"], root, env)
    assert diffed.returncode == 0, diffed.stderr
    body = (root / "budget-diff.md").read_text(encoding="utf-8").splitlines()
    assert body[:4] == ["### Budget change: workloads/plan.yaml", "", "proposalkit diff failed:", ""]
    assert body[4].startswith("    workloads/plan.yaml:10: workloads[0].variants: ")   # an indented code block
