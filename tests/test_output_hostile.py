"""`report -o DIR` against hostile targets and concurrent or killed runs (issue 21), through the CLI.

Each case asserts the exit code, the message on stderr, that no traceback is printed, and what
the folder holds afterwards: one complete set (every file from one run), the previous set, or
nothing at all. The concurrent and killed runs are real processes; a monkeypatch inside each
slows the step under test (the renames, the PDF, the staging) so the race is not left to chance.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from proposalkit.cli import main
from proposalkit.render import folder_lock
from proposalkit.render import report

WORKLOAD = """\
proposal:
  title: run-{i}
workloads:
  - name: tune-{i}
    kind: finetune
    method: lora
    model: llama-3.1-8b
    data: {{samples: 1000, seq_len: 1024, epochs: 1}}
    throughput: {{tokens_per_second: 4000, gpu: a100-80gb, gpus: 1}}
    gpu: a100-80gb
    gpus: 1
"""

SET_MD_HTML = ("charts/gpu-hours.svg", "charts/memory.svg", "report.md", "report.html", "supplement.md",
               "supplement.html")


def workload(folder: Path, i: int = 0) -> Path:
    path = folder / f"w{i}.yaml"
    path.write_text(WORKLOAD.format(i=i), encoding="utf-8")
    return path


def contents(folder: Path) -> dict[str, bytes | None]:
    """Every entry under `folder`, hidden ones too: relative path → bytes (folders: None)."""
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None)
            for p in sorted(folder.rglob("*"))}


def runs_by_file(folder: Path) -> dict[str, set[int]]:
    """Which run (workload i) each file of a report set came from."""
    return {name: {i for i in range(10) if f"tune-{i}" in (folder / name).read_text(encoding="utf-8")}
            for name in SET_MD_HTML}


def run_of(folder: Path) -> set[int]:
    """Which runs the files of a report set came from: one number for a whole set."""
    return set().union(*runs_by_file(folder).values())


def no_traceback(err: str) -> None:
    assert "Traceback" not in err and "internal error" not in err, err


# A process that runs `proposalkit` with one function of the report writer slowed or stopped:
# argv[1] names the patch, the rest is the command line.
RUNNER = textwrap.dedent("""\
    import os, sys, time
    from pathlib import Path
    from proposalkit.render import folder_lock, pdf, report
    patch, marker, barrier, n = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
    if patch == "slow-renames":
        # Every run waits at the door of the lock until all n are there, then renames slowly, at
        # random pauses: unlocked, their renames would interleave in a different order per file.
        import random
        real_locked, real_replace = folder_lock.locked, os.replace
        def locked(folder, wait=None):
            (barrier / str(os.getpid())).touch()
            deadline = time.monotonic() + 60
            while len(list(barrier.iterdir())) < n and time.monotonic() < deadline:
                time.sleep(0.01)
            return real_locked(folder, wait)
        def replace(a, b):
            time.sleep(random.uniform(0, 0.2))
            real_replace(a, b)
        folder_lock.locked, report.os.replace = locked, replace
    elif patch == "hang-in-pdf":
        pdf._import_weasyprint = lambda: None
        def render_pdf(html, fetcher=None):
            marker.touch()
            time.sleep(600)
        pdf.render_pdf = render_pdf
    elif patch == "hang-in-staging":
        real = report._write_synced
        def write(path, data):
            real(path, data)
            marker.touch()
            time.sleep(600)
        report._write_synced = write
    from proposalkit.cli import main
    sys.exit(main(sys.argv[5:]))
""")


def start(tmp_path: Path, patch: str, argv: list[str], n: int = 1) -> subprocess.Popen:
    (tmp_path / "barrier").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "PROPOSALKIT_DEBUG"}
    return subprocess.Popen([sys.executable, "-c", RUNNER, patch, str(tmp_path / "marker"),
                             str(tmp_path / "barrier"), str(n), *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def wait_for(path: Path, proc: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never reached the step under test"
        time.sleep(0.02)


# ----------------------------------------------------------------- concurrent runs into one folder


def test_concurrent_runs_leave_one_complete_set(tmp_path):
    """Four runs reach the lock together and rename slowly (0-0.2 s a file): the folder holds every
    file of one run, exit 0 for all, no lock file or staging folder left (before the lock, the
    same runs left report.md of one run beside report.html of another)."""
    out = tmp_path / "out"
    n = 4
    procs = [start(tmp_path, "slow-renames", ["report", str(workload(tmp_path, i)), "-o", str(out),
                                              "--format", "md,html"], n) for i in range(n)]
    results = [p.communicate(timeout=120) for p in procs]
    for p, (stdout, stderr) in zip(procs, results):
        assert p.returncode == 0, stderr
        assert stderr == ""
    assert len(run_of(out)) == 1, runs_by_file(out)
    assert sorted(contents(out)) == ["charts", *sorted(SET_MD_HTML)]


def test_a_waiting_run_gives_up_with_a_message(tmp_path, capsys, monkeypatch):
    """A run that finds the folder locked for longer than the wait (a run stopped with Ctrl-Z)
    exits 2 naming the folder and the lock file; nothing is written."""
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(folder_lock, "WAIT_SECONDS", 0.2)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""\
        import fcntl, os, sys, time
        fd = os.open({str(out / folder_lock.LOCK_NAME)!r}, os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX)
        print("locked", flush=True)
        time.sleep(60)""")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        assert main(["report", str(workload(tmp_path)), "-o", str(out), "--format", "md"]) == 2
    finally:
        holder.kill()
        holder.wait()
    err = capsys.readouterr().err
    assert err == (f"proposalkit report: -o {out}: another proposalkit report kept {out} locked for 0 s; "
                   f"nothing was written (is another run stopped? remove {out / folder_lock.LOCK_NAME} if no "
                   "run is left)\n")
    assert sorted(contents(out)) == [folder_lock.LOCK_NAME]


def test_a_lock_file_left_by_a_killed_run_does_not_block(tmp_path, capsys):
    """A lock file whose holder died holds no lock: the next run writes and removes it."""
    out = tmp_path / "out"
    out.mkdir()
    (out / folder_lock.LOCK_NAME).write_bytes(b"")
    assert main(["report", str(workload(tmp_path)), "-o", str(out), "--format", "md"]) == 0
    assert folder_lock.LOCK_NAME not in contents(out)


def test_without_any_file_locking_the_set_is_written_with_a_warning(tmp_path, capsys, monkeypatch):
    """A file system that supports neither flock nor POSIX locks (Lustre mounted without
    `flock`): the set is written, and stderr says concurrent runs may mix files."""
    import fcntl

    def unsupported(fd, operation):
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))

    monkeypatch.setattr(fcntl, "flock", unsupported)
    monkeypatch.setattr(fcntl, "lockf", unsupported)
    out = tmp_path / "out"
    assert main(["report", str(workload(tmp_path)), "-o", str(out), "--format", "md"]) == 0
    err = capsys.readouterr().err
    assert err == (f"proposalkit report: warning: could not lock {out} (lockf: {os.strerror(errno.ENOSYS)}): "
                   "runs writing into it at the same time may mix their files\n")
    assert sorted(contents(out)) == ["charts", "charts/gpu-hours.svg", "charts/memory.svg", "report.md",
                                     "supplement.md"]


def test_flock_unsupported_falls_back_to_posix_locks(tmp_path, monkeypatch):
    """NFS on Linux maps flock to POSIX locks, which a lock file opened for writing takes."""
    import fcntl

    calls = []
    real_lockf = fcntl.lockf

    def no_flock(fd, operation):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    def lockf(fd, operation):
        calls.append(operation)
        return real_lockf(fd, operation)

    monkeypatch.setattr(fcntl, "flock", no_flock)
    monkeypatch.setattr(fcntl, "lockf", lockf)
    out = tmp_path / "out"
    out.mkdir()
    with folder_lock.locked(out) as held:
        assert held.how == "lockf" and held.warning is None
    assert calls == [fcntl.LOCK_EX | fcntl.LOCK_NB]
    assert list(out.iterdir()) == []


# ----------------------------------------------------------------- runs killed part way


@pytest.fixture
def previous(tmp_path) -> tuple[Path, dict]:
    """An output folder holding a complete previous set (md, html and a PDF's stand-in)."""
    out = tmp_path / "out"
    assert main(["report", str(workload(tmp_path, 9)), "-o", str(out), "--format", "md,html"]) == 0
    (out / "report.pdf").write_bytes(b"%PDF previous")
    return out, contents(out)


def test_a_run_killed_during_the_pdf_leaves_the_previous_set(tmp_path, previous):
    out, before = previous
    proc = start(tmp_path, "hang-in-pdf", ["report", str(workload(tmp_path, 1)), "-o", str(out)])
    wait_for(tmp_path / "marker", proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert contents(out) == before


def test_a_run_killed_while_staging_leaves_the_previous_set_and_the_next_run_cleans_up(tmp_path, previous,
                                                                                      capsys):
    out, before = previous
    proc = start(tmp_path, "hang-in-staging", ["report", str(workload(tmp_path, 1)), "-o", str(out),
                                               "--format", "md,html"])
    wait_for(tmp_path / "marker", proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    after = contents(out)
    left = {name for name in after if name.split("/")[0].startswith(report.STAGING_PREFIX)
            or name == folder_lock.LOCK_NAME}
    assert {name: data for name, data in after.items() if name not in left} == before
    assert any(name.startswith(report.STAGING_PREFIX) for name in left)        # what the kill left
    capsys.readouterr()
    assert main(["report", str(workload(tmp_path, 2)), "-o", str(out), "--format", "md,html"]) == 0
    assert run_of(out) == {2}
    assert sorted(contents(out)) == sorted(["charts", *SET_MD_HTML, "report.pdf"])    # nothing left over


# ----------------------------------------------------------------- targets that cannot take a report


def report_to(tmp_path, target: str, capsys) -> tuple[int, str, str]:
    code = main(["report", str(workload(tmp_path)), "-o", target, "--format", "md"])
    out, err = capsys.readouterr()
    no_traceback(err)
    return code, out, err


def test_a_dangling_symlink_is_named_with_its_target(tmp_path, capsys):
    link = tmp_path / "build"
    link.symlink_to(tmp_path / "purged" / "build")
    code, out, err = report_to(tmp_path, str(link), capsys)
    assert code == 2 and out == ""
    assert err == (f"proposalkit report: -o {link}: cannot write {link}: it is a symbolic link to "
                   f"{tmp_path / 'purged' / 'build'}, which does not exist; create that folder, or choose "
                   "another with -o\n")
    assert "File exists" not in err
    assert link.is_symlink() and not (tmp_path / "purged").exists()


def test_a_symlink_loop_is_named_as_one(tmp_path, capsys):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    code, out, err = report_to(tmp_path, str(tmp_path / "a"), capsys)
    assert code == 2
    assert err == (f"proposalkit report: -o {tmp_path / 'a'}: cannot write {tmp_path / 'a'}: it is a symbolic "
                   f"link to {tmp_path / 'b'}, which points back to itself (a loop of symbolic links); create "
                   "that folder, or choose another with -o\n")


def test_a_symlink_to_a_folder_is_followed(tmp_path, capsys):
    (tmp_path / "real").mkdir()
    (tmp_path / "build").symlink_to(tmp_path / "real")
    code, out, err = report_to(tmp_path, str(tmp_path / "build"), capsys)
    assert code == 0 and err == ""
    assert (tmp_path / "real" / "report.md").is_file()


@pytest.mark.parametrize("target", ["file", "link-to-file", "/dev/null"])
def test_a_file_is_not_a_folder(tmp_path, capsys, target):
    (tmp_path / "file").write_text("mine", encoding="utf-8")
    (tmp_path / "link-to-file").symlink_to(tmp_path / "file")
    path = target if target.startswith("/") else str(tmp_path / target)
    code, out, err = report_to(tmp_path, path, capsys)
    assert code == 2 and out == ""
    assert err == (f"proposalkit report: -o {path}: cannot write {path} (not a folder); choose a folder you can "
                   "write to\n")
    assert (tmp_path / "file").read_text(encoding="utf-8") == "mine"


def test_an_empty_folder_name_is_refused(tmp_path, capsys, monkeypatch):
    """`-o "$OUT"` with OUT unset would otherwise write into the current folder."""
    monkeypatch.chdir(tmp_path)
    code, out, err = report_to(tmp_path, "", capsys)
    assert code == 2
    assert err == ("proposalkit report: -o '': the folder name is empty (an unset shell variable?); give a "
                   "folder, e.g. -o build\n")
    assert not (tmp_path / "report.md").exists()


@pytest.mark.parametrize("code_name", ["EACCES", "EROFS"])
def test_a_read_only_folder(tmp_path, capsys, monkeypatch, code_name):
    """A folder the user cannot write to (simulated: the suite may run as root, which writes
    anywhere); a real one is tried below where the suite is not root."""
    out = tmp_path / "out"
    out.mkdir()
    code = getattr(errno, code_name)
    real_open = os.open

    def refuse(path, flags, *args, **kwargs):
        if str(path).startswith(str(out)) and flags & os.O_CREAT:
            raise OSError(code, os.strerror(code), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    result, printed, err = report_to(tmp_path, str(out), capsys)
    assert result == 2 and printed == ""
    assert err == (f"proposalkit report: -o {out}: cannot write {out} ({os.strerror(code)}); choose a folder "
                   "you can write to; nothing was written\n")
    assert list(out.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_really_read_only_folder(tmp_path, capsys):   # pragma: no cover - the suite runs as root here
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o555)
    try:
        code, printed, err = report_to(tmp_path, str(out), capsys)
    finally:
        out.chmod(0o755)
    assert code == 2
    assert err == (f"proposalkit report: -o {out}: cannot write {out} (Permission denied); choose a folder "
                   "you can write to; nothing was written\n")


@pytest.mark.parametrize("fail_at", [1, 3, 4])
def test_a_full_disk_at_any_file_leaves_the_previous_set(tmp_path, previous, capsys, monkeypatch, fail_at):
    """ENOSPC at the first chart, the report.md or the report.html: exit 2, the previous set as
    it was, no staging folder and no lock file left."""
    out, before = previous
    real = report._write_synced
    calls = []

    def fill_up(path, data):
        calls.append(path)
        if len(calls) == fail_at:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, data)

    monkeypatch.setattr(report, "_write_synced", fill_up)
    code = main(["report", str(workload(tmp_path, 1)), "-o", str(out), "--format", "md,html"])
    printed, err = capsys.readouterr()
    no_traceback(err)
    assert code == 2 and printed == ""
    assert err == (f"proposalkit report: -o {out}: cannot write {out} (No space left on device); choose a folder "
                   "you can write to; the previous report files were left as they were\n")
    assert contents(out) == before


def test_a_full_disk_when_the_lock_file_is_made(tmp_path, capsys, monkeypatch):
    """No inode left for the (empty) lock file: the same message, naming the folder."""
    out = tmp_path / "out"
    real_open = os.open

    def full(path, flags, *args, **kwargs):
        if str(path).endswith(folder_lock.LOCK_NAME):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", full)
    code, printed, err = report_to(tmp_path, str(out), capsys)
    assert code == 2
    assert err == (f"proposalkit report: -o {out}: cannot write {out} (No space left on device); choose a folder "
                   "you can write to; nothing was written\n")
    assert not out.exists()
