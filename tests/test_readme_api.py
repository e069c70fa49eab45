"""The README's Python API example runs as written (docs as tests)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_python_api_example_runs(tmp_path, monkeypatch):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Python API", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(ROOT)
    code = code.replace('"build"', repr(str(tmp_path)))      # write the report into a temporary folder
    exec(compile(code, "README.md", "exec"), {})
    assert (tmp_path / "report.md").is_file() and (tmp_path / "report.html").is_file()
