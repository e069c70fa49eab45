"""A service's latency reads the same wherever it is printed (issue 23, one number, one value): `plan`'s table,
the supplement's settings line and the derivation that ends in it. Before, the example's eval-service read
'TTFT p99 372 ms, TPOT 47.4 ms' beside a derivation ending '= 371.7 ms' and 'TPOT = … = 47.38 ms'."""

from __future__ import annotations

import re
from pathlib import Path

from proposalkit.cli import main

ROOT = Path(__file__).resolve().parent.parent
FILES = [ROOT / "workloads" / "code-models.yaml", ROOT / "workloads" / "inference" / "evaluation.yaml"]
SETTINGS = re.compile(r"latency \(estimated\) TTFT p99 ([\d,.]+) ms, TPOT ([\d,.]+) ms")


def test_a_services_latency_is_one_figure_everywhere(capsys, tmp_path):
    seen = 0
    for path in FILES:
        assert main(["plan", str(path)]) == 0
        table = capsys.readouterr().out
        assert main(["report", str(path), "-o", str(tmp_path / path.stem), "--format", "md"]) == 0
        capsys.readouterr()
        supplement = (tmp_path / path.stem / "supplement.md").read_text()
        for section in supplement.split("\n### S.2.")[1:]:
            settings = SETTINGS.search(section)
            if settings is None:
                continue                    # not a service sized for latency
            seen += 1
            name = re.match(r"\d+ (\S+): ", section).group(1)
            ttft, tpot = settings.groups()
            (row,) = [line for line in table.splitlines() if line.startswith(name + " ")]
            assert row.rstrip().endswith(f"{ttft} (p99) / {tpot}"), row
            assert f"÷ (1 − u) = {tpot} ms;" in section
            assert re.search(rf"\(chunks of [\d,]+ tokens\) = {re.escape(ttft)} ms", section), section
    assert seen >= 2
