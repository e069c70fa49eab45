"""`check` fails on the limits the planner found (Plan.cap_findings), not on its own arithmetic.

Workloads are inference services pinned to one GPU with `buffer: 0`, so requested
GPU-hours = hours × 1 GPU by hand; resource charges are from catalog/resources.yaml:
NCSA Delta H200 3 SU per GPU-hour × 66.7 ACCESS credits per SU (secondhand rate);
Jetstream2 g3.xl 64 SUs per A100-hour.
"""

from __future__ import annotations

import pytest

from proposalkit.cli import main
from proposalkit.input.loading import load_files
from proposalkit.planning.planner import plan_files


def service(name, hours, gpu="h200", resource=None):
    where = f", resource: {resource}" if resource else ""
    return (f"  - {{name: {name}, kind: inference, model: llama-3.1-8b, context: 4k, hours: {hours}, "
            f"gpu: {gpu}, gpus: 1, buffer: 0{where}}}\n")


def write(tmp_path, text, name="w.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def check(capsys, *paths):
    code = main(["check", *map(str, paths)])
    out, err = capsys.readouterr()
    return code, out, err


def findings(path):
    return plan_files(load_files([str(path)])).cap_findings


def test_startup_gpu_hour_cap_is_a_finding_with_amount_and_limit(tmp_path, capsys):
    # 2,100 h × 1 GPU × (1 + 0) = 2,100 requested GPU-hours; Start-Up is capped near 2,000.
    path = write(tmp_path, "proposal: {track: startup}\nworkloads:\n" + service("serve", 2100))
    (found,) = findings(path)
    assert (found.field, found.what, found.amount, found.limit) == ("proposal.track", "gpu_hours", 2100.0, 2000)
    assert found.message.startswith("The plan requests 2,100 GPU-hours; the NAIRR Pilot Start-Up track is capped "
                                    "near 2,000 GPU-hours")
    plan = plan_files(load_files([str(path)]))
    assert found.message in plan.warnings                  # the plan's warning is the same finding
    code, out, err = check(capsys, path)
    assert (code, out, err) == (1, "", f"{path}:1: proposal.track: {found.message}\n")


def test_startup_one_resource_cap(tmp_path, capsys):
    path = write(tmp_path, "proposal: {track: startup}\nworkloads:\n"
                 + service("a", 10, resource="ncsa-delta") + service("b", 10, gpu="a100-40gb", resource="jetstream2"))
    (found,) = findings(path)
    assert (found.what, found.amount, found.limit) == ("resources", 2, 1)
    code, _, err = check(capsys, path)
    assert code == 1
    assert err == (f"{path}:1: proposal.track: The NAIRR Pilot Start-Up track allows 1 resource; the plan uses 2 "
                   "(ncsa-delta, jetstream2). Target one resource (proposal.resource)\n")


def test_access_tier_limit_is_a_finding(tmp_path, capsys):
    # Delta H200: 2,000 h × 3 SU = 6,000 SUs × 66.7 = 400,200 credits, above Explore's 400,000.
    path = write(tmp_path, "proposal: {resource: ncsa-delta, access_tier: explore}\nworkloads:\n"
                 + service("serve", 2000))
    (found,) = findings(path)
    assert (found.field, found.what, found.limit) == ("proposal.access_tier", "access_credits", 400_000)
    assert found.amount == pytest.approx(2000 * 3 * 66.7)
    code, _, err = check(capsys, path)
    assert code == 1
    assert err == (f"{path}:1: proposal.access_tier: The plan comes to 400,200 ACCESS credits (ncsa-delta-h200: "
                   "6,000.00 SUs × 66.7 = 400,200 credits); the Explore ACCESS limit is 400,000; it fits Discover "
                   "ACCESS; some exchange rates are second-hand: re-check with the ACCESS Exchange Calculator\n")
    # 1,999 h: 399,999.9 credits, within the limit: no finding, check passes.
    under = write(tmp_path, path.read_text().replace("hours: 2000", "hours: 1999"), "under.yaml")
    assert findings(under) == ()
    assert check(capsys, under)[0] == 0


def test_calendar_time_is_a_finding_the_plan_warns_on_but_check_does_not_fail(tmp_path, capsys):
    # 2,300 h = 95.83 days, 95.8 as the plan carries and prints them, more than Start-Up's 3 months (91.3 days); 2,300 GPU-hours is also over the cap.
    path = write(tmp_path, "proposal: {track: startup}\nworkloads:\n" + service("serve", 2300))
    assert [f.what for f in findings(path)] == ["gpu_hours", "calendar_days"]
    calendar = findings(path)[1]
    assert calendar.amount == 95.8 and calendar.limit == pytest.approx(3 * 365.25 / 12)
    code, _, err = check(capsys, path)
    assert code == 1 and err.count("\n") == 1 and "GPU-hours" in err and "calendar days" not in err


def test_caps_count_the_feasible_workloads_when_one_is_infeasible(tmp_path, capsys):
    """One workload that fits nowhere hides neither the others nor the caps."""
    too_big = ("  - {name: too-big, kind: finetune, method: full, model: llama-3.1-70b, tokens: 1M, "
               "gpu: a100-80gb, gpus: 1}\n")
    path = write(tmp_path, "proposal: {track: startup}\nworkloads:\n" + service("serve", 2100) + too_big)
    code, _, err = check(capsys, path)
    lines = err.splitlines()
    assert code == 1 and len(lines) == 2, err
    assert "too-big does not fit" in lines[0]
    assert lines[1].startswith(f"{path}:1: proposal.track: The plan requests 2,100 GPU-hours;")
