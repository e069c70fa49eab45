"""The supplement states each training workload's loss once (issue 23, repetition): how the loss was chosen
(a framework preset or the planner's default) and what it keeps per logit, in one bullet, with every value and
source the plan's two records carry (render/notes.py document_notes)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import records
from proposalkit.catalog.references import REFERENCES
from proposalkit.cli import main
from proposalkit.render.format import md_escape, unpinned

ROOT = Path(__file__).resolve().parent.parent
FILES = [ROOT / "workloads" / "code-models.yaml", ROOT / "tests" / "golden" / "workloads.yaml"]


def _sections(text: str) -> dict[str, str]:
    """The supplement's S.2.i sections by workload name, and S.4 and S.6 by their numbers."""
    out = {}
    for head, body in re.findall(r"^(#{2,3} S\.[^\n]*)\n(.*?)(?=^#{2,3} |\Z)", text, re.M | re.S):
        name = re.match(r"#+ S\.2\.\d+ ([^:]+):", head)
        out[name.group(1) if name else head.split()[1]] = body
    return out


def _loss_bullets(sections: dict[str, str], name: str) -> list[str]:
    """The bullets on the loss that apply to workload `name`: its own, and S.4's that name it."""
    own = re.findall(r"^- loss\b.*$", sections[name], re.M)
    shared = [b for b in re.findall(r"^- loss\b.*$", sections["S.4"], re.M)
              if name in re.search(r"\(([^()]*)\)$", b).group(1).split(", ")]
    return own + shared


def _md(text: str) -> str:
    """A sentence as the markdown supplement writes it: its commit pins dropped, escaped."""
    return str(md_escape(unpinned(text)))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_training_workload_has_one_loss_bullet_with_both_records_values(path, tmp_path, capsys):
    assert main(["plan", str(path), "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert main(["report", str(path), "-o", str(tmp_path / "out"), "--format", "md"]) == 0
    capsys.readouterr()
    sections = _sections((tmp_path / "out" / "supplement.md").read_text(encoding="utf-8"))
    trained = [w for w in plan["workloads"] if records(w, "loss")]
    assert trained, "the file has training workloads"
    for w in trained:
        (loss,) = records(w, "loss")
        chosen = records(w, "loss-default") + [r for r in records(w, "preset-default")
                                               if r["values"]["field"] == "loss"]
        assert len(chosen) == 1, "each of these workloads leaves its loss to a default or a preset"
        (bullet,) = _loss_bullets(sections, w["name"])
        v = loss["values"]
        assert f": {v['forward_bytes_per_logit']:g} B/logit at the forward peak, " in bullet
        assert f", {v['backward_bytes_per_logit']:g} at the backward peak;" in bullet
        assert _md(v["why"]) in bullet and f"loss: {v['loss']} (" in bullet
        c = chosen[0]["values"]
        if chosen[0]["kind"] == "preset-default":
            assert f"({c['framework']} preset; {_md(c['why'])}): " in bullet
        else:
            assert "(not given: planner default): " in bullet
        for source in loss["sources"] + chosen[0]["sources"]:
            assert f"**{_md(REFERENCES[source].key)}**" in sections["S.6"]
