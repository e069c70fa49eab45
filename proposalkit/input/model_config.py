"""Reading a Hugging Face config.json into a ModelSpec: a local file (`model: {config: path}`) or a Hub
id's (`model: ORG/NAME`, `{hf: ORG/NAME, revision: REV}`; fetched by hub.py).

This module reads the file; configs/ reads its keys, one reader per architecture family.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace

from ..errors import Problem
from ..catalog.shapes import ModelSpec
from ..notes import note
from . import hub
from ..files import CONFIG_FILE, Refused, read_limited
from .source import Path, Source, field_name
from .values import describe


def read_config(path: str, base_dir: str, origin: Source, at: Path) -> tuple[ModelSpec | None, list[Problem]]:
    """A local Hugging Face config.json → ModelSpec; problems name the file and the key."""
    full = os.path.normpath(os.path.join(base_dir, path))
    where = (origin.path, origin.line(at), field_name(at))
    config, problem = _load(full)
    if problem is FileNotFoundError:
        problem = f"file not found (got {path!r}, looked for {full}; the path is relative to the workload file)"
    if problem:
        return None, [Problem(*where, problem)]
    # The model is named for its folder (models/llama-3.1-8b/config.json), else for its file (falcon-7b.json).
    stem = os.path.splitext(os.path.basename(full))[0]
    name = (os.path.basename(os.path.dirname(full)) if stem == "config" else stem) or path
    from .configs import model_from_config   # on first use: a plan without config files need not import the readers
    spec, problems = model_from_config(config, name=name)
    return spec, [Problem(*where, f"{full}: {key}: {message}") for key, message in problems]


def read_hub_config(repo_id: str, revision: str | None, origin: Source, at: Path) -> tuple[ModelSpec | None,
                                                                                            list[Problem]]:
    """A Hub id's config.json (fetched once, then cached: hub.py) → ModelSpec citing the id, revision and commit."""
    where = (origin.path, origin.line(at), field_name(at))
    problem = hub.hub_id_problem(repo_id)
    if problem:
        return None, [Problem(*where, problem)]
    try:
        full, commit = hub.fetch_config(repo_id, revision)
    except hub.HubError as error:
        return None, [Problem(*where, str(error))]
    config, problem = _load(full)
    if problem:
        return None, [Problem(*where, f"{repo_id} {problem if problem is not FileNotFoundError else full}")]
    from .configs import model_from_config
    spec, problems = model_from_config(config, name=repo_id)
    if spec is None:
        return None, [Problem(*where, f"{repo_id} config.json ({full}): {key}: {message}")
                      for key, message in problems]
    source = hub.describe_source(repo_id, revision, commit)
    read = note("config-from-hub", repo_id=repo_id, revision=revision, commit=commit, source=source)
    return replace(spec, source=source, records=(read,) + spec.records), []


def _load(full: str):
    """(the JSON object of the file at `full`, None), or (None, why not); FileNotFoundError as itself."""
    try:
        config = json.loads(read_limited(full, CONFIG_FILE).decode("utf-8"))
    except FileNotFoundError:
        return None, FileNotFoundError
    except Refused as refused:
        return None, f"{full}: {refused}"
    except OSError as error:
        return None, f"{full}: cannot read the config ({error.strerror})"
    except UnicodeDecodeError as error:
        return None, f"{full}: not UTF-8 text (byte 0x{error.object[error.start]:02x} at offset {error.start})"
    except json.JSONDecodeError as error:
        return None, f"{full}:{error.lineno}: malformed JSON: {error.msg}"
    except ValueError:   # Python reads integers of at most 4,300 digits (sys.get_int_max_str_digits)
        return None, f"{full}: malformed JSON: a number of more than 4,300 digits"
    except RecursionError:
        return None, f"{full}: malformed JSON: values nested too deeply"
    if not isinstance(config, dict):
        return None, f"{full}: not a config (got {describe(config)}, expected a JSON object)"
    return config, None
