"""Every output the README and docs/ show is what the command prints today (run through the CLI).

The README's quick-start table once kept eval-service at 35.5 GiB after the service's memory became
the one at its planned concurrency (23.4 GiB), and its pilot JSON and `check` output went stale
when the pilot's memory estimate moved; nothing held them. Each example is marked in the Markdown
(tools/gendocs.py: `<!-- example -->` before a block of `$ proposalkit …` lines, `<!-- example:
file=PATH -->`, `<!-- output: COMMAND -->`); `make docs` rewrites them from the tool's output.
"""

from __future__ import annotations

import pytest

from test_docs import ROOT, gendocs


def pages_with_examples() -> list[str]:
    """The pages that show an example (found by their markers, without running anything)."""
    return [str(page.relative_to(ROOT)) for page in gendocs.markdown_pages()
            if gendocs.EXAMPLE.search(page.read_text(encoding="utf-8"))
            or gendocs.OUTPUT.search(page.read_text(encoding="utf-8"))]


def examples_of(page: str) -> list[tuple[str, str, str]]:
    return gendocs.examples((ROOT / page).read_text(encoding="utf-8"))


PAGES = pages_with_examples()


@pytest.mark.parametrize("page", PAGES)
def test_every_example_is_todays_output(page):
    for what, shown, want in examples_of(page):
        assert shown == want, f"{page}: the example of `{what}` is not what it prints today: run make docs"


def test_the_examples_are_found():
    # A marker the parser stopped finding would leave the pages unchecked.
    shown = {what for page in PAGES for what, _, _ in examples_of(page)}
    assert "proposalkit plan docs/examples/quickstart.yaml" in shown                     # README's quick start
    assert "file docs/examples/quickstart.yaml" in shown
    assert "proposalkit pilot tests/data/pilot/megatron.log tests/data/pilot/deepspeed.log --seq-len 2048" in shown
    assert "proposalkit plan workloads/code-models.yaml --format json | jq '.workloads[0].pilot'" in shown
    assert any(what.startswith("proposalkit check workloads/*.yaml") for what in shown)
    assert "proposalkit plan bad.yaml" in shown                                           # an error message
    assert len(shown) >= 15
