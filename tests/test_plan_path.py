"""The `plan` path stays light: no report libraries imported; JSON follows CONTRACT.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "workloads" / "code-models.yaml"


def test_plan_imports_no_report_libraries():
    code = ("import sys; from proposalkit.cli import main; main(['plan', %r]); "
            "print(sorted(m for m in ('jinja2', 'weasyprint', 'markdown') if m in sys.modules))" % str(EXAMPLE))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_plan_json_follows_the_contract(capsys):
    from proposalkit.cli import main

    assert main(["plan", str(EXAMPLE), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema_version"] == 1
    total = 0.0
    for w in data["workloads"]:
        components = w["memory"]["components"]
        assert list(components) == ["weights", "gradients", "optimizer", "activations", "kv_cache", "overhead"]
        assert all(isinstance(v, int) for v in components.values())
        assert sum(components.values()) == w["memory"]["per_gpu_bytes"]
        assert w["memory"]["per_gpu_bytes"] <= w["gpu"]["memory_bytes"]
        assert abs(w["gpu_hours"] - w["runtime_hours"] * w["gpu"]["count"] * w["variants"]) < 1e-4
        # hours per run carried to 0.01 h, the request rounded up to 0.01 as printed: never below the product
        assert w["runtime_hours"] == round(w["runtime_hours"], 2)
        assert 0 <= w["gpu_hours_requested"] - w["gpu_hours"] * (1 + w["buffer"]) < 0.01 + 1e-9
        assert set(w["storage"]) >= {"checkpoint_bytes", "peak_scratch_bytes", "dataset_bytes"}
        assert w["resource"]["id"].startswith("ncsa-delta")
        total += w["gpu_hours_requested"]
    assert abs(data["totals"]["gpu_hours_requested"] - total) < 1e-4
    assert abs(sum(data["totals"]["by_gpu_type"].values()) - total) < 1e-4
    assert isinstance(data["warnings"], list)
    assert set(data["totals"]["by_resource"]) == {w["resource"]["id"] for w in data["workloads"]}


def test_plan_output_is_deterministic():
    runs = [subprocess.run([sys.executable, "-m", "proposalkit", "plan", str(EXAMPLE), "--format", "json"],
                           capture_output=True, check=True).stdout for _ in range(2)]
    assert runs[0] == runs[1]


def test_schema_command_prints_the_json_schema(capsys):
    from proposalkit.cli import main

    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    workload = schema["$defs"]["Workload"]
    assert workload["additionalProperties"] is False
    assert {"name", "kind", "model"} <= set(workload["required"])


def test_catalog_commands_list_sources(capsys):
    from proposalkit.cli import main

    for what in ("gpus", "models", "resources"):
        assert main(["catalog", what]) == 0
    out = capsys.readouterr().out
    assert "h100-80gb" in out and "llama-3.1-8b" in out and "ncsa-delta-a100" in out


def test_committed_json_schema_is_current(capsys):
    """docs/workload.schema.json (what editors load) equals `proposalkit schema`; regenerate with
    `proposalkit schema > docs/workload.schema.json`."""
    from proposalkit.cli import main

    main(["schema"])
    assert (ROOT / "docs" / "workload.schema.json").read_text(encoding="utf-8") == capsys.readouterr().out


def test_orjson_and_the_standard_library_write_the_same_json(monkeypatch):
    """The example plan's text does not depend on which encoder wrote it (orjson when
    installed, the standard library for integers beyond 64 bits or without orjson);
    the values never do (floats below 1e-4 are spelt differently, read the same)."""
    from proposalkit.render import output
    from proposalkit.input.loading import load_files
    from proposalkit.planning.planner import plan_files

    assert output.orjson is not None
    plan = plan_files(load_files([str(EXAMPLE)]))
    fast = output.plan_json(plan)
    monkeypatch.setattr(output, "orjson", None)
    assert output.plan_json(plan) == fast
    assert json.loads(output.compact_json({"x": 1e-6, "y": 2e-5})) == {"x": 1e-6, "y": 2e-5}
    assert output.compact_json({"bytes": 2**70, "ratio": 0.1, "text": "× ÷ ⌈"}) == \
        '{"bytes":1180591620717411303424,"ratio":0.1,"text":"× ÷ ⌈"}'
    monkeypatch.undo()
    assert output.compact_json({"bytes": 2**70}) == '{"bytes":1180591620717411303424}'   # falls back


def test_plan_leaves_the_garbage_collector_on(capsys):
    import gc

    from proposalkit.cli import main

    assert gc.isenabled()
    assert main(["plan", str(EXAMPLE)]) == 0
    assert gc.isenabled()
    assert main(["plan", str(ROOT / "no-such-file.yaml")]) == 2    # also when loading fails
    assert gc.isenabled()
