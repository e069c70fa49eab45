"""Plan JSON never carries a raw DEL or C1 control character (U+007F–U+009F), which some
terminals act on (U+009B is the 8-bit CSI): it is written as a \\u escape, the same value."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from proposalkit.cli import main

CONFIGS = Path(__file__).parent / "data" / "configs"


def test_plan_json_escapes_del_and_c1_in_user_text(tmp_path, capsys):
    # The model is named after its config file, so a file name carries the characters.
    shutil.copy(CONFIGS / "llama-3.2-1b.json", tmp_path / "m\u009b2J\u007f.json")
    path = tmp_path / "w.yaml"
    path.write_text('workloads:\n  - {name: svc, kind: inference, model: {config: "m\\u009b2J\\u007f.json"},'
                    ' context: 4k, batch: 1, hours: 10}\n', encoding="utf-8")
    assert main(["plan", str(path), "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert not any("\x7f" <= ch <= "\x9f" for ch in out)
    assert '"id":"m\\u009b2J\\u007f"' in out
    assert json.loads(out)["workloads"][0]["model"]["id"] == "m\u009b2J\u007f"   # the same value
