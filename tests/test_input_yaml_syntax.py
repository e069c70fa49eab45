"""YAML a newcomer gets wrong: the message says what is wrong in plain words, at the line to change
(issue 21, item 5). Through the CLI: exit 2, one line on stderr, nothing on stdout.

PyYAML reports where its parser gave up (problem_mark) and, for some errors, where the construct it was
reading began (context_mark). For a key without ':' or a quote or bracket never closed, the parser
gives up a line or more later (often at the start of the next line, or past the end of the file): the
line to change is the context's. Before this change every case below but the indentation ones named
the line after, or a line past the end of the file.
"""

from __future__ import annotations

import pytest

from proposalkit.cli import main

TAB = "tab characters are not allowed in YAML indentation; use spaces"

CASES = {
    # name: (file text, line reported, message after 'FILE:LINE: ')
    "a tab indenting a field": (
        "workloads:\n  - name: a\n\tkind: inference\n    model: llama-3.1-8b\n", 3, TAB),
    "a tab after spaces": (
        "workloads:\n  - name: a\n  \tkind: inference\n", 3, TAB),
    "a tab indenting a list item": (
        "workloads:\n\t- name: a\n", 2, TAB),
    "a tab after the dash": (
        "workloads:\n  -\tname: a\n", 2, TAB),
    "a tab indenting the top level's field": (
        "proposal:\n\ttitle: x\nworkloads: []\n", 2, TAB),
    "a key without ':'": (
        "workloads:\n  - name: a\n    kind inference\n    model: llama-3.1-8b\n", 3,
        "malformed YAML: a key without ':' after it (expected 'key: value'); the parser stopped on line 4 "
        "(could not find expected ':')"),
    "the last key without ':'": (
        "workloads:\n  - name: a\n    kind: inference\n    hours\n", 4,
        "malformed YAML: a key without ':' after it (expected 'key: value')"),
    "a '[' not closed": (
        "workloads:\n  - name: a\n    model: [llama-3.1-8b\n    hours: 10\n", 3,
        "malformed YAML: a '[' that is not closed (expected ',' between items and ']' at the end); the parser "
        "stopped on line 4 (did not find expected ',' or ']')"),
    "a '[' not closed on the last line": (
        "workloads:\n  - name: a\n    kind: [finetune\n", 3,
        "malformed YAML: a '[' that is not closed (expected ',' between items and ']' at the end)"),
    "a '{' not closed": (
        "workloads:\n  - {name: a, kind: inference\n  - {name: b}\n", 2,
        "malformed YAML: a '{' that is not closed (expected ',' between fields and '}' at the end); the parser "
        "stopped on line 3 (did not find expected ',' or '}')"),
    "a quote not closed": (
        'workloads:\n  - name: a\n    kind: "inference\n    model: llama-3.1-8b\n\n', 3,
        "malformed YAML: a quote that is not closed (expected the closing quote); the parser stopped on line 4 "
        "(found unexpected end of stream)"),
    # Errors found where they are keep the parser's line and words.
    "a field indented less than its neighbours": (
        "workloads:\n  - name: a\n    kind: inference\n   model: llama-3.1-8b\n", 4,
        "malformed YAML: while parsing a block collection, did not find expected '-' indicator"),
    "a second ': ' in a value": (
        "workloads:\n  - name: a\n    kind: inference: x\n", 3,
        "malformed YAML: mapping values are not allowed in this context"),
}


@pytest.mark.parametrize("text, line, message", CASES.values(), ids=CASES.keys())
def test_a_syntax_error_is_reported_at_the_line_to_change(tmp_path, capsys, text, line, message):
    path = tmp_path / "w.yaml"
    path.write_text(text, encoding="utf-8")
    assert main(["plan", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"{path}:{line}: {message}\n"


@pytest.mark.parametrize("loader", ["SafeLoader", "CSafeLoader"])
def test_tabs_are_named_by_either_parser(loader):
    """libyaml says 'found a tab character that violates indentation' or 'found character that cannot start
    any token'; the pure-Python parser 'found character '\\t' that cannot start any token': one message."""
    import yaml

    from proposalkit.input.yamlfile import syntax_problem

    text = "workloads:\n  - name: a\n\tkind: inference\n"
    with pytest.raises(yaml.MarkedYAMLError) as raised:
        yaml.load(text, Loader=getattr(yaml, loader))
    problem = syntax_problem("w.yaml", text, raised.value)
    assert (problem.line, problem.message) == (3, TAB)
