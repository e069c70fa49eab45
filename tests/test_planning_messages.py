"""The planner's messages fit the workload: MFU warnings, workloads that fit nowhere,
and why there is no GPU configuration to consider. Exact text, through the CLI."""

from __future__ import annotations

import pytest

from proposalkit.cli import main


def run(tmp_path, capsys, *workloads, head=""):
    path = tmp_path / "w.yaml"
    path.write_text(head + "workloads:\n" + "".join(f"  - {{{w}}}\n" for w in workloads), encoding="utf-8")
    code = main(["plan", str(path)])
    out, err = capsys.readouterr()
    return code, out, err, str(path)


LORA_8B = "name: tune, kind: finetune, method: lora, model: llama-3.1-8b, tokens: 10M, seq_len: 2048, gpu: h100-80gb"


# ---------------------------------------------------------------- MFU

def test_mfu_above_the_highest_published_result_is_warned(tmp_path, capsys):
    # Korthikanti et al. 2022 Table 3: 56.3% MFU (GPT 1T on 512 A100), the highest we know of.
    code, out, err, _ = run(tmp_path, capsys, LORA_8B + ", mfu: 0.57")
    assert (code, err) == (0, "")
    assert ("warning: tune: MFU 0.57 is above the highest published achieved MFU "
            "(0.563: Korthikanti et al. 2022 Table 3, GPT 1T on 512 A100)\n") in out


@pytest.mark.parametrize("mfu", ["0.563", "0.5"])
def test_mfu_at_or_below_the_published_maximum_is_not_warned(tmp_path, capsys, mfu):
    code, out, err, _ = run(tmp_path, capsys, LORA_8B + f", mfu: {mfu}")
    assert (code, err) == (0, "")
    assert "MFU" not in out.replace("at MFU", "")
