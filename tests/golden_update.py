"""Regenerate the golden reports in tests/golden/ (`make golden`; review the diff before committing).

tests/test_report.py renders tests/golden/workloads.yaml the same way and
compares byte for byte.
"""

from __future__ import annotations

import sys
from pathlib import Path

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
WORKLOADS = GOLDEN_DIR / "workloads.yaml"
OUTPUTS = ("report.md", "report.html", "supplement.md", "supplement.html")


def render_golden() -> dict[str, str]:
    """File name → text of each golden output, rendered from WORKLOADS."""
    from proposalkit.input.loading import load_files
    from proposalkit.planning.planner import plan_files
    from proposalkit.render.context import report_context
    from proposalkit.render.report import (render_html, render_markdown, render_supplement_html,
                                           render_supplement_markdown)

    # The path as the planner sees it must not leak into the output; pass it relative anyway.
    plan = plan_files(load_files([str(WORKLOADS)]))
    context = report_context(plan)
    return {"report.md": render_markdown(context), "report.html": render_html(context),
            "supplement.md": render_supplement_markdown(context), "supplement.html": render_supplement_html(context)}


def main() -> int:
    for name, text in render_golden().items():
        path = GOLDEN_DIR / name
        old = path.read_text(encoding="utf-8") if path.exists() else None
        path.write_text(text, encoding="utf-8")
        print(f"{path}: {'unchanged' if old == text else 'updated'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
