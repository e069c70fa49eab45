"""User text in error messages is shown with control characters escaped, never sent raw to the terminal.

A key, model id or file name holding an escape sequence (ESC ] 0 ; title BEL sets
the terminal's title; ESC [ 2 J clears the screen) is printed as '\\x1b…', and a
newline as '\\n', so each problem stays one line.
"""

from __future__ import annotations

from proposalkit.cli import main
from proposalkit.errors import InfeasibleError, Problem
from proposalkit.input.schema import Workload

# The accepted fields as the message lists them: the schema's, in its order (issue 12 adds fields;
# this test is about escaping, not about the list).
FIELDS = ", ".join(Workload.model_fields)


def test_key_with_escape_sequence_is_escaped(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text('workloads:\n  - name: a\n    kind: finetune\n    method: full\n    tokens: 1B\n'
                    '    model: llama-3.1-8b\n    "gpu\\e]0;pwned\\a\\nx": 1\n', encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err.replace(str(path), "FILE")
    assert err == (r"FILE:7: workloads[0].gpu\x1b]0;pwned\x07\nx: unknown field 'gpu\x1b]0;pwned\x07\nx' "
                   f"(expected one of: {FIELDS})" "\n")


def test_file_name_with_escape_sequence_is_escaped(tmp_path, capsys):
    path = tmp_path / "w\x1b[2J.yaml"
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"{tmp_path}/w\\x1b[2J.yaml: cannot read the file (No such file or directory)\n"
    assert "\x1b" not in err


def test_problem_and_infeasible_messages_are_escaped():
    problem = Problem("w.yaml", 3, "workloads[0].model", "unknown model llama\x1b]0;pwned\x07\r\x9b")
    assert str(problem) == r"w.yaml:3: workloads[0].model: unknown model llama\x1b]0;pwned\x07\x0d\x9b"
    assert str(InfeasibleError(["a\x1b[2J does not fit", "b\nc"])) == "a\\x1b[2J does not fit\nb\\nc"
