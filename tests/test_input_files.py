"""Input files are read only when they are regular files of a stated size; refused before reading otherwise.

`plan /dev/zero` read without end and a FIFO blocked forever; both are now exit 2
with one line, without reading a byte.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from proposalkit.cli import main

GOOD = "workloads:\n  - name: a\n    kind: finetune\n    method: lora\n    model: llama-3.1-8b\n    tokens: 200M\n"


def plan(path, capsys):
    code = main(["plan", str(path)])
    captured = capsys.readouterr()
    assert captured.out == ""
    return code, captured.err


def test_character_device_is_refused(capsys):
    assert plan("/dev/zero", capsys) == (2, "/dev/zero: not a regular file (got a character device, expected a "
                                            "workload file)\n")


def test_folder_is_refused(tmp_path, capsys):
    assert plan(tmp_path, capsys) == (2, f"{tmp_path}: not a regular file (got a folder, expected a workload file)\n")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_fifo_is_refused_without_blocking(tmp_path):
    """In a subprocess with a timeout: the old reader blocked forever on a FIFO with no writer."""
    fifo = tmp_path / "w.yaml"
    os.mkfifo(fifo)
    result = subprocess.run([sys.executable, "-m", "proposalkit", "plan", str(fifo)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr == f"{fifo}: not a regular file (got a FIFO (named pipe), expected a workload file)\n"


def test_workload_file_over_10_mib_is_refused(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    size = 10 * 2**20 + 1        # one byte over 10 MiB (files.WORKLOAD_FILE)
    path.write_bytes(GOOD.encode() + b"#" * (size - len(GOOD)))
    assert plan(path, capsys) == (2, f"{path}: file too large (10,485,761 bytes, expected a workload file of at "
                                     "most 10 MiB, some 30,000 workloads)\n")


def test_workload_file_of_10_mib_is_read(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    size = 10 * 2**20
    path.write_bytes(GOOD.encode() + b"#" * (size - len(GOOD)))
    assert main(["plan", str(path)]) == 0, capsys.readouterr().err


def test_symlink_to_a_regular_file_is_read(tmp_path, capsys):
    (tmp_path / "real.yaml").write_text(GOOD)
    (tmp_path / "w.yaml").symlink_to(tmp_path / "real.yaml")
    code = main(["plan", str(tmp_path / "w.yaml")])
    assert code == 0, capsys.readouterr().err


def test_integer_of_5000_digits_is_an_input_error(tmp_path, capsys):
    """Python refuses to read integers of over 4,300 digits (a ValueError, once exit 3)."""
    path = tmp_path / "w.yaml"
    path.write_text(GOOD + "    micro_batch: 1" + "0" * 5000 + "\n")
    assert plan(path, capsys) == (2, f"{path}:7: workloads[0].micro_batch: not a number Python can read (more "
                                     "than 4,300 digits)\n")


def test_bytes_from_git_over_10_mib_are_refused():
    """A version read from git (diff REV:PATH) comes as bytes; the same limit applies."""
    from proposalkit.errors import InputError
    from proposalkit.input.loading import load_file

    with pytest.raises(InputError) as caught:
        load_file("HEAD:w.yaml", raw=GOOD.encode() + b"#" * (10 * 2**20 + 1 - len(GOOD)), base_dir=".")
    assert str(caught.value) == ("HEAD:w.yaml: file too large (10,485,761 bytes, expected a workload file of at "
                                 "most 10 MiB, some 30,000 workloads)")
