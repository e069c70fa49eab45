"""`proposalkit diff` on services by load: replicas and the TTFT at its percentile are compared, so a
changed ttft_percentile reads as what it does ("TTFT p99 … → p99.9 …"), not as "unset → 99.9"."""

from __future__ import annotations

from proposalkit.cli import main
from test_serving_pool import service_yaml


def write(tmp_path, name: str, rate: float = 1, extra: str = ""):
    path = tmp_path / name
    path.write_text(service_yaml(rate, extra))
    return path


def diff_line(capsys, old, new) -> str:
    assert main(["diff", str(old), str(new)]) == 0
    return next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| `svc`"))


def test_a_stricter_percentile_shows_as_the_ttft_it_holds(tmp_path, capsys):
    # Llama 3.1 70B on 2 × H100 (a pool of 13 sequences), 1 request/s: 2 replicas at p99 and 3 at p99.9
    # (tests/test_serving_pool.py). Before: "ttft_percentile unset → 99.9", the replicas unsaid.
    old = write(tmp_path, "a.yaml")
    new = write(tmp_path, "b.yaml", extra="    ttft_percentile: 99.9\n")
    line = diff_line(capsys, old, new)
    assert "replicas 2 → 3" in line
    assert "TTFT p99 527 ms → p99.9 " in line     # the exact M/D/1 wait (625 ms with Lundberg's bound)
    assert "ttft_percentile" not in line and "unset" not in line


def test_more_load_shows_its_replicas_and_the_rate(tmp_path, capsys):
    line = diff_line(capsys, write(tmp_path, "a.yaml"), write(tmp_path, "b.yaml", rate=2))
    assert "replicas 2 → 4" in line and "request_rate 1 → 2" in line
