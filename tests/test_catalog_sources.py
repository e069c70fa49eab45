"""Every catalog row cites primary sources (issue 23, item 4): a GPU figure the vendor's datasheet, a model
its own config.json and model page, a resource its provider's documentation; each with the version read
(a date, a revision or both).

The rule is FIELD_KINDS below: the kinds of work (catalog/sources.py KINDS) each source field may cite.
A usable-memory figure is no datasheet figure (vendors do not print what a framework can allocate): it
cites a public record of the measurement, or the provider's page that prints it. Nor is a maximum achievable
matmul rate: it cites the measurement's table at its revision.
"""

from __future__ import annotations

import pytest

from proposalkit.catalog import CATALOGS, RowSource, resources, row_sources
from proposalkit.catalog.sources import KINDS, Source, SourceError, parse

# (catalog, field) → the kinds its sources may be.
FIELD_KINDS: dict[tuple[str, str], frozenset[str]] = {
    ("gpus", "source"): frozenset({"datasheet"}),
    ("gpus", "usable_memory_source"): frozenset({"measurement", "provider-docs"}),
    # the maximum achievable matmul rate: a row of Bekman's MAMF table (a measurement at a revision), or, for a GPU
    # it does not measure, the vendor's lowest efficiency in it × the GPU's peak (derived, the rule in its detail)
    ("gpus", "mamf_source"): frozenset({"measurement", "derived"}),
    ("models", "source"): frozenset({"config", "paper"}),
    ("models", "params_source"): frozenset({"model-card", "config", "paper"}),
    **{("resources", field): frozenset({"provider-docs", "secondary"}) for field in ("source", "access_credits.source")},
    # a cloud instance type has no partition size or batch walltime, and two have no price: proposalkit's own
    # bound or finding, stated (derived, confidence inferred)
    **{("resources", field): frozenset({"provider-docs", "secondary", "derived"})
       for field in ("size_source", "walltime_source", "price.source")},
}
# A site's own variant of a vendor part, not sold under that name: its memory, bandwidth and power limit are read
# on the site's page (provider-docs) beside the vendor's datasheet for its peaks (Meta's 500 W, 96 GB H100).
SITE_VARIANTS = {("gpus", "h100-96gb-500w", "source")}
# Catalogs whose rows are typed so far (the others keep text sources until migrated).
TYPED = CATALOGS
# Measurements known only from records without an address (the report says so in the citation).
UNADDRESSED = {("gpus", "b200", "usable_memory_source")}
# Resource figures read only in a third party's restatement (kind secondary, confidence secondhand): the
# provider's page was not found. The list may only shrink: a new entry needs the provider's page instead.
# Searched again 2026-11-27, in the stored pages (each read from its beginning only) and in the providers'
# own repositories, each entry's provider first:
# - ACCESS rates: allocations.access-ci.org/exchange_calculator and the ACCESS wiki's copy hold only the
#   explanatory text; access-ci-org/xras-ui (7a0662f) reads the rates from the API and holds none;
#   ncsa/Delta_doc (826840d) and ncsa/ncsa_system_documentation (977070d) name no rate; PurdueRCAC/RCAC-Docs
#   (db2e6ff) gives '~6000 GPU hours' for 400,000 credits on Anvil, cited beside Anvil's rate but too rounded
#   to fix it (66.7 or 67.3).
# - PSC: www.psc.edu/resources/bridges-2/ and /bridges-2-system-configuration/ list the V100 nodes only (no
#   H100, charging or partition table); the stored user guide is the retired Bridges one; pscedu/psc-wpdocs
#   (7d06efa) and pscedu/bridges2-examples have no partition or charging table.
# - NERSC: the copies of docs.nersc.gov/jobs/policy and nersc.gitlab.io/jobs/policy stop before the QOS table;
#   docs.nersc.gov/policies/charging-policy is stored only with its AY2020-2021 factors; the documentation
#   repository (gitlab.com/NERSC/nersc.gitlab.io) is not stored, and its copies on GitHub are other sites' forks.
# - DeltaAI: its Running Jobs page is not stored and NCSA keeps no DeltaAI repository that is.
# - NAIRR tracks: of nairrpilot.org only reporting-guidance is stored (reports at 1, 3 and 9 months); the NSF
#   letters name no cap; jetstream-cloud/js2docs (ff1af4a) does not mention NAIRR.
# - Cloud prices: AWS's on-demand and P4/P5 pages are not stored (its Capacity Blocks page is: another price);
#   the copy of cloud.google.com/compute/vm-instance-pricing stops before the accelerator-optimized tables;
#   Azure's pricing page builds its table in the browser; no provider's repository publishes these prices.
SECONDHAND = {
    ("resources", row, "access_credits.source")
    for row in ("ncsa-delta-a100", "ncsa-delta-a100x8", "ncsa-delta-a40", "ncsa-delta-h200", "psc-bridges2-v100",
                "psc-bridges2-h100", "sdsc-expanse", "purdue-anvil")    # the ACCESS Exchange Calculator's rates
} | {
    ("resources", "ncsa-deltaai", "walltime_source"),
    ("resources", "psc-bridges2-v100", "source"), ("resources", "psc-bridges2-v100", "walltime_source"),
    ("resources", "psc-bridges2-h100", "source"), ("resources", "psc-bridges2-h100", "size_source"),
    ("resources", "psc-bridges2-h100", "walltime_source"),
    ("resources", "nersc-perlmutter", "source"), ("resources", "nersc-perlmutter", "walltime_source"),
    ("resources", "startup", "source"), ("resources", "standard", "source"),     # the NAIRR Pilot's tracks
} | {
    # the cloud partners' on-demand prices, read in dated copies of the providers' price lists (their pricing
    # pages build their tables in the browser)
    ("resources", row, "price.source")
    for row in ("aws-p4d", "aws-p4de", "aws-p5", "azure-nd-a100-v4", "azure-nd-h100-v5", "gcp-a2-high",
                "gcp-a2-ultra", "gcp-a3-high")
}


def violations(sources: tuple[RowSource, ...]) -> list[str]:
    """What breaks the rule: a field the rule does not know, a kind it does not allow, no date or revision,
    a measurement without an address outside UNADDRESSED."""
    out = []
    for rs in sources:
        where = f"{rs.catalog}.yaml: {rs.row}: {rs.field}"
        allowed = FIELD_KINDS.get((rs.catalog, rs.field))
        if allowed is None:
            out.append(f"{where}: no rule for this field")
        elif rs.source.kind not in allowed and not (rs.source.kind == "provider-docs" and
                                                    (rs.catalog, rs.row, rs.field) in SITE_VARIANTS):
            out.append(f"{where}: {rs.source.kind} is not one of {sorted(allowed)}")
        if not (rs.source.date or rs.source.revision):
            out.append(f"{where}: no date or revision")
        if not rs.source.url and rs.source.kind != "derived" and (rs.catalog, rs.row, rs.field) not in \
                UNADDRESSED | SECONDHAND:
            out.append(f"{where}: no address")
        if rs.source.kind == "secondary" and (rs.catalog, rs.row, rs.field) not in SECONDHAND:
            out.append(f"{where}: a third party's restatement where the provider's page is wanted")
    return out


@pytest.mark.parametrize("name", TYPED)
def test_every_row_cites_primary_sources_with_their_version(name):
    assert violations(row_sources(name)) == []


@pytest.mark.parametrize("name", ("gpus", "models"))
def test_every_row_has_its_sources(name):
    sources = row_sources(name)
    fields = {field for catalog, field in FIELD_KINDS if catalog == name}
    rows = {rs.row for rs in sources}
    for row in rows:
        assert {rs.field for rs in sources if rs.row == row} == fields, row


def test_every_resource_cites_its_charging_rule_size_and_walltime():
    cited = {(rs.row, rs.field) for rs in row_sources("resources")}
    for rid in resources.resources():
        assert {(rid, "source"), (rid, "size_source"), (rid, "walltime_source")} <= cited, rid


def test_secondhand_sources_say_so_in_their_confidence():
    # A figure read only in a third party's restatement is never shown as verified.
    secondary = {(rs.row, rs.field) for rs in row_sources("resources") if rs.source.kind == "secondary"}
    rows, tracks = resources.resources(), resources.tracks()
    for row, field in secondary:
        if row in tracks:
            assert tracks[row].confidence == "secondhand", row
            continue
        r = rows[row]
        assert _confidence(r, field) == "secondhand", (row, field)


def test_derived_sources_say_so_in_their_confidence():
    rows = resources.resources()
    for rs in row_sources("resources"):
        if rs.source.kind == "derived":
            assert _confidence(rows[rs.row], rs.field) == "inferred", (rs.row, rs.field)


def _confidence(r, field: str) -> str | None:
    return {"source": r.confidence, "size_source": r.size_confidence, "walltime_source": r.walltime_confidence,
            "access_credits.source": r.access_credits.confidence if r.access_credits else None,
            "price.source": r.price.confidence if r.price else None}[field]


def test_secondhand_list_is_current():
    assert SECONDHAND == {(rs.catalog, rs.row, rs.field) for rs in row_sources("resources")
                          if rs.source.kind == "secondary"}


def test_unaddressed_measurements_are_still_unaddressed():
    # An entry here that gains an address should leave the list (and the report's "no record" wording).
    for catalog, row, field in UNADDRESSED:
        [rs] = [rs for rs in row_sources(catalog) if rs.row == row and rs.field == field]
        assert rs.source.kind == "measurement" and not rs.source.url


def _row(kind: str, **fields) -> RowSource:
    base = dict(kind=kind, by="someone", title="a page", url="https://example.org/page", date="2024")
    return RowSource("gpus", "x", "source", Source(**{**base, **fields}))


def test_the_rule_fails_a_weak_source():
    assert violations((_row("datasheet"),)) == []
    # a model's config cited for a GPU figure, a measurement for a datasheet figure
    assert violations((_row("config"),)) == ["gpus.yaml: x: source: config is not one of ['datasheet']"]
    assert violations((_row("measurement"),)) == ["gpus.yaml: x: source: measurement is not one of ['datasheet']"]
    assert violations((_row("datasheet", date=""),)) == ["gpus.yaml: x: source: no date or revision"]
    assert violations((RowSource("gpus", "x", "notes_source", _row("datasheet").source),)) == [
        "gpus.yaml: x: notes_source: no rule for this field"]
    # a cloud instance type read in a third party's copy of the price list (as aws-p5e's was) and not listed
    # in SECONDHAND, without an address
    copy = Source(kind="secondary", by="skypilot-org/skypilot-catalog", title="vms.csv", date="2026-11")
    assert violations((RowSource("resources", "aws-p5e", "source", copy),)) == [
        "resources.yaml: aws-p5e: source: no address",
        "resources.yaml: aws-p5e: source: a third party's restatement where the provider's page is wanted"]


@pytest.mark.parametrize("value, message", [
    ("NVIDIA H100 datasheet (2023)", "expected a mapping"),
    ({"kind": "blog", "by": "a", "title": "b", "url": "https://x", "date": 2024}, "kind: expected one of"),
    ({"kind": "datasheet", "by": "a", "title": "b", "url": "https://x"}, "date or revision"),
    ({"kind": "datasheet", "by": "a", "title": "b", "date": 2024}, "url: every datasheet source has its address"),
    ({"kind": "paper", "by": "a", "title": "b", "url": "http://x", "date": 2024}, "expected an https:// address"),
    ({"kind": "paper", "by": "a", "title": "b", "url": "https://x", "date": "March 2024"}, "YYYY"),
    ({"kind": "paper", "by": "a", "title": "b", "url": "https://x", "date": 2024, "note": "c"}, "unknown keys"),
])
def test_a_source_not_of_the_typed_form_is_refused(value, message):
    with pytest.raises(SourceError, match=message):
        parse(value, "gpus.yaml: x: source")


def test_kinds_are_described():
    assert set(KINDS) >= {"datasheet", "model-card", "config", "paper", "provider-docs"}
    assert CATALOGS == ("gpus", "models", "resources")


@pytest.mark.parametrize("what, row, shown", [
    ("gpus", "h100-80gb", "datasheet: NVIDIA, NVIDIA H100 Tensor Core GPU datasheet (2023); measurement: "
                          "vllm-project/vllm issue 27508"),
    ("gpus", "h100-80gb", "  794.5  TFLOP/s "),
    ("gpus", "h100-pcie", "  551.0* TFLOP/s "),
    ("gpus", "h100-80gb", "; measurement: Stas Bekman, Machine Learning Engineering (mamf-finder.py), "
                          "compute/accelerator/README.md, 'Maximum Achievable Matmul FLOPS comparison table', BF16 "
                          "(2026-08-22, revision 744d01e18b79)"),
    ("models", "llama-3.1-8b", "config: meta-llama, meta-llama/Llama-3.1-8B config.json (revision d04e592bb4f6); "
                               "model-card: meta-llama, meta-llama/Llama-3.1-8B model page"),
    ("resources", "alcf-polaris", "provider-docs: Argonne Leadership Computing Facility, ALCF User Guides, "
                                  "'Running Jobs on Polaris' (2026-02-17, revision e30db64c)"),
])
def test_catalog_prints_each_rows_sources(capsys, what, row, shown):
    from proposalkit.cli import main

    assert main(["catalog", what]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith(row + " "))
    assert shown in line


def test_a_site_variant_cites_the_vendor_datasheet_beside_the_sites_page():
    for catalog, row, field in SITE_VARIANTS:
        kinds = {rs.source.kind for rs in row_sources(catalog) if rs.row == row and rs.field == field}
        assert kinds == {"datasheet", "provider-docs"}, row


# Bekman's MAMF table (gpus.yaml mamf_source, revision 744d01e18b79), BF16: the lowest efficiency (MAMF ÷ theory) it
# gives for each vendor, which a GPU it does not measure takes: NVIDIA GB200 SXM 1822.0 of 2500, AMD MI300X 668.4 of
# 1300, Intel Gaudi 3 1243.0 of 1677.
LOWEST_MAMF_EFFICIENCY = {"NVIDIA": 1822.0 / 2500, "AMD": 668.4 / 1300, "Intel": 1243.0 / 1677}


def test_a_gpu_the_mamf_table_does_not_measure_takes_its_vendors_lowest_efficiency():
    from proposalkit.catalog import gpus

    sources = {rs.row: rs.source for rs in row_sources("gpus") if rs.field == "mamf_source"}
    for g in gpus().values():
        assert 0 < g.matmul_efficiency < 1, g.id
        assert g.mamf_measured == (sources[g.id].kind == "measurement"), g.id
        # within 0.005: the table divides by its own theory figure (MI300X: 1300, the catalog 1307.4)
        assert g.matmul_efficiency >= LOWEST_MAMF_EFFICIENCY[g.vendor] - 0.005, g.id
        if not g.mamf_measured:
            lowest = LOWEST_MAMF_EFFICIENCY[g.vendor] * g.peak_16bit_flops
            assert g.mamf_flops == pytest.approx(lowest, abs=0.05e12), g.id
            assert "the table measures no" in sources[g.id].detail, g.id
