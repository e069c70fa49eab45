"""`diff` reaches nothing past the tool: REV:PATH never becomes a git option, and the
Markdown that CI posts on pull requests shows user text as text (no images, links,
HTML, @mentions, code-span breakouts, control characters)."""

from __future__ import annotations

import json
import re
import subprocess
import textwrap

import pytest

from proposalkit.cli import main
from proposalkit.render.format import md_code
from test_diff import bash, git, pull_request, step

HOSTILE = "![x](https://ev.il/i.png) <img src=x onerror=alert(1)> [c](javascript:alert(1)) @octocat ``` `x` |"


def workload(name="a", model_name="tiny", tokens="10M", description=None):
    text = textwrap.dedent(f"""\
        - name: {name}
          kind: finetune
          method: lora
          model: {{name: {json.dumps(model_name)}, params: 1B, layers: 16, hidden: 2048, heads: 16, kv_heads: 16,
                   ffn_hidden: 8192, vocab: 32000}}
          tokens: {tokens}
          throughput: {{tokens_per_second: 20000, gpu: a100-80gb, gpus: 1}}
          gpu: a100-80gb
          gpus: 1
        """)
    if description is not None:
        text += f"  description: {json.dumps(description)}\n"
    return "workloads:\n" + textwrap.indent(text, "  ")


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def diff_of(tmp_path, capsys, old_text, new_text, *extra):
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(old_text, encoding="utf-8")
    new.write_text(new_text, encoding="utf-8")
    code, out, err = run(capsys, "diff", old, new, *extra)
    assert code == 0, err
    return out


def row(out, name="a"):
    return next(line for line in out.splitlines() if line.startswith(f"| `{name}` |"))


def unescaped_pipes(line):
    return line.replace("\\|", "").count("|")


# ----------------------------------------------------------------- REV:PATH

@pytest.fixture
def repo(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "w.yaml").write_text(workload(), encoding="utf-8")
    git(root, "add", "w.yaml")
    git(root, "commit", "-q", "-m", "v1")
    monkeypatch.chdir(root)
    return root


def test_a_rev_that_is_an_option_is_refused_and_git_writes_nothing(repo, tmp_path, capsys):
    target = tmp_path / "x"
    spec = f"--output={target}:w.yaml"
    code, out, err = run(capsys, "diff", "--", spec, "w.yaml")
    assert (code, out) == (2, "")
    assert err == (f"{spec}: cannot read it from git: the revision '--output={target}' starts with '-', which git "
                   "would take for an option (give REV:PATH with a revision such as HEAD or origin/main, or a file "
                   "path)\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo"]     # git would have written x:w.yaml
    assert run(capsys, "diff", "w.yaml", "--", "-p:w.yaml")[0] == 2       # NEW is read the same way


def test_the_command_line_way_too(repo, tmp_path):
    """As a shell runs it: `proposalkit diff -- '--output=/some/file:w.yaml' w.yaml`."""
    import sys

    target = tmp_path / "y"
    done = subprocess.run([sys.executable, "-m", "proposalkit", "diff", "--", f"--output={target}:w.yaml", "w.yaml"],
                          capture_output=True, text=True, cwd=repo, timeout=120)
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo"]     # git would have written y:w.yaml


def test_git_is_told_where_its_options_end(repo, capsys, monkeypatch):
    """The revision reaches `git cat-file` after --end-of-options (git ≥ 2.24), so a REV that git could
    still read as an option is taken as a revision; `--` would make REV:PATH a path instead. The blob
    is read with `cat-file blob`, as committed (`git show` would run a textconv filter)."""
    from proposalkit.review import sides

    calls = []
    real = subprocess.run

    def recording(args, **kwargs):
        calls.append(list(args))
        return real(args, **kwargs)

    monkeypatch.setattr(sides.subprocess, "run", recording)
    assert run(capsys, "diff", "HEAD:w.yaml", "w.yaml")[0] == 0
    assert ["git", "cat-file", "blob", "--end-of-options", "HEAD:w.yaml"] in calls
    assert not [c for c in calls if "show" in c]


# ----------------------------------------------------------------- Markdown

def test_hostile_model_name_and_description_are_text(tmp_path, capsys):
    old = workload(model_name="tiny", description="first")
    new = workload(model_name=HOSTILE, description="@team please <b>merge</b> \x1b]0;pwn\x07 \x1b[2J")
    out = diff_of(tmp_path, capsys, old, new)
    line = row(out)
    assert not any(ch in out for ch in "\x1b\x07")
    what = line.split(" | ")[-1]
    # Every character Markdown or GitHub acts on is backslash-escaped, or inside a code span (what
    # GitHub would link): none is left once both go.
    unescaped = re.sub(r"\\.", "", what.removesuffix(" |"))
    assert not set(re.sub(r"(`+)[^`].*?\1", "", unescaped)) & set("<>[]!@`*_#&~$|")
    assert unescaped_pipes(line) == 7          # six columns: the model name's pipe stays in its cell
    assert ("model tiny → `![x](https://ev.il/i.png`) \\<img src=x onerror=alert(1)\\> "
            "\\[c\\](javascript:alert(1)) `@octocat` \\`\\`\\` \\`x\\` \\|;") in line
    assert ("description first → `@team` please \\<b\\>merge\\</b\\> \\\\x1b\\]0;pwn\\\\x07 "
            "\\\\x1b\\[2J") in line


def test_json_keeps_the_values_and_no_raw_control_character(tmp_path, capsys):
    new_name = "tiny \x1b[2J \x9b31m \x7f"
    out = diff_of(tmp_path, capsys, workload(), workload(model_name=new_name), "--format", "json")
    assert not any(ch in out for ch in "\x1b\x9b\x7f")
    assert "\\u009b31m" in out and "\\u007f" in out
    change = json.loads(out)["changed"][0]["changes"][0]
    assert (change["field"], change["before"], change["after"]) == ("model", "tiny", new_name)


@pytest.mark.parametrize("text, span", [
    ("plain", "`plain`"),
    ("a`b", "``a`b``"),
    ("``x", "``` ``x ```"),
    ("x`", "`` x` ``"),
    ("a|b", "`a\\|b`"),
    ("two\nlines\x1b", "`two lines\\x1b`"),
])
def test_code_spans_cannot_be_left(text, span):
    """Workload names are [a-z0-9_-] (input/schema.py NAME_PATTERN); the code span holds any text anyway."""
    assert md_code(text) == span


def test_names_stay_code_spans(tmp_path, capsys):
    out = diff_of(tmp_path, capsys, workload("old-one"), workload("new_one"))
    assert "| `old-one` → `new_one` | renamed |" in out


# ----------------------------------------------------------------- the workflow

def test_workflow_escapes_the_file_name_and_fences_errors(tmp_path):
    """A file name and an error message a pull request controls: escaped heading, indented code block."""
    name = "x`![i](javascript:alert(1))`@octocat.yaml"
    root, env = pull_request(tmp_path, {"plan.yaml": workload()}, {"plan.yaml": workload(), name: "workloads:\n  - name: a\n    kind: \"```<img>\"\n"})
    diffed = bash(step("Diff")["run"], root, env)
    assert diffed.returncode == 0, diffed.stderr
    body = (root / "budget-diff.md").read_text(encoding="utf-8").splitlines()
    assert body[0] == "### Budget change: ``workloads/x`![i](javascript:alert(1))`@octocat.yaml``"
    assert body[1:4] == ["", "proposalkit diff failed:", ""]
    # The message, backticks and all, is code: an indented block that only an unindented line ends.
    errors = body[4:body.index("", 4)]
    assert all(line.startswith("    ") for line in errors), body
    assert ("    workloads/x`![i](javascript:alert(1))`@octocat.yaml:3: workloads[0].kind: unknown kind "
            "(got '```<img>', expected finetune, pretrain or inference)") in errors


def test_a_blob_larger_than_a_workload_file_is_refused_before_it_is_read(repo, capsys, monkeypatch):
    """files.py: a workload file holds at most 10 MiB; git gives the size first (`cat-file -s`)."""
    from proposalkit.review import sides

    big = 10 * 2**20 + 1
    (repo / "big.yaml").write_bytes(b"#" * big)
    git(repo, "add", "big.yaml")
    git(repo, "commit", "-q", "-m", "big")
    calls = []
    real = subprocess.run
    monkeypatch.setattr(sides.subprocess, "run", lambda args, **kw: calls.append(args[1]) or real(args, **kw))
    code, out, err = run(capsys, "diff", "HEAD:big.yaml", "w.yaml")
    assert (code, out) == (2, "")
    assert err == (f"HEAD:big.yaml: file too large ({big:,} bytes, expected a workload file of at most 10 MiB, "
                   "some 30,000 workloads)\n")
    assert "show" not in calls
