"""Storage in the documents and the plan, through the CLI (issue 23, section B a reviewer trusts): a model file
several workloads start from is counted once, each store names only what it holds, and every total is the sum of
the figures printed above it."""

from __future__ import annotations

import json
import re
from decimal import Decimal

from proposalkit.cli import main
from proposalkit.units import GiB

SERVICE = """  - name: {name}
    description: {name}, a service of the user study
    kind: inference
    model: {model}
    gpu: h100-80gb
    request_rate: 1
    input_tokens: 1k
    output_tokens: 256
    hours: 100
{extra}"""

LORA = """  - name: {name}
    description: LoRA fine-tune of {model}
    kind: finetune
    method: lora
    model: {model}
    tokens: 100M
    throughput: {{tokens_per_second: 3000, gpu: a100-80gb, gpus: 1}}
    gpu: a100-80gb
"""


def _write(tmp_path, *workloads: str):
    path = tmp_path / "w.yaml"
    path.write_text("proposal: {title: T}\nworkloads:\n" + "".join(workloads), encoding="utf-8")
    return path


def _plan(path, capsys) -> dict:
    assert main(["plan", str(path), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _documents(path, tmp_path) -> tuple[str, str]:
    out = tmp_path / "out"
    assert main(["report", str(path), "-o", str(out), "--format", "md"]) == 0
    return (out / "report.md").read_text(encoding="utf-8"), (out / "supplement.md").read_text(encoding="utf-8")


def _storage_sentence(section_b: str) -> str:
    return next(line for line in section_b.splitlines() if line.startswith("**Storage and calendar.**"))


def _gib(n_bytes: int) -> Decimal:
    return Decimal(f"{n_bytes / GiB:.2f}")


def test_two_workloads_from_one_model_store_it_once(tmp_path, capsys):
    """workloads/inference/evaluation.yaml counted llama-3.1-70b's 131.42 GiB twice (project 262.84 GiB): a
    model file is downloaded once per project, whichever workloads start from it."""
    path = _write(tmp_path, LORA.format(name="tune", model="llama-3.1-8b"),
                  SERVICE.format(name="serve", model="llama-3.1-8b", extra=""),
                  SERVICE.format(name="serve-again", model="llama-3.1-8b", extra=""))
    plan = _plan(path, capsys)
    stores = {w["name"]: w["storage"] for w in plan["workloads"]}
    weights = stores["tune"]["model_weights_bytes"]
    assert weights == stores["serve"]["model_weights_bytes"] == stores["serve-again"]["model_weights_bytes"] > 0
    assert [s["model_weights_shared_with"] for s in stores.values()] == [None, "tune", "tune"]
    section_b, supplement = _documents(path, tmp_path)
    project = _gib(plan["totals"]["storage"]["project_bytes"])
    # the model once, beside the LoRA run's data and adapters; not three copies
    assert project < 2 * _gib(weights)
    assert f"project {project:,} GiB" in _storage_sentence(section_b)
    assert "| serve | — | — | — | — | — | shared with tune | — |" in supplement
    assert "| serve-again | — | — | — | — | — | shared with tune | — |" in supplement
    assert f"{project:,} GiB in all, each model file counted once" in supplement


def test_one_model_at_two_precisions_is_two_files(tmp_path, capsys):
    """An fp8 copy of a model is another file than its bf16 weights: both are stored."""
    path = _write(tmp_path, SERVICE.format(name="bf16", model="llama-3.1-8b", extra=""),
                  SERVICE.format(name="fp8", model="llama-3.1-8b", extra="    precision: fp8\n"))
    plan = _plan(path, capsys)
    stores = [w["storage"] for w in plan["workloads"]]
    assert [s["model_weights_shared_with"] for s in stores] == [None, None]
    assert _gib(plan["totals"]["storage"]["project_bytes"]) == sum(_gib(s["model_weights_bytes"]) for s in stores)


def test_only_inference_names_no_final_weights_or_data(tmp_path, capsys):
    """Section B said "project 262.84 GiB (data, model and final weights)" of two inference workloads, which
    keep neither data nor weights of their own: each store names only what it holds."""
    path = _write(tmp_path, SERVICE.format(name="serve", model="llama-3.1-8b", extra=""))
    plan = _plan(path, capsys)
    assert plan["workloads"][0]["storage"]["final_weights_bytes"] == 0
    section_b, supplement = _documents(path, tmp_path)
    sentence = _storage_sentence(section_b)
    project = _gib(plan["totals"]["storage"]["project_bytes"])
    assert f"; project {project:,} GiB (model weights); no archive." in sentence
    s3 = supplement.split("## S.3")[1].split("## S.4")[0]
    assert "final weights" not in sentence and "final weights" not in s3.split("| --- |")[-1]
    assert "dataset" not in s3.split("| --- |")[-1].lower()
    assert "| serve | — | — | — | — | — | " in s3


def test_the_example_service_keeps_no_final_weights(capsys):
    """workloads/code-models.yaml: eval-service serves the model lora-sweep tunes; it adds no final weights
    (its row read "0.00 GiB × 1") and no second copy of llama-3.1-8b."""
    assert main(["plan", "workloads/code-models.yaml", "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    service = next(w for w in plan["workloads"] if w["name"] == "eval-service")["storage"]
    assert service["final_weights_bytes"] == 0 and service["model_weights_shared_with"] == "lora-sweep"


def test_every_storage_total_is_the_sum_of_its_printed_rows(tmp_path, capsys):
    """Project = Σ datasets + raw text + model weights (each file once) + final weights × runs; archive = Σ final
    weights × runs + raw text; scratch = the largest row (one after another, as the calendar): in section B, in
    the note under the table and in the plan JSON."""
    path = _write(tmp_path, LORA.format(name="tune", model="llama-3.1-8b"),
                  LORA.format(name="tune-qwen", model="qwen2.5-7b"),
                  SERVICE.format(name="serve", model="qwen2.5-7b", extra=""))
    plan = _plan(path, capsys)
    section_b, supplement = _documents(path, tmp_path)
    s3 = supplement.split("## S.3")[1].split("## S.4")[0]
    rows = [r.strip("| ").split(" | ") for r in s3.splitlines() if r.startswith("| tune") or r.startswith("| serve")]
    assert [r[0] for r in rows] == ["tune", "tune-qwen", "serve"] and rows[2][6] == "shared with tune-qwen"

    def gib(cell: str) -> Decimal:
        return Decimal(0) if cell == "—" or cell.startswith("shared with") else Decimal(cell.removesuffix(" GiB"))

    def runs(cell: str) -> Decimal:
        size, n = cell.split(" × ") if cell != "—" else ("—", "0")
        return gib(size) * int(n)

    project = sum(gib(r[4]) + gib(r[5]) + gib(r[6]) + runs(r[7]) for r in rows)
    archive = sum(gib(r[5]) + runs(r[7]) for r in rows)
    scratch = max(gib(r[3]) for r in rows)
    sentence = _storage_sentence(section_b)
    assert "The workloads run one after another" in sentence
    assert (f"scratch at most {scratch:,} GiB at once" in sentence and f"project {project:,} GiB" in sentence
            and f"archive {archive:,} GiB (final weights and raw data)" in sentence), sentence
    assert f"{project:,} GiB in all" in s3 and f"raw data: {archive:,} GiB." in s3
    totals = plan["totals"]["storage"]
    assert (_gib(totals["project_bytes"]), _gib(totals["archive_bytes"]), _gib(totals["scratch_bytes"])) == (
        project, archive, scratch)
