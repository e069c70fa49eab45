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


# Seconds to wait for the Hub's answer about config.json. huggingface_hub's own wait is 10 s
# (constants.DEFAULT_ETAG_TIMEOUT) and, when nothing is cached, one more try of up to 60 s
# (file_download._ETAG_RETRY_TIMEOUT) repeated five times after 1, 2, 4, 8 and 8 s (utils/_http.py
# http_backoff): 24 s before a refused connection is reported, minutes before a silent one is. Here one try
# within this bound, so that no network is reported within 5 s; a HF_HUB_ETAG_TIMEOUT in the environment is
# used instead, as huggingface_hub lets it override its own.
TIMEOUT_S = 3.0


def revision_problem(revision: str) -> str | None:
    """Why `revision` cannot be a branch, tag or commit of a Hub repository, or None.

    git's rules for a ref name (git check-ref-format), which the Hub's branches and tags follow: no
    control characters, space, '~', '^', ':', '?', '*', '[' or '\\'; no '..' or '@{'; no '/' at the start or end,
    no '//', no part starting with '.', no '.lock' or '.' at the end. huggingface_hub joins a revision to its
    cache folder as a path (refs/REVISION), so an absolute path or '..' would read a file outside it.
    """
    if (re.search(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|(?:^|/)\.", revision) or revision.startswith("/")
            or revision.endswith(("/", ".", ".lock")) or revision in ("", "@")):
        return (f"not a revision (got {revision!r}, expected a branch or tag name such as main or v1.0, or a "
                "40-hex commit hash: no '/' at the start, no '..', no spaces or \\)")
    return None


@functools.lru_cache(maxsize=None)
def fetch_config(repo_id: str, revision: str | None) -> tuple[str, str | None]:
    """The cached path of `repo_id`'s config.json at `revision` (default branch when None), and the
    commit it resolved to (None when the cache layout does not show it). Raises HubError.

    Fetched once per run for each (id, revision): a file of many workloads naming one model asks once.
    The Hub is first asked once, briefly (TIMEOUT_S): when it cannot be reached, or refuses, the cached
    copy is read (as huggingface_hub would), and without one the problem is reported at once, not after
    huggingface_hub's retries.
    """
    # Deferred: huggingface_hub takes ~0.4 s to import and is needed only for Hub ids.
    import logging

    from huggingface_hub import constants, errors, hf_hub_download, try_to_load_from_cache

    # Its retry warnings ("Retrying in 1s") would break the one-line-per-problem output. Set after
    # the import: huggingface_hub sets its logger's level when its modules load.
    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    at = f" at revision {revision!r}" if revision else ""
    page = HUB_URL + repo_id
    problem = revision_problem(revision) if revision is not None else None
    if problem:
        raise HubError(problem)
    offline = constants.is_offline_mode()
    timeout = TIMEOUT_S if constants.HF_HUB_ETAG_TIMEOUT == constants.DEFAULT_ETAG_TIMEOUT \
        else constants.HF_HUB_ETAG_TIMEOUT
    try:
        refused = None   # what the Hub answered to the short request, when a cached copy may still do
        if not (offline or _UNREACHABLE):
            try:
                _ask_once(repo_id, revision, timeout)
            except _Unreachable as error:
                _UNREACHABLE.append(str(error))    # the other ids of this run are read from the cache only
            except (errors.RevisionNotFoundError, errors.RemoteEntryNotFoundError):
                raise                              # as hf_hub_download: a cached copy is not used then
            except errors.HfHubHTTPError as error:
                refused = error                    # gated, private, the Hub down: a cached copy is used
        if offline or _UNREACHABLE or refused is not None:
            # The cache alone, as hf_hub_download reads it when the Hub does not answer (refs/REVISION →
            # snapshots/COMMIT/config.json), but without its requests: it would first fetch its agent
            # registry for the User-Agent header, another wait of up to 3 s.
            path = try_to_load_from_cache(repo_id, "config.json", revision=revision)
            if not isinstance(path, str):      # None, or the marker of a file known to be absent
                if refused is not None:
                    raise refused
                raise errors.LocalEntryNotFoundError("not cached")
        else:
            path = hf_hub_download(repo_id, "config.json", revision=revision, etag_timeout=timeout)
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
        if offline:
            raise HubError(f"{repo_id!r}{at} is not in the Hugging Face cache and HF_HUB_OFFLINE is set (expected: "
                           f"{_offline_advice(constants.HF_HUB_CACHE)})") from None
        raise HubError(_unreachable(repo_id, at, _UNREACHABLE[0] if _UNREACHABLE else "not reached", constants)) \
            from None
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


class _Unreachable(Exception):
    """The Hub did not answer the one short request (the message says how: refused, no answer in time)."""


def _ask_once(repo_id: str, revision: str | None, timeout: float) -> None:
    """Ask the Hub once for config.json's metadata and wait at most `timeout` s for the answer. Raises
    _Unreachable, or huggingface_hub's error for what the Hub answered (no such repository, ...).

    The request runs in a daemon thread that is left behind when it overstays: httpx's timeouts bound
    connecting and reading, but not resolving the host name, nor the other requests huggingface_hub may
    make first (its agent registry for the User-Agent header, once a day, with a 3 s timeout of its own).
    """
    import inspect
    import threading

    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    try:
        import httpx2 as httpx      # huggingface_hub ≥ 2.0
    except ImportError:             # pragma: no cover - huggingface_hub 1.x
        import httpx
    # huggingface_hub since its pull request #3583 (late 2025) retries this request unless told not to.
    once = ({"retry_on_errors": False} if "retry_on_errors" in inspect.signature(get_hf_file_metadata).parameters
            else {})
    url = hf_hub_url(repo_id, "config.json", revision=revision)
    outcome: list[BaseException | None] = []

    def ask() -> None:
        try:
            get_hf_file_metadata(url, timeout=timeout, **once)
            outcome.append(None)
        except BaseException as error:      # handed to the waiting thread
            outcome.append(error)

    thread = threading.Thread(target=ask, name="proposalkit-hub", daemon=True)
    thread.start()
    thread.join(timeout)
    if not outcome or isinstance(outcome[0], httpx.TimeoutException):
        raise _Unreachable(f"no answer within {timeout:g} s; HF_HUB_ETAG_TIMEOUT=30 waits longer")
    if isinstance(outcome[0], httpx.TransportError):
        raise _Unreachable(str(outcome[0]) or type(outcome[0]).__name__)
    if outcome[0] is not None:
        raise outcome[0]


def _offline_advice(cache: str) -> str:
    """How to plan a Hub model without network: a filled cache and HF_HUB_OFFLINE=1, or a local config.json."""
    return (f"to work offline, set HF_HUB_OFFLINE=1 after one run with network has cached its config.json in "
            f"{cache}, {LOCAL_CONFIG}")


def _unreachable(repo_id: str, at: str, why: str, constants) -> str:
    return (f"cannot reach the Hugging Face Hub at {constants.ENDPOINT} for {repo_id!r}{at} ({why}), and its "
            f"config.json is not in the cache (expected: {_offline_advice(constants.HF_HUB_CACHE)})")


_UNREACHABLE: list[str] = []   # how the Hub could not be reached, once a fetch found so (this run only)


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
