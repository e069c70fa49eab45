"""Explanations as records: a Note's kind, values and sources; the reference catalog; Appendix B
built from the ids the plan's records cite, each once, nothing uncited."""

from __future__ import annotations

from pathlib import Path

import pytest

from proposalkit.catalog.references import REFERENCES, cited
from proposalkit.input.loading import load_files
from proposalkit.notes import Note, note, of_kind
from proposalkit.planning.citations import workload_sources
from proposalkit.planning.planner import plan_files
from proposalkit.render import context as ctx
from proposalkit.render.notes import WORDS, note_record, note_text

GOLDEN = Path(__file__).resolve().parent / "golden" / "workloads.yaml"


@pytest.fixture(scope="module")
def golden_plan():
    return plan_files(load_files([str(GOLDEN)]))


def test_a_note_keeps_its_values_in_order_and_by_name():
    n = note("buffer", sources=("nairr-guide",), fraction=0.3)
    assert n.kind == "buffer" and n["fraction"] == 0.3 and n.get("missing", 7) == 7
    assert n.values == (("fraction", 0.3),) and n.sources == ("nairr-guide",)
    with pytest.raises(KeyError):
        n["missing"]
    assert hash(n) == hash(note("buffer", sources=("nairr-guide",), fraction=0.3))    # frozen, comparable


def test_notes_are_selected_by_kind_not_by_text():
    notes = [note("a", x=1), note("c", a="a", text="a: looks like kind a"), note("b")]
    assert of_kind(notes, "a") == [note("a", x=1)]
    assert [n.kind for n in of_kind(notes, "a", "b")] == ["a", "b"]


def test_every_note_is_a_record_with_words(golden_plan):
    kinds = {n.kind for w in golden_plan.workloads for n in w.assumptions}
    assert kinds and kinds <= WORDS.keys()
    assert "text" not in WORDS          # no sentence passed through as a note
    with pytest.raises(KeyError):
        note_text(Note("no-such-kind"))


def test_note_record_is_plain_json():
    record = note_record(note("lora-defaults", ("hu-2021",), rank=16, targets=("q_proj", "v_proj")))
    assert record == {"kind": "lora-defaults", "values": {"rank": 16, "targets": ["q_proj", "v_proj"]},
                      "sources": ["hu-2021"], "text": "LoRA defaults: rank 16 on q_proj, v_proj"}


def test_a_works_name_in_a_model_name_cites_nothing(tmp_path):
    # Appendix B is the ids the records name, not a search of their sentences: a model named after three works
    # (BLOOM, LoRA, GPTQ) in notes that cite none of them leaves them out.
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - name: a\n    kind: inference\n    context: 2k\n    hours: 10\n"
                    "    model: {name: BLOOM-LoRA GPTQ, layers: 4, hidden: 256, heads: 4, vocab: 1000}\n")
    plan = plan_files(load_files([str(path)]))
    assert any(n["model"] == "BLOOM-LoRA GPTQ" for n in of_kind(plan.workloads[0].assumptions, "shape-default"))
    assert not {"bigscience-2022", "hu-2021", "frantar-2023"} & {r.id for r in plan.references}


def test_cited_lists_each_work_once_in_catalog_order_and_refuses_unknown_ids():
    got = cited(["rajbhandari-2020", "dao-2022", "rajbhandari-2020"])
    assert [r.id for r in got] == ["dao-2022", "rajbhandari-2020"]
    assert got[0].key == "Dao et al. 2022" and "FlashAttention" in got[0].text
    with pytest.raises(KeyError, match="no-such-paper"):
        cited(["no-such-paper"])
    keys = [r.key for r in REFERENCES.values()]
    assert len(set(keys)) == len(keys) == len(REFERENCES)


def test_appendix_b_is_the_works_the_records_cite_each_once(golden_plan):
    ids = {id_ for w in golden_plan.workloads for id_ in workload_sources(w)}
    assert [r.id for r in golden_plan.references] == [id_ for id_ in REFERENCES if id_ in ids]
    keys = [r.key for r in ctx.report_context(golden_plan).references]
    assert len(keys) == len(set(keys))
    papers = [REFERENCES[id_].key for id_ in REFERENCES if id_ in ids]
    assert keys[:len(papers)] == papers          # the works first, then GPUs, resources, models
    assert "Dettmers et al. 2023" not in keys    # nothing uncited: no QLoRA in this plan
