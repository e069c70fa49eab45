"""The inference validation table (benchmarks/validation_inference.py) meets issue 13's targets,
and the calibrated constants in proposalkit/catalog/engines.py are the fit's."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from proposalkit.catalog import engines

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _load(name: str):
    """A script of benchmarks/ as a module (they import each other by name)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module(name)


validation = _load("validation_inference")

# Rows beyond ±35%, each with its diagnosis (a new one fails the test). None since each prefill pass pays
# its layers' launches (engines.TRT_PREFILL_LAYER_SECONDS): the v0.5 first-token rows of Llama-2 that were
# 38-59% low are within 20%.
# The 405B rows of AMD's MI300X table are beyond: planned 37-57% fast where the 70B rows are within 15% (their
# diagnosis: the 405B's achieved rate on ROCm is not modelled per GPU).
KNOWN_OUTLIERS: set[str] = {f"AMD-VLLM090-L31-405B-MI300Xx8-{t}" for t in ("128/2048", "128/4096", "500/2000",
                                                                            "2048/2048")}
# SGLang on 4 x H200 over 4,096-token prompts of random length: planned 55% fast with the spread's cost in (its
# diagnosis: SGLang's own prefill and long-context decode rates are not calibrated).
KNOWN_OUTLIERS.add("DC-SGL-L33-70B-H200x4-R4096-2048")


@pytest.fixture(scope="module")
def results():
    return validation.results()


def test_every_reference_row_is_in_the_table(results):
    import json
    reference = Path("/work/shared/reference/inference.json")
    ids = {r.id for r in results}
    if reference.exists():
        assert {row["id"] for row in json.loads(reference.read_text())} <= ids
    assert len(ids) == len(results)


def test_median_error_within_15_percent(results):
    done = [r for r in results if r.error is not None]
    held = [r for r in done if r.role == "validate"]
    assert validation.median_abs(done) <= validation.MEDIAN_TARGET
    assert validation.median_abs(held) <= validation.MEDIAN_TARGET


def test_every_row_within_35_percent_but_the_known_outliers(results):
    beyond = {r.id for r in results if r.error is not None and abs(r.error) > validation.ROW_TARGET}
    assert beyond <= KNOWN_OUTLIERS


def test_every_row_beyond_35_percent_states_what_was_checked(results):
    beyond = [r for r in results if r.error is not None and abs(r.error) > validation.ROW_TARGET]
    text = validation.render(results)
    for r in beyond:
        assert len(r.row.get("diagnosis", "")) > 100, r.id
        assert " ".join(r.row["diagnosis"].split())[:80] in text, r.id


def test_every_tail_is_named_out_of_scope_with_what_was_checked(results):
    """Issue 22: no row is planned faster than measured by more than 25% (validation_speed.TAIL) unless its
    diagnosis names it out of scope, shown in the section; a row that is no longer a tail drops the naming."""
    text = validation.render(results)
    tails = {r.id for r in validation.tails(results)}
    for r in results:
        named = r.row.get("diagnosis", "").startswith("out of scope")
        if r.id in tails:
            assert named and len(r.row["diagnosis"]) > 200, f"{r.id}: {r.faster:.3f} fast without out of scope"
            assert " ".join(r.row["diagnosis"].split())[:80] in text, r.id
        elif named:
            pytest.fail(f"{r.id} is no longer a tail ({r.faster:.3f}): drop its out of scope")


def test_added_rows_quote_their_source(results):
    for r in results:
        if r.row.get("added") and r.id.startswith("TRT05"):
            assert r.row.get("quote", "").endswith(f"| {r.row['value']} |"), r.id


def test_render_names_the_calibration(results):
    text = validation.render(results)
    assert "### Calibration" in text and "TensorRT-LLM" in text
    assert text.count("| calibrate") == sum(r.role == "calibrate" for r in results)


def test_constants_are_the_fit():
    calibrate = _load("calibrate_inference")
    fitted = calibrate.fit()
    for name in calibrate.PARAMETERS:
        assert getattr(fitted, name) == pytest.approx(getattr(engines.TRT_LLM, name)), name
    assert calibrate.fit_decode_step() == pytest.approx(engines.VLLM_V0_DECODE_STEP_SECONDS)


def test_every_computable_row_has_its_workload_file(results):
    for r in results:
        if r.estimate is not None:
            assert validation.workload_file(r.id).exists(), r.id


def test_the_cli_and_the_api_plan_the_same_figures():
    """Where the CLI takes the engines, each workload file plans what the API computes for its row."""
    if not validation.through_cli():
        pytest.skip("the CLI does not take inference engines in `framework` yet (issue 13's input fields)")
    for row in validation.load():
        if row.get("input_tokens") is not None and row.get("tensor_parallel") is not None:
            assert validation.planned(row) == pytest.approx(validation.predict(row), rel=1e-3), row["id"]
