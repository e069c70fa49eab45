"""Rendering: the plan as text, JSON, Markdown, HTML and PDF.

format.py (numbers and user text), output.py (plan text and JSON), views.py
and context.py (the report's context), references.py, charts.py, report.py
(Jinja environments, writing the report set), pdf.py (WeasyPrint, page length).
"""

from pathlib import Path

# Templates and stylesheets, shipped inside the package (package data).
TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
