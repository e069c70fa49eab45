"""One side of `proposalkit diff`: a workload file, `REV:PATH` read from git, or `/dev/null`.

Loaded and planned like any file; the plan is kept in its JSON form
(output.plan_dict), which is what diff compares and prints. REV:PATH never
reaches git as an option: a REV starting with `-` is refused, and git is told
where its options end (`git cat-file … --end-of-options REV:PATH`; `--` would make
REV:PATH a path, not a revision); no shell sees it. A line break or NUL in
REV:PATH, an empty PATH, a PATH that is a folder or a submodule in REV are
refused with a message, and a blob larger than a workload file may be is
refused before it is read, as a file on disk is. The bytes are read with
`git cat-file blob`, as committed (no textconv filter).
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass

from ..errors import InputError, Problem
from ..files import WORKLOAD_FILE

EMPTY = "/dev/null"   # git's name for the missing side of an added or deleted file


@dataclass(frozen=True)
class Version:
    """One planned workload of one side: its plan (JSON form) and its settings."""

    name: str
    plan: dict                 # output.workload_dict
    settings: dict             # the workload as validated (defaults merged), JSON form

    @property
    def requested(self) -> float:
        return self.plan["gpu_hours_requested"]

    @property
    def resource_id(self) -> str | None:
        """The target resource (partition) the planner charged, if any."""
        return (self.plan.get("resource") or {}).get("id")

    def rename_key(self) -> str:
        """Everything that defines the workload except its name and description."""
        settings = {k: v for k, v in self.settings.items() if k not in ("name", "description")}
        return json.dumps([settings, self.resource_id, self.plan["model"]["params"]], sort_keys=True)


@dataclass(frozen=True)
class Side:
    label: str                 # what the user typed: a path, REV:PATH or /dev/null
    workloads: dict[str, Version]
    totals: dict               # output.plan_dict()["totals"]


def _git(args: list[str], label: str) -> bytes:
    try:
        done = subprocess.run(["git", *args], capture_output=True)
    except FileNotFoundError:
        raise InputError([Problem(label, None, "", "cannot read it from git: the 'git' command was not found "
                                                   "(install git, or give a file path)")]) from None
    if done.returncode != 0:
        lines = [ln.strip() for ln in done.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
        message = lines[0] if lines else f"git {args[0]} exited with {done.returncode}"
        raise InputError([Problem(label, None, "", f"cannot read it from git ({message})")])
    return done.stdout


def _working_tree_path(path: str, label: str) -> str:
    """Where REV:PATH's file lives in the working tree (git reads PATH from the
    repository root, or from the current directory when it starts with ./ or ../)."""
    if path.startswith(("./", "../")):
        return os.path.abspath(path)
    top = _git(["rev-parse", "--show-toplevel"], label).decode("utf-8", "replace").strip()
    return os.path.join(top, path)


def _load_text(raw: bytes, label: str, original: str, resource_ids):
    """Load workload-file bytes read from git as if they were the file `original`, naming them `label`.

    `config:` paths resolve next to the original in the working tree; nothing is written to disk.
    """
    from ..input.loading import load_file

    return load_file(label, resource_ids, raw=raw, base_dir=os.path.dirname(os.path.abspath(original)))


def check_revision(spec: str) -> tuple[str, str]:
    """REV:PATH split in two; InputError when REV starts with '-' (git would take it for an option)."""
    rev, path = spec.split(":", 1)
    if rev.startswith("-"):
        raise InputError([Problem(spec, None, "", f"cannot read it from git: the revision '{rev}' starts with '-', "
                                                  "which git would take for an option (give REV:PATH with a revision "
                                                  "such as HEAD or origin/main, or a file path)")])
    return rev, path


def _load(spec: str, resource_ids):
    """One side → the loaded files ([] for /dev/null)."""
    from ..input.loading import load_file

    if spec == EMPTY:
        return []
    if os.path.exists(spec) or ":" not in spec:
        return [load_file(spec, resource_ids)]
    rev, path = check_revision(spec)
    if any(c in spec for c in "\n\r\0"):
        raise InputError([Problem(spec, None, "", "cannot read it from git: a line break or NUL in REV:PATH "
                                                  "(give REV:PATH on one line, or a file path)")])
    if not path:
        raise InputError([Problem(spec, None, "", "cannot read it from git: no PATH after the ':' (give REV:PATH "
                                                  "of a workload file, e.g. HEAD:workloads/plan.yaml)")])
    # What the object is, then its size, before reading it (a file on disk is refused by its size
    # the same way, files.py); `cat-file blob` gives the bytes as committed (`git show` would run a
    # textconv filter that .gitattributes names).
    kind = _git(["cat-file", "-t", "--end-of-options", f"{rev}:{path}"], spec).decode("ascii", "replace").strip()
    if kind != "blob":
        what = {"tree": "a folder", "commit": "a submodule"}.get(kind, f"a git {kind}")
        raise InputError([Problem(spec, None, "", f"cannot read it from git: {path} is {what} in {rev}, not a file "
                                                  "(give REV:PATH of a workload file)")])
    size = int(_git(["cat-file", "-s", "--end-of-options", f"{rev}:{path}"], spec))
    if size > WORKLOAD_FILE.bytes:
        raise InputError([Problem(spec, None, "", WORKLOAD_FILE.too_large(size))])
    raw = _git(["cat-file", "blob", "--end-of-options", f"{rev}:{path}"], spec)
    return [_load_text(raw, spec, _working_tree_path(path, spec), resource_ids)]


def read_side(spec: str) -> Side:
    """Load and plan one side of the diff."""
    from ..input.loading import known_resource_ids
    from ..render.output import plan_dict
    from ..planning.planner import plan_files

    files = _load(spec, known_resource_ids())
    planned = plan_dict(plan_files(files))
    settings = {lw.spec.name: lw.spec.model_dump(mode="json") for f in files for lw in f.workloads}
    workloads = {w["name"]: Version(w["name"], w, settings[w["name"]]) for w in planned["workloads"]}
    return Side(spec, workloads, planned["totals"])
