"""The Python API example of docs/python-api.md runs as written (docs as tests)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_python_api_example_runs(tmp_path, monkeypatch):
    page = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    monkeypatch.chdir(ROOT)
    code = code.replace('"build"', repr(str(tmp_path)))      # write the report into a temporary folder
    exec(compile(code, "docs/python-api.md", "exec"), {})
    assert (tmp_path / "report.md").is_file() and (tmp_path / "report.html").is_file()
