"""The Python API (proposalkit/api.py, docs/python-api.md): one plan from a path, YAML text or a mapping;
located errors as exceptions; records exported and typed; nothing printed."""

from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import proposalkit
from conftest import weasyprint_available
from proposalkit.cli import main
from test_docs import gendocs

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "workloads" / "code-models.yaml"     # it cites a pilot log by a path relative to itself
INFERENCE = ROOT / "workloads" / "inference" / "evaluation.yaml"

INFEASIBLE = """\
workloads:
  - name: too-big
    kind: finetune
    method: full
    model: llama-3.1-70b
    tokens: 10M
    gpu: a100-40gb
    gpus: 1
"""


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# ----------------------------------------------------------------- three inputs, one plan

def test_a_path_text_and_a_mapping_give_the_same_plan(capsys):
    text = EXAMPLE.read_text(encoding="utf-8")
    from_path = proposalkit.plan(EXAMPLE)
    from_text = proposalkit.plan(text=text, base_dir=EXAMPLE.parent)
    from_data = proposalkit.plan(data=yaml.safe_load(text), base_dir=EXAMPLE.parent)
    # The records are equal but for the name each source goes by ...
    assert [w.path for w in from_path.workloads] == [str(EXAMPLE)] * 4
    assert {w.path for w in from_text.workloads} == {"<string>"} and {w.path for w in from_data.workloads} == {"<dict>"}
    for other in (from_text, from_data):
        assert dataclasses.replace(other, workloads=tuple(dataclasses.replace(w, path=str(EXAMPLE))
                                                          for w in other.workloads)) == from_path
    # ... and every output made from them is the command line's.
    code, out, _ = _cli(capsys, "plan", str(EXAMPLE), "--format", "json")
    assert code == 0
    assert proposalkit.plan_json(from_path) == proposalkit.plan_json(from_text) == proposalkit.plan_json(from_data) == out
    assert json.loads(out) == proposalkit.plan_dict(from_data)
    assert proposalkit.plan_text(from_data) == _cli(capsys, "plan", str(EXAMPLE))[1]
    assert proposalkit.plan_markdown(from_text) == _cli(capsys, "plan", str(EXAMPLE), "--format", "markdown")[1]


def test_a_list_of_paths_is_planned_together_as_the_command_line_does(capsys):
    plan = proposalkit.plan([EXAMPLE, str(INFERENCE)])
    assert [w.path for w in plan.workloads][-1] == str(INFERENCE)
    assert proposalkit.plan_json(plan) == _cli(capsys, "plan", str(EXAMPLE), str(INFERENCE), "--format", "json")[1]


def test_the_mapping_is_not_changed():
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["defaults"] = {"buffer": 0.2}
    before = json.dumps(data, sort_keys=True)
    proposalkit.plan(data=data, base_dir=EXAMPLE.parent)
    assert json.dumps(data, sort_keys=True) == before


def test_name_names_text_and_data_in_records_and_messages():
    plan = proposalkit.plan(text=INFEASIBLE.replace("llama-3.1-70b", "qwen2.5-0.5b"), name="sweep.yaml")
    assert plan.workloads[0].path == "sweep.yaml"
    with pytest.raises(proposalkit.InputError) as caught:
        proposalkit.plan(data={"workloads": [{"name": "x"}]}, name="from-my-notebook")
    assert {p.path for p in caught.value.problems} == {"from-my-notebook"}


# ----------------------------------------------------------------- errors

def test_an_invalid_mapping_reports_each_field_without_a_line():
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["workloads"][0]["gpus"] = "eight"
    data["workloads"][2]["tokns"] = 5
    with pytest.raises(proposalkit.InputError) as caught:
        proposalkit.plan(data=data, base_dir=EXAMPLE.parent)
    problems = {p.field: p for p in caught.value.problems}
    assert set(problems) == {"workloads[0].gpus", "workloads[2].tokns"}
    assert all(p.path == "<dict>" and p.line is None for p in problems.values())
    assert "positive integer" in problems["workloads[0].gpus"].message
    assert "'tokens'" in problems["workloads[2].tokns"].message     # the near match is suggested
    assert str(problems["workloads[0].gpus"]).startswith("<dict>: workloads[0].gpus: ")


def test_invalid_yaml_text_reports_the_line():
    text = EXAMPLE.read_text(encoding="utf-8")
    line = text.splitlines().index("    model: llama-3.1-8b") + 1
    bad = text.replace("    model: llama-3.1-8b", "    model: llama-9", 1)
    with pytest.raises(proposalkit.InputError) as caught:
        proposalkit.plan(text=bad, base_dir=EXAMPLE.parent)
    [problem] = caught.value.problems
    assert (problem.path, problem.line, problem.field) == ("<string>", line, "workloads[0].model")


@pytest.mark.parametrize("data, field, words", [
    ({"workloads": [{"name": "x", 3: 1}]}, "workloads[0]", "a key must be a field name"),
    ({"workloads": [{"name": "x", "tokens": {1, 2}}]}, "workloads[0].tokens", "not a value a workload file can hold"),
    ({"workloads": [{"name": "x", "tokens": Path("10M")}]}, "workloads[0].tokens", "not a value"),
])
def test_values_no_yaml_file_could_hold_are_problems_at_their_field(data, field, words):
    with pytest.raises(proposalkit.InputError) as caught:
        proposalkit.plan(data=data)
    [problem] = caught.value.problems
    assert (problem.path, problem.line, problem.field) == ("<dict>", None, field) and words in problem.message


def test_a_mapping_that_contains_itself_or_nests_too_deeply_is_an_input_error():
    loop: dict = {"name": "x"}
    loop["lora"] = loop
    deep: dict = {"workloads": []}
    for _ in range(5000):
        deep = {"defaults": deep}
    for data in ({"workloads": [loop]}, deep):
        with pytest.raises(proposalkit.InputError):
            proposalkit.plan(data=data)


def test_an_infeasible_plan_raises_infeasible_error_as_the_command_line_exits_1(tmp_path, capsys):
    with pytest.raises(proposalkit.InfeasibleError) as caught:
        proposalkit.plan(text=INFEASIBLE)
    assert caught.value.messages and "too-big" in str(caught.value)
    assert isinstance(caught.value, proposalkit.ProposalkitError)
    path = tmp_path / "w.yaml"
    path.write_text(INFEASIBLE, encoding="utf-8")
    code, _, err = _cli(capsys, "plan", str(path))
    assert code == 1 and err.strip() == str(caught.value).replace("<string>", str(path))


@pytest.mark.parametrize("call, words", [
    (lambda: proposalkit.plan(), "got none"),
    (lambda: proposalkit.plan(EXAMPLE, text="workloads: []"), "got a path and text="),
    (lambda: proposalkit.plan("workloads:\n  - name: x\n"), "use plan(text=...)"),
    (lambda: proposalkit.plan({"workloads": []}), "data="),
    (lambda: proposalkit.plan(data="workloads: []"), "takes a mapping"),
    (lambda: proposalkit.plan(text=b"workloads: []"), "as str"),
    (lambda: proposalkit.plan(EXAMPLE, base_dir="."), "go with text= or data="),
])
def test_a_call_that_does_not_say_what_the_input_is_is_a_type_error(call, words):
    with pytest.raises(TypeError, match=None) as caught:
        call()
    assert words in str(caught.value)


def test_write_reports_refuses_an_unknown_format(tmp_path):
    plan = proposalkit.plan(EXAMPLE)
    with pytest.raises(ValueError, match="'docx'"):
        proposalkit.write_reports(plan, tmp_path, ["md", "docx"])
    assert not any(tmp_path.iterdir())


# ----------------------------------------------------------------- nothing printed

def test_library_calls_print_nothing(tmp_path, capfd):
    """At the file descriptors, so a C library writing to stderr (Pango, fontconfig) is caught too."""
    text = EXAMPLE.read_text(encoding="utf-8")
    plan = proposalkit.plan(text=text, base_dir=EXAMPLE.parent)
    proposalkit.plan(EXAMPLE)
    proposalkit.plan(data=yaml.safe_load(text), base_dir=EXAMPLE.parent)
    for render in (proposalkit.plan_text, proposalkit.plan_json, proposalkit.plan_markdown, proposalkit.plan_dict):
        render(plan)
    # Four workloads and an inference file run section B past its 1.5 pages: a warning, returned.
    both = proposalkit.plan([EXAMPLE, INFERENCE])
    formats = ["md", "html", "pdf"] if weasyprint_available() else ["md", "html"]
    written = proposalkit.write_reports(both, tmp_path / "report", formats)
    assert [Path(p).name for p in written.paths][:len(formats)] == [f"report.{f}" for f in formats]
    assert [Path(p).name for p in written.paths][-len(formats):] == [f"supplement.{f}" for f in formats]
    assert written.warnings and written.body_pages > 1.5 and written.body_pages_measured == ("pdf" in formats)
    proposalkit.diff(str(EXAMPLE), "/dev/null")
    for call in (lambda: proposalkit.plan(text=INFEASIBLE),
                 lambda: proposalkit.plan(data={"workloads": [{"name": "x", "gpus": "eight"}]})):
        with pytest.raises(proposalkit.ProposalkitError):
            call()
    assert capfd.readouterr() == ("", "")


def test_diff_is_what_the_command_line_prints(capsys):
    for fmt in ("markdown", "json"):
        assert proposalkit.diff("/dev/null", str(EXAMPLE), format=fmt) == \
            _cli(capsys, "diff", "/dev/null", str(EXAMPLE), "--format", fmt)[1]


# ----------------------------------------------------------------- the public surface

def test_every_name_in_all_is_exported_and_records_are_the_planners_own():
    from proposalkit.planning import records

    for name in proposalkit.__all__:
        assert getattr(proposalkit, name) is not None, name
    assert proposalkit.Plan is records.Plan and proposalkit.WorkloadPlan is records.WorkloadPlan
    assert set(proposalkit.__all__) <= set(dir(proposalkit))
    with pytest.raises(AttributeError):
        proposalkit.NoSuchRecord     # noqa: B018


def test_the_type_checking_imports_name_the_same_records_as_the_lazy_table():
    """proposalkit/__init__.py says each record's module twice: for type checkers and for __getattr__."""
    tree = ast.parse((ROOT / "proposalkit" / "__init__.py").read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    typed = {alias.name: node.module for node in block.body for alias in node.names}
    assert typed == dict(proposalkit._RECORDS)


@pytest.mark.parametrize("name", sorted(proposalkit._RECORDS))
def test_every_field_of_an_exported_record_has_a_docstring(name):
    """An attribute docstring (a string right under the field), which editors show and docs/python-api.md
    prints (tools/gendocs.py record_reference)."""
    record = getattr(proposalkit, name)
    node, _ = gendocs.record_class(name, proposalkit._RECORDS[name])
    documented = {field for field, _, doc in gendocs.record_fields(node) if doc.strip()}
    fields = set(record._fields) if hasattr(record, "_fields") else {f.name for f in dataclasses.fields(record)}
    assert ast.get_docstring(node) and fields - documented == set()


# ----------------------------------------------------------------- docs/python-api.md runs

PAGE = ROOT / "docs" / "python-api.md"


def test_the_pages_python_blocks_run_and_print_what_it_shows():
    blocks = gendocs.python_examples(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) >= 5 and all(shown is not None for _, shown, _ in blocks)
    for code, shown, printed in blocks:
        assert printed == shown, f"docs/python-api.md: the block starting {code.splitlines()[0]!r} prints " \
                                 "something else today: run make docs"


def test_a_stale_python_example_is_found():
    # The test of the test: a block whose output differs is reported, and make docs rewrites it.
    page = "```python\nx = 6 * 7\n```\n\n```python\nprint(x)\n```\n\n<!-- prints -->\n```text\n41\n```\n"
    assert gendocs.python_examples(page) == [("x = 6 * 7\n", None, ""), ("print(x)\n", "41\n", "42\n")]
    assert gendocs.update(page) == page.replace("41", "42")
    with pytest.raises(ZeroDivisionError):
        gendocs.python_examples("```python\n1 / 0\n```\n")


def test_py_typed_ships_with_the_package():
    tomllib = pytest.importorskip("tomllib")
    assert (ROOT / "proposalkit" / "py.typed").is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["proposalkit"]


def test_public_functions_are_annotated():
    import inspect

    for name in ("plan", "plan_dict", "plan_json", "plan_text", "plan_markdown", "write_reports", "diff"):
        signature = inspect.signature(getattr(proposalkit, name))
        assert signature.return_annotation is not inspect.Signature.empty, name
        assert all(p.annotation is not inspect.Parameter.empty for p in signature.parameters.values()), name


def test_importing_the_package_loads_no_stage():
    code = ("import sys, proposalkit; print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('jinja2', 'weasyprint', 'pydantic', 'yaml') or m.startswith('proposalkit.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['proposalkit.api', 'proposalkit.errors', 'proposalkit.text']"
