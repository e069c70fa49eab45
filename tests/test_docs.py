"""The documentation is generated where it can be and cannot go stale: tools/gendocs.py writes the
workload-format and CLI pages, the JSON Schema and the generated blocks of the hand-written pages
(`make docs`); these tests fail when any of them differs from what the tree makes today, and when a
link between the pages leads nowhere. The examples' outputs are checked in test_review_readme_outputs.py.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tools") not in sys.path:
    sys.path.insert(0, str(ROOT / "tools"))

import gendocs  # noqa: E402  (tools/gendocs.py, a script: importable once its folder is on the path)

STALE = "out of date: run make docs (tools/gendocs.py) and review the diff"


@pytest.mark.parametrize("path", sorted(gendocs.PAGES, key=str), ids=lambda p: p.name)
def test_generated_page_is_up_to_date(path):
    assert path.read_text(encoding="utf-8") == gendocs.PAGES[path](), f"{path.relative_to(ROOT)} {STALE}"


def test_generated_blocks_are_up_to_date():
    found = []
    for page in gendocs.markdown_pages():
        for name, shown, want in gendocs.generated_blocks(page.read_text(encoding="utf-8")):
            found.append(name)
            assert shown == want, f"{page.relative_to(ROOT)}: the generated block {name!r} is {STALE}"
    assert {"commands", "config-families", "lora-targets"} <= set(found)


def test_the_readme_lists_every_command_with_its_exit_codes():
    from proposalkit.cli import EXIT_CODES, exit_codes_text

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for command in EXIT_CODES:
        assert re.search(rf"^\| `proposalkit {command}\b.*\| {re.escape(exit_codes_text(command))} \|$", readme, re.M)


def test_every_field_of_the_schema_is_on_the_reference_page():
    from proposalkit.input.schema import json_schema

    page = (ROOT / "docs" / "workload-format.md").read_text(encoding="utf-8")
    for name, definition in json_schema()["$defs"].items():
        for field in definition["properties"]:
            assert f"| `{field}` |" in page, f"{name}.{field}"


def test_every_field_has_a_meaning():
    # A field without a description leaves its row's meaning empty on the reference page and in editors.
    from proposalkit.input.schema import json_schema

    schema = json_schema()
    for name, definition in [("WorkloadFile", schema), *schema["$defs"].items()]:
        for field, prop in definition["properties"].items():
            items = prop.get("items", {}).get("$ref")
            assert prop.get("description") or items, f"{name}.{field} has no description"


def test_reference_defaults_are_the_planners():
    # The defaults column is read from plans, not written by hand: a change of a planner default moves it.
    defaults = gendocs.planner_defaults()
    assert defaults["buffer"] == 0.3 and defaults["variants"] == 1 and defaults["concurrency"] == 1
    assert defaults["compile"] is False and defaults["attention"] == "flash"
    assert defaults["zero_stage"] is None           # chosen by the planner
    assert "context" not in defaults                # given in the inference probe: no default


# ------------------------------------------------------------------------------------------ links

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def headings(text: str) -> set[str]:
    """GitHub's anchors of a page's headings (outside fenced blocks)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return {gendocs._slug(re.sub(r"[`*]", "", h)) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def pages():
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_lead_somewhere(page):
    text = page.read_text(encoding="utf-8")
    for target in LINK.findall(re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)):
        if re.match(r"[a-z]+:", target):
            continue                # an address on the web
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        assert where.exists(), f"{page.relative_to(ROOT)}: link to {target}: no such file"
        if anchor and where.suffix == ".md":
            assert anchor in headings(where.read_text(encoding="utf-8")), \
                f"{page.relative_to(ROOT)}: link to {target}: no such heading"


def test_the_index_names_every_page():
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    linked = set(LINK.findall(index))
    for page in (ROOT / "docs").glob("*.md"):
        if page.name != "README.md":
            assert page.name in linked, f"docs/README.md does not link {page.name}"


def test_a_stale_example_is_found():
    # The test of the test: an example whose output differs from the tool's is reported.
    page = "<!-- example -->\n```console\n$ proposalkit catalog nope\nwrong\n```\n"
    (what, shown, want), = gendocs.examples(page)
    assert what == "proposalkit catalog nope" and shown != want and "invalid choice" in want
    assert gendocs.update(page) != page and gendocs.examples(gendocs.update(page))[0][1:] == (want, want)


# A file a page names (`proposalkit/bounds.py`, `estimate/loss.py`, `benchmarks/validation.py`): a
# module moved or renamed leaves no page pointing at its old place.
FILE_NAMED = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+\.(?:py|yaml|yml|json|md|txt))\b")
PACKAGE_FOLDERS = ("catalog/", "input/", "pilot/", "estimate/", "planning/", "render/", "review/")


@pytest.mark.parametrize("page", [p for p in pages() if p.name != "validation.md"],   # it cites other projects'
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_files_named_exist(page):
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)   # examples apart
    for name in set(FILE_NAMED.findall(text)):
        if name.startswith(("build/", "pilots/", "reference/")):
            continue                # what the tool writes, a file beside a workload, a shared reference
        places = [ROOT / name, page.parent / name]
        if name.startswith(PACKAGE_FOLDERS):
            places.append(ROOT / "proposalkit" / name)
        assert any(p.exists() for p in places), f"{page.relative_to(ROOT)} names {name}, which is not in the tree"
