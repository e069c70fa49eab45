"""Standard output that cannot be written: one line on stderr and exit 2; a reader that
stops early: quiet; PROPOSALKIT_DEBUG=1: the traceback, same exit code. Through a real
process, since each case depends on the file descriptors the shell hands over."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "workloads" / "code-models.yaml")
PYTHON = [sys.executable, "-m", "proposalkit"]

# One case per command that prints to standard output (report prints the paths it wrote).
COMMANDS = {
    "plan": ["plan", EXAMPLE],
    "report": ["report", EXAMPLE, "--format", "md"],
    "diff": ["diff", "/dev/null", EXAMPLE],
    "check": ["check", EXAMPLE],
    "catalog": ["catalog", "models"],
    "schema": ["schema"],
}


def env(**extra):
    out = {k: v for k, v in os.environ.items() if k != "PROPOSALKIT_DEBUG"}
    return out | extra


def run(argv, stdout, tmp_path, **extra_env):
    return subprocess.run([*PYTHON, *argv], stdout=stdout, stderr=subprocess.PIPE, cwd=tmp_path,
                          env=env(**extra_env), text=True, timeout=120)


def closed_stdout(argv, tmp_path, **extra_env):
    """The command started as `proposalkit ... >&-`: fd 1 closed."""
    return subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *PYTHON, *argv], stderr=subprocess.PIPE,
                          cwd=tmp_path, env=env(**extra_env), text=True, timeout=120)


def message(command, reason):
    return (f"proposalkit {command}: cannot write to standard output ({reason}); "
            "redirect it to a file or a pipe that can take it\n")


def without_warnings(err):
    """stderr less the warnings and hints a command may print whatever stdout is (check: a pilot log and
    the estimate more than 25% apart, FILE: warning: ...; the example's lora-sweep pilot is; plan: the
    framework its pilot log names, FILE:LINE: field: hint: ...)."""
    marks = (": warning: ", ": hint: ") if isinstance(err, str) else (b": warning: ", b": hint: ")
    return err[:0].join(line for line in err.splitlines(True) if not any(m in line for m in marks))


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("command", COMMANDS)
def test_full_stdout(command, tmp_path):
    with open("/dev/full", "w") as full:
        done = run(COMMANDS[command], full, tmp_path)
    assert (done.returncode, without_warnings(done.stderr)) == (2, message(command, "No space left on device"))


@pytest.mark.parametrize("command", COMMANDS)
def test_closed_stdout(command, tmp_path):
    done = closed_stdout(COMMANDS[command], tmp_path)
    assert (done.returncode, done.stderr) == (2, message(command, "it is closed"))


def test_closed_stdout_writes_no_report(tmp_path):
    """Checked before any work: with nowhere to say what it wrote, report writes nothing."""
    closed_stdout(COMMANDS["report"], tmp_path)
    assert not (tmp_path / "build").exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_reader_gone_is_quiet(command, tmp_path):
    """The reader closes the pipe before the command writes (imports alone take longer)."""
    proc = subprocess.Popen([*PYTHON, *COMMANDS[command]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=tmp_path, env=env())
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, without_warnings(err)) == (0, b"")


def test_head_takes_one_line_of_a_long_plan(tmp_path):
    """`plan ... | head -1` on a plan longer than a pipe holds (64 KiB on Linux): one line, no message."""
    workloads = "".join(f"  - {{name: w{i}, kind: inference, model: llama-3.1-8b, context: 4k, hours: 10, "
                        f"gpu: a100-80gb, gpus: 1}}\n" for i in range(800))
    (tmp_path / "many.yaml").write_text("workloads:\n" + workloads)
    done = subprocess.run(["bash", "-c", 'set -o pipefail; "$@" | head -1', "bash", *PYTHON,
                           "plan", "many.yaml", "--format", "json"],
                          capture_output=True, cwd=tmp_path, env=env(), text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "{\n", "")
    full = run(["plan", "many.yaml", "--format", "json"], subprocess.PIPE, tmp_path)
    assert len(full.stdout) > 65536


BOOM = ("import sys, proposalkit.cli as cli\n"
        "def boom(args):\n"
        "    raise RuntimeError('boom')\n"
        "cli.cmd_schema = boom\n"
        "sys.exit(cli.main(['schema']))\n")


def test_internal_error_is_one_line_and_exit_3(tmp_path):
    done = subprocess.run([sys.executable, "-c", BOOM], capture_output=True, text=True, cwd=tmp_path, env=env())
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr == ("proposalkit: internal error: RuntimeError: boom (a bug in proposalkit; set "
                           "PROPOSALKIT_DEBUG=1 for the traceback and please report it)\n")


def test_debug_shows_the_traceback_and_keeps_exit_3(tmp_path):
    done = subprocess.run([sys.executable, "-c", BOOM], capture_output=True, text=True, cwd=tmp_path,
                          env=env(PROPOSALKIT_DEBUG="1"))
    assert done.returncode == 3
    assert done.stderr.startswith("Traceback (most recent call last):\n")
    assert "RuntimeError: boom\n" in done.stderr
    assert done.stderr.endswith("proposalkit: internal error: RuntimeError: boom (a bug in proposalkit; set "
                                "PROPOSALKIT_DEBUG=1 for the traceback and please report it)\n")


def test_debug_keeps_exit_2_for_a_closed_stdout(tmp_path):
    done = closed_stdout(["schema"], tmp_path, PROPOSALKIT_DEBUG="1")
    assert done.returncode == 2
    assert done.stderr.startswith("Traceback (most recent call last):\n")
    assert done.stderr.endswith(message("schema", "it is closed"))


def test_debug_keeps_exit_2_for_an_input_error(tmp_path):
    done = run(["plan", "missing.yaml"], subprocess.PIPE, tmp_path, PROPOSALKIT_DEBUG="1")
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_help_to_a_full_or_closed_stdout(tmp_path):
    """argparse drops a failed --help write and exits 0; proposalkit reports it like any output."""
    with open("/dev/full", "w") as full:
        done = run(["--help"], full, tmp_path)
    assert (done.returncode, done.stderr) == (2, "proposalkit: cannot write to standard output (No space left on "
                                                 "device); redirect it to a file or a pipe that can take it\n")
    done = closed_stdout(["plan", "--help"], tmp_path)
    assert (done.returncode, done.stderr) == (2, "proposalkit: cannot write to standard output (it is closed); "
                                                 "redirect it to a file or a pipe that can take it\n")
    assert run(["--help"], subprocess.PIPE, tmp_path).stdout.startswith("usage: proposalkit ")
