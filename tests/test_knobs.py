"""One home per planning knob: the table (proposalkit/knobs.py) against the records that carry knobs.

The workload schema's fields, the planner's Settings and the estimate's TrainingSetup and
InferenceSetup must hold exactly the table's knobs, under the table's names, with its defaults
and its meanings: a field in one and not the others, a default typed differently, or a schema
description written apart from the table fails here, naming the record and the field. The
checks are functions of the records, and the last tests feed them records with a knob too many,
one missing and a default that disagrees, to show each failing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from proposalkit.estimate.setups import InferenceSetup, TrainingSetup
from proposalkit.input import schema
from proposalkit.input.frameworks import PRESETS
from proposalkit.knobs import BOTH, INFERENCE, KNOBS, SAME, TRAINING, Knob, default, flags
from proposalkit.planning.records import Settings

# What each record holds besides knobs: the configuration an estimate is of, and where the flags come from.
NOT_KNOBS = {
    "Settings": {"flag_sources"},
    "TrainingSetup": {"method", "data_parallel", "flag_sources"},
    "InferenceSetup": {"kv_precision", "prefill_tokens", "engine"},
}
# Workload fields that are not knobs: what the workload is (kind, method, model, data, tokens, requests,
# the service's load and latency targets), what was measured (throughput, pilot, mfu) and how it carries over
# to another GPU (extrapolation), where it runs (gpu, gpus, resource), and the sections whose fields are knobs
# (offload, storage).
WORKLOAD_NOT_KNOBS = {"kind", "method", "model", "description", "data", "tokens", "throughput", "pilot",
                      "extrapolation", "gpu", "gpus", "mfu", "hours", "requests", "input_tokens", "output_tokens",
                      "request_rate", "ttft_ms", "tpot_ms", "resource", "offload", "storage"}


def _plain(annotation: str) -> str:
    """A record's annotation without its `| None` (a record may say "not given" where the table has none)."""
    return annotation.replace(" | None", "")


def record_problems(record, held: set[str], not_knobs: set[str], chosen_first: bool = False) -> list[str]:
    """What differs between a record (a dataclass) and the table: fields that are no knob, knobs it lacks,
    types and defaults that disagree. `held`: the knobs the record must hold. `chosen_first`: an estimate
    record's default of a knob the planner searches is the first value the search tries."""
    name = record.__name__
    problems = []
    fields = {f.name: f for f in dataclasses.fields(record)}
    for extra in sorted(set(fields) - held - not_knobs):
        problems.append(f"{name}.{extra}: not a knob of the table (add its row to proposalkit/knobs.py)")
    for missing in sorted(held - set(fields)):
        problems.append(f"{name} lacks the knob {missing}")
    for knob_name in sorted(held & set(fields)):
        field, k = fields[knob_name], KNOBS[knob_name]
        if _plain(str(field.type)) != k.type:
            problems.append(f"{name}.{knob_name}: type {field.type}, the table's {k.type}")
        if field.default is not dataclasses.MISSING:
            want = k.chosen[0] if chosen_first and k.chosen else k.default
            if field.default != want:
                problems.append(f"{name}.{knob_name}: default {field.default!r}, the table's {want!r}")
    return problems


def test_settings_hold_the_tables_knobs():
    held = {k.name for k in KNOBS.values() if k.settings}
    assert record_problems(Settings, held, NOT_KNOBS["Settings"]) == []


@pytest.mark.parametrize("record, setup", [(TrainingSetup, "training"), (InferenceSetup, "inference")])
def test_the_estimate_setups_hold_their_knobs(record, setup):
    held = {k.name for k in KNOBS.values() if setup in k.setups}
    assert record_problems(record, held, NOT_KNOBS[record.__name__], chosen_first=True) == []


def _schema_field(dotted: str):
    """The pydantic field of a dotted workload field (offload.optimizer: Offload.optimizer)."""
    model = schema.WorkloadFields
    *sections, name = dotted.split(".")
    for section in sections:
        model = {"offload": schema.Offload, "storage": schema.Storage}[section]
    return model.model_fields.get(name)


def test_every_knob_a_workload_sets_is_a_schema_field_described_by_the_table():
    for k in KNOBS.values():
        if k.workload_field is None:
            continue
        field = _schema_field(k.workload_field)
        assert field is not None, f"{k.workload_field}: a knob with no schema field"
        assert field.description == k.meaning, k.name
        assert field.default in (None, k.default), k.name      # unset, or the section states the table's default


def test_every_schema_field_is_a_knob_or_named_as_not_one():
    knob_fields = {k.workload_field for k in KNOBS.values() if k.workload_field}
    for name in schema.WorkloadFields.model_fields:
        assert name in knob_fields or name in WORKLOAD_NOT_KNOBS, f"workload field {name}: a knob (add its row) or not"
    for section, model in (("offload", schema.Offload), ("storage", schema.Storage)):
        assert {f"{section}.{name}" for name in model.model_fields} <= knob_fields


def test_the_table_is_well_formed():
    for k in KNOBS.values():
        assert k.applies in (TRAINING, INFERENCE, BOTH) and k.source and k.meaning, k.name
        assert set(k.setups) <= {"training", "inference"}, k.name
        assert k.settings or k.workload_field, f"{k.name}: a flag must reach Settings"
        assert not k.chosen or k.default is None, f"{k.name}: a searched knob has no fixed default"
    assert {k.name for k in flags()} >= {"optimizer_step_temporary", "frees_gradients_between_steps", "kernels"}
    assert all(row.field in KNOBS for rows in PRESETS.values() for row in rows)


def test_the_defaults_disagreed_once_and_now_have_one_value():
    # Settings.kernels said "eager", TrainingSetup.kernels "fused" (issue 20): one default now, the planner's.
    assert Settings.__dataclass_fields__["kernels"].default == TrainingSetup.__dataclass_fields__["kernels"].default \
        == default("kernels") == "eager"
    assert schema.Storage.model_fields["checkpoints_retained"].default == default("checkpoints_retained")
    assert schema.WorkloadFields.model_fields["buffer"].description.startswith(
        "Contingency added to GPU-hours (default 0.30)")


# ----------------------------------------------------------------- the checks fail where they should

def test_a_field_in_one_record_and_not_the_table_fails():
    @dataclass(frozen=True)
    class Settings:                         # noqa: F811  (a record with one field the table lacks)
        buffer: float = 0.30
        warp_speed: int = 9

    problems = record_problems(Settings, {"buffer"}, set())
    assert problems == ["Settings.warp_speed: not a knob of the table (add its row to proposalkit/knobs.py)"]


def test_a_knob_missing_from_a_record_fails():
    @dataclass(frozen=True)
    class TrainingSetup:                    # noqa: F811
        micro_batch: int = 1

    assert record_problems(TrainingSetup, {"micro_batch", "kernels"}, set()) == ["TrainingSetup lacks the knob kernels"]


def test_a_default_that_disagrees_fails():
    @dataclass(frozen=True)
    class TrainingSetup:                    # noqa: F811  (the disagreement issue 20 found)
        kernels: str = "fused"

    assert record_problems(TrainingSetup, {"kernels"}, set()) == [
        "TrainingSetup.kernels: default 'fused', the table's 'eager'"]


def test_a_schema_description_written_apart_fails(monkeypatch):
    row = KNOBS["buffer"]
    monkeypatch.setitem(KNOBS, "buffer", Knob(**{**row.__dict__, "meaning": "Contingency (default 0.25)."}))
    with pytest.raises(AssertionError, match="buffer"):
        test_every_knob_a_workload_sets_is_a_schema_field_described_by_the_table()
    assert row.field == SAME
