"""Writing the report set (issue 10): all files or none.

A report that fails (PDF unavailable, a PDF renderer that raises, a template missing, a full
disk) leaves the previous report.md, report.html, report.pdf and charts/*.svg as they were and
no temporary file behind; an output folder that cannot be written is named in a one-line
message (exit 2); a missing template is an internal error (a broken install, exit 3), never
reported as the output folder's fault.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from proposalkit.cli import main
from proposalkit.input.loading import load_files
from proposalkit.planning.planner import plan_files
from proposalkit.render import pdf as pdf_mod
from proposalkit.render import report

WORKLOAD = """\
workloads:
  - name: tune-a
    kind: finetune
    method: lora
    model: llama-3.1-8b
    data: {samples: 1000, seq_len: 1024, epochs: 1}
    throughput: {tokens_per_second: 4000, gpu: a100-80gb, gpus: 1}
    gpu: a100-80gb
    gpus: 1
"""

OLD_SET = {
    "report.md": b"# previous report\n",
    "report.html": b"<p>previous report</p>\n",
    "report.pdf": b"%PDF previous build",
    "supplement.md": b"# previous supplement\n",
    "supplement.html": b"<p>previous supplement</p>\n",
    "supplement.pdf": b"%PDF previous supplement",
    "charts/gpu-hours.svg": b"<svg>previous hours</svg>",
    "charts/memory.svg": b"<svg>previous memory</svg>",
}


@pytest.fixture
def workload(tmp_path) -> Path:
    path = tmp_path / "w.yaml"
    path.write_text(WORKLOAD, encoding="utf-8")
    return path


@pytest.fixture
def out(tmp_path) -> Path:
    """An output folder holding a previous report set."""
    folder = tmp_path / "out"
    for name, data in OLD_SET.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


def contents(folder: Path) -> dict[str, bytes]:
    """Every entry under `folder` (hidden ones too), relative path → bytes (folders: None)."""
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None)
            for p in sorted(folder.rglob("*"))}


def unchanged(folder: Path) -> bool:
    return contents(folder) == {**OLD_SET, "charts": None}


def _pdf_loads(monkeypatch):
    monkeypatch.setattr(pdf_mod, "_import_weasyprint", lambda: None)


def _no_pango():
    raise OSError("cannot load library 'libpango-1.0-0'")


# ----------------------------------------------------------------- failures leave the old set


def test_a_failing_pdf_renderer_leaves_the_previous_set(workload, out, monkeypatch):
    def failing_render(html, fetcher=None):
        raise RuntimeError("layout failed")

    _pdf_loads(monkeypatch)
    monkeypatch.setattr(pdf_mod, "render_pdf", failing_render)
    plan = plan_files(load_files([str(workload)]))
    with pytest.raises(RuntimeError, match="layout failed"):
        report.write_reports(plan, str(out), ["md", "html", "pdf"])
    assert unchanged(out)


def test_a_template_error_leaves_the_previous_set(workload, out, monkeypatch):
    from jinja2 import UndefinedError

    def broken_html(context):
        raise UndefinedError("'r' has no attribute 'gpu_hourz'")

    monkeypatch.setattr(report, "render_html", broken_html)
    plan = plan_files(load_files([str(workload)]))
    with pytest.raises(UndefinedError):
        report.write_reports(plan, str(out), ["md", "html"])
    assert unchanged(out)


def test_missing_pango_exits_2_and_writes_nothing(workload, out, monkeypatch, capsys):
    monkeypatch.setattr(pdf_mod, "_import_weasyprint", _no_pango)
    assert main(["report", str(workload), "-o", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"proposalkit report: cannot write {out / 'report.pdf'}: WeasyPrint could not load "
        "(OSError: cannot load library 'libpango-1.0-0'). To build PDFs, install Pango, which WeasyPrint "
        "needs: Debian/Ubuntu `apt-get install libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0`; macOS `brew install pango`; "
        "or pass --format md,html. Nothing was written\n")
    assert unchanged(out)


def test_missing_pango_creates_no_output_folder(workload, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(pdf_mod, "_import_weasyprint", _no_pango)
    assert main(["report", str(workload), "-o", str(tmp_path / "new")]) == 2
    assert not (tmp_path / "new").exists()


def test_a_full_disk_leaves_the_previous_set_and_names_the_folder(workload, out, monkeypatch, capsys):
    real = report._write_synced
    calls = []

    def disk_fills_up(path, data):
        calls.append(path)
        if len(calls) == 3:       # two charts written, then the disk is full
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, data)

    monkeypatch.setattr(report, "_write_synced", disk_fills_up)
    assert main(["report", str(workload), "-o", str(out), "--format", "md,html"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"proposalkit report: -o {out}: cannot write {out} (No space left on device); "
                            "choose a folder you can write to; the previous report files were left as they "
                            "were\n")
    assert unchanged(out)
    assert all(".proposalkit-" in str(p) for p in calls)      # written in the temporary folder first


def test_a_full_disk_in_a_new_folder_leaves_no_folder(workload, tmp_path, monkeypatch, capsys):
    def disk_full(path, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(report, "_write_synced", disk_full)
    assert main(["report", str(workload), "-o", str(tmp_path / "new" / "out"), "--format", "md"]) == 2
    assert not (tmp_path / "new" / "out").exists()


def test_a_folder_in_the_place_of_a_report_file_changes_nothing(workload, out, capsys):
    (out / "report.html").unlink()
    (out / "report.html").mkdir()
    assert main(["report", str(workload), "-o", str(out), "--format", "md,html"]) == 2
    assert capsys.readouterr().err == (
        f"proposalkit report: -o {out}: cannot write {out / 'report.html'} (Is a directory); choose a folder "
        "you can write to; the previous report files were left as they were\n")
    assert (out / "report.md").read_bytes() == OLD_SET["report.md"]        # not replaced before the failure
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_output_path_that_is_a_file(workload, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("mine", encoding="utf-8")
    assert main(["report", str(workload), "-o", str(blocker), "--format", "md"]) == 2
    assert capsys.readouterr().err == (f"proposalkit report: -o {blocker}: cannot write {blocker} (not a folder); "
                                       "choose a folder you can write to\n")
    assert blocker.read_text(encoding="utf-8") == "mine"


def test_output_folder_under_a_file(workload, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    assert main(["report", str(workload), "-o", str(blocker / "out"), "--format", "md"]) == 2
    assert capsys.readouterr().err == (
        f"proposalkit report: -o {blocker / 'out'}: cannot write {blocker / 'out'} (Not a directory); choose a "
        "folder you can write to; nothing was written\n")


# ----------------------------------------------------------------- a missing template


def test_a_missing_template_is_a_broken_install_not_an_output_error(workload, out, tmp_path, monkeypatch,
                                                                     capsys):
    empty = tmp_path / "no-templates"
    empty.mkdir()
    monkeypatch.setattr(report, "TEMPLATES_DIR", empty)
    monkeypatch.delenv("PROPOSALKIT_DEBUG", raising=False)
    assert main(["report", str(workload), "-o", str(out), "--format", "md,html"]) == 3
    err = capsys.readouterr().err
    assert err.startswith(f"proposalkit: internal error: BrokenInstallError: report template 'report.md.j2' is "
                          f"missing from {empty}: proposalkit is installed incompletely; reinstall it")
    assert "cannot write" not in err and f"-o {out}" not in err
    assert unchanged(out)


def test_a_missing_included_template_is_a_broken_install(workload, tmp_path, monkeypatch):
    partial = tmp_path / "templates"
    partial.mkdir()
    (partial / "report.md.j2").write_text('{% include "lead.md.j2" %}', encoding="utf-8")
    monkeypatch.setattr(report, "TEMPLATES_DIR", partial)
    plan = plan_files(load_files([str(workload)]))
    with pytest.raises(report.BrokenInstallError, match="report template 'lead.md.j2' is missing"):
        report.write_reports(plan, str(tmp_path / "out"), ["md"])
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------- success


def test_success_replaces_the_whole_set_and_leaves_no_temporary_file(workload, out, monkeypatch, capsys):
    _pdf_loads(monkeypatch)
    monkeypatch.setattr(pdf_mod, "render_pdf", lambda html, fetcher=None: (b"%PDF new", 1.0))
    assert main(["report", str(workload), "-o", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed == [str(out / name) for name in
                       ("report.md", "report.html", "report.pdf", "charts/gpu-hours.svg", "charts/memory.svg",
                        "supplement.md", "supplement.html", "supplement.pdf")]
    after = contents(out)
    assert sorted(after) == sorted([*OLD_SET, "charts"])            # nothing else, no temporary folder
    assert all(after[name] != data for name, data in OLD_SET.items())
    assert after["report.pdf"] == b"%PDF new"


def test_files_follow_the_umask(workload, tmp_path):
    plan = plan_files(load_files([str(workload)]))
    report.write_reports(plan, str(tmp_path / "out"), ["md"])
    mask = os.umask(0)
    os.umask(mask)
    for name in ("report.md", "charts/memory.svg"):
        assert (tmp_path / "out" / name).stat().st_mode & 0o777 == 0o666 & ~mask


def test_a_folder_name_with_control_characters_is_printed_escaped(workload, tmp_path, capsys):
    blocker = tmp_path / "file\x1b[2J"
    blocker.write_text("", encoding="utf-8")
    assert main(["report", str(workload), "-o", str(blocker), "--format", "md"]) == 2
    shown = str(tmp_path) + "/file\\x1b[2J"
    assert capsys.readouterr().err == (f"proposalkit report: -o {shown}: cannot write {shown} (not a folder); "
                                       "choose a folder you can write to\n")
