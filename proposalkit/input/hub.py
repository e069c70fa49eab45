"""Hugging Face Hub ids (`model: Qwen/Qwen2.5-7B-Instruct`, `{hf: ..., revision: ...}`): config.json only.

huggingface_hub fetches the one file, never weights, into its own cache
(HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub), with HF_TOKEN
or an `hf auth login` token (`huggingface-cli login` before huggingface_hub 1.0)
for gated and private repositories; HF_HUB_OFFLINE=1 reads the cache only. It
is imported here, on first use, so that a plan of catalog models never pays for
its import (~0.4 s).
"""

from __future__ import annotations

import functools
import re

# A repository id as the Hub accepts it: ORG/NAME, letters, digits, '-', '_', '.', at most 96
# characters, no '--' or '..' (huggingface_hub utils/_validators.py validate_repo_id).
_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_REPO_ID = rf"{_PART}/{_PART}"     # compiled on first use (re's cache): not at startup
_REPO_ID_MAX = 96
_COMMIT = r"[0-9a-f]{40}"

HUB_URL = "https://huggingface.co/"
LOCAL_CONFIG = "or give model: {config: path/to/config.json} with a local copy"


def looks_like_hub_id(ref: str) -> bool:
    """A model string meant as a Hub id: it has a '/' (catalog ids never do)."""
    return "/" in ref


def hub_id_problem(repo_id: str) -> str | None:
    """Why `repo_id` cannot be a Hub repository id, or None."""
    if re.fullmatch(_REPO_ID, repo_id) and len(repo_id) <= _REPO_ID_MAX and "--" not in repo_id and ".." not in repo_id:
        return None
    hint = ("; a local config.json is given as model: {config: PATH}"
            if repo_id.endswith(".json") or repo_id.startswith((".", "/")) else "")
    return (f"not a Hugging Face Hub id (got {repo_id!r}, expected ORGANIZATION/NAME as on the model page, e.g. "
            f"'Qwen/Qwen2.5-7B-Instruct': letters, digits, '-', '_' and '.', one '/', at most {_REPO_ID_MAX} "
            f"characters{hint})")


class HubError(Exception):
    """A Hub id whose config.json could not be had; the message says what to do."""


@functools.lru_cache(maxsize=None)
def fetch_config(repo_id: str, revision: str | None) -> tuple[str, str | None]:
    """The cached path of `repo_id`'s config.json at `revision` (default branch when None), and the
    commit it resolved to (None when the cache layout does not show it). Raises HubError.

    Fetched once per run for each (id, revision): a file of many workloads naming one model asks once.
    """
    # Deferred: huggingface_hub takes ~0.4 s to import and is needed only for Hub ids.
    import logging

    from huggingface_hub import constants, errors, hf_hub_download

    # Its retry warnings ("Retrying in 1s") would break the one-line-per-problem output. Set after
    # the import: huggingface_hub sets its logger's level when its modules load.
    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    at = f" at revision {revision!r}" if revision else ""
    page = HUB_URL + repo_id
    try:
        # After one id found the Hub unreachable (huggingface_hub retries 5 times, ~25 s), the others
        # are read from the cache only: one wait per run, not one per id.
        path = hf_hub_download(repo_id, "config.json", revision=revision, local_files_only=_UNREACHABLE[0])
    except errors.GatedRepoError:
        raise HubError(f"{repo_id!r} is a gated model: its config.json needs a Hugging Face token of an account "
                       f"that accepted its license (expected: accept the license on {page}, then set HF_TOKEN or "
                       f"run 'hf auth login'; {LOCAL_CONFIG})") from None
    except errors.RepositoryNotFoundError:
        raise HubError(f"no model {repo_id!r} on the Hugging Face Hub, or a private one (expected the id as on "
                       f"its model page, ORGANIZATION/NAME{_catalog_hint(repo_id)}; for a private model set "
                       f"HF_TOKEN; built-in models: 'proposalkit catalog models')") from None
    except errors.RevisionNotFoundError:
        raise HubError(f"no revision {revision!r} in {repo_id!r} (expected a branch, tag or commit hash of "
                       f"{page}, e.g. main)") from None
    except errors.RemoteEntryNotFoundError:
        raise HubError(f"{repo_id!r}{at} has no config.json (expected a transformers model repository; "
                       f"{LOCAL_CONFIG})") from None
    except errors.LocalEntryNotFoundError:
        if constants.is_offline_mode():
            raise HubError(f"{repo_id!r}{at} is not in the Hugging Face cache and HF_HUB_OFFLINE is set (cache: "
                           f"{constants.HF_HUB_CACHE}; expected: run once with network and without "
                           f"HF_HUB_OFFLINE to cache its config.json, {LOCAL_CONFIG})") from None
        _UNREACHABLE[0] = True
        raise HubError(f"cannot reach the Hugging Face Hub for {repo_id!r}{at}, and its config.json is not in the "
                       f"cache (cache: {constants.HF_HUB_CACHE}; expected: connect once to cache "
                       f"it, {LOCAL_CONFIG})") from None
    except errors.HfHubHTTPError as error:
        status = error.response.status_code if error.response is not None else "no status"
        raise HubError(f"the Hugging Face Hub refused config.json of {repo_id!r}{at} (HTTP {status}; expected: "
                       f"try again later, {LOCAL_CONFIG})") from None
    except errors.HFValidationError as error:
        raise HubError(f"not a Hugging Face Hub id or revision (got {repo_id!r}{at}: {error})") from None
    except OSError as error:
        raise HubError(f"cannot cache config.json of {repo_id!r} ({error.strerror or error}; expected a writable "
                       f"HF_HUB_CACHE or HF_HOME, {LOCAL_CONFIG})") from None
    folder = path.replace("\\", "/").rsplit("/", 2)
    commit = folder[-2] if len(folder) == 3 and re.fullmatch(_COMMIT, folder[-2]) else None
    return path, commit


_UNREACHABLE = [False]   # set once a fetch found no network (this run only)


def _catalog_hint(repo_id: str) -> str:
    """'; did you mean ...' naming the catalog model closest to `repo_id` (by its Hub id, else its id)."""
    import difflib

    from .. import catalog

    models = catalog.models()
    hub_ids = {m.hf_id.lower(): m for m in models.values() if m.hf_id}
    close = difflib.get_close_matches(repo_id.lower(), hub_ids, n=1, cutoff=0.8)
    if close:
        m = hub_ids[close[0]]
        return f"; did you mean {m.hf_id!r}, or the catalog id {m.id!r}?"
    close = difflib.get_close_matches(repo_id.split("/")[-1].lower(), models, n=1, cutoff=0.6)
    return f"; did you mean the catalog id {close[0]!r}?" if close else ""


def describe_source(repo_id: str, revision: str | None, commit: str | None) -> str:
    """How the plan and report cite a Hub model: id, revision asked for, commit read."""
    parts = [f"revision {revision}" if revision else "default branch"]
    if commit and commit != revision:
        parts.append(f"commit {commit[:12]}")
    return f"config.json of {repo_id} on the Hugging Face Hub ({', '.join(parts)}), {HUB_URL}{repo_id}"
