"""Reading config.json keys with their values checked: each problem names the key as the file spells it.

A family reader (families.py) asks for each key through Keys; a value that
cannot be what the key means (a boolean for a width, text for a count, a
dropout of 3) is recorded as a problem and a harmless stand-in is returned,
so one pass reports every bad key of the file at once.
"""

from __future__ import annotations

import json

from ...bounds import BOUNDS
from ..values import describe

REQUIRED = object()   # default= for a key the architecture cannot do without

# Four keys GPT-2-style configs name differently, either name read for the other: transformers'
# attribute_map of GPT2Config, GPTJConfig, GPTBigCodeConfig and CodeGenConfig (hidden_size → n_embd,
# max_position_embeddings → n_positions, num_attention_heads → n_head, num_hidden_layers → n_layer), which
# microsoft/phi-2's own PhiConfig (model_type phi-msft, before transformers' phi) repeats.
ATTRIBUTE_MAP = {"hidden_size": "n_embd", "max_position_embeddings": "n_positions",
                 "num_attention_heads": "n_head", "num_hidden_layers": "n_layer"}
SAME_KEY = {**ATTRIBUTE_MAP, **{gpt2: hf for hf, gpt2 in ATTRIBUTE_MAP.items()}}


def shown(value: object) -> str:
    """A JSON value as the file wrote it ("4096", 4096.5, NaN, true), kept short."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**16:
        return describe(value)
    text = json.dumps(value, allow_nan=True)
    return text if len(text) <= 40 else text[:37] + "..."


def count_problem(value: object, bound_name: str) -> str | None:
    """Why `value` is not a positive integer within BOUNDS[bound_name], or None."""
    bound = BOUNDS[bound_name]
    if isinstance(value, str):
        return f"not a number (got {shown(value)}, text; expected a positive integer without quotes)"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"not a number (got {shown(value)}, expected a positive integer)"
    if value != value or value in (float("inf"), float("-inf")):
        return f"not a finite number (got {shown(value)}, expected a positive integer)"
    if value != int(value) or value <= 0:
        return f"not a positive integer (got {shown(value)}, expected a positive integer)"
    if value > bound.high:
        return f"implausibly large (got {shown(value)}, expected {bound.expected})"
    return None


class Keys:
    """One config.json object (or its text_config / vision_config), read key by key.

    `problems` and `missing` are shared with nested objects, whose keys are
    named with their prefix ("text_config.hidden_size").
    """

    def __init__(self, config: dict, prefix: str = "", problems: list | None = None,
                 missing: list | None = None, defaults: dict | None = None):
        self.config = config
        self.prefix = prefix
        self.problems: list[tuple[str, str]] = [] if problems is None else problems
        self.missing: list[str] = [] if missing is None else missing
        self.defaults = defaults or {}   # the Hugging Face class defaults of a sparse text_config
        self.names: dict[str, str] = {}  # ModelSpec field → the key it was read from (for messages)

    def key(self, name: str) -> str:
        return self.prefix + name

    def _first(self, names: tuple[str, ...]) -> str | None:
        """The first of `names` given, else the first given under its other name (SAME_KEY)."""
        given = next((n for n in names if self.config.get(n) is not None), None)
        if given is None:
            given = next((SAME_KEY[n] for n in names if self.config.get(SAME_KEY.get(n)) is not None), None)
        return given

    def has(self, name: str) -> bool:
        return self._first((name,)) is not None

    def text(self, name: str, default: str = "") -> str:
        value = self.config.get(name)
        return value if isinstance(value, str) else default

    def count(self, *names: str, default=REQUIRED, bound: str = "dimension", field: str | None = None):
        """The first of `names` given (null counts as absent), checked as a positive integer.

        Absent: the class default of a sparse text_config, else `default`; a
        required key that is absent is recorded in `missing` (1 stands in).
        """
        name = self._first(names)
        if name is None:
            name = next((n for n in names if n in self.defaults), None)
            if name is not None:
                if field:
                    self.names[field] = self.key(name)
                return self.defaults[name]
            if default is REQUIRED:
                self.missing.append(" or ".join(self.key(n) for n in names))
                return 1
            if field:
                self.names[field] = self.key(names[0])
            return default
        if field:
            self.names[field] = self.key(name)
        problem = count_problem(self.config[name], bound)
        if problem:
            self.problems.append((self.key(name), problem))
            return 1
        return int(self.config[name])

    def flag(self, name: str, default: bool) -> bool:
        value = self.config.get(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.problems.append((self.key(name), f"not a boolean (got {shown(value)}, expected true or false)"))
            return default
        return value

    def fraction(self, name: str, default: float = 0.0, what: str = "dropout probability") -> float:
        """A number from 0 to 1 (a dropout probability, a rotary share)."""
        value = self.config.get(name)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            self.problems.append((self.key(name), f"not a {what} (got {shown(value)}, expected a number "
                                                  "from 0 to 1)"))
            return default
        return float(value)

    def nested(self, name: str, defaults: dict | None = None) -> Keys | None:
        """text_config / vision_config as Keys sharing this file's problems; None when absent."""
        value = self.config.get(name)
        if value is None:
            return Keys({}, self.key(name) + ".", self.problems, self.missing, defaults) if defaults else None
        if not isinstance(value, dict):
            self.problems.append((self.key(name), f"not an object (got {describe(value)}, expected a JSON object)"))
            return None
        return Keys(value, self.key(name) + ".", self.problems, self.missing, defaults)
