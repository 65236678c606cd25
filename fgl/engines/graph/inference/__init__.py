"""The inference methods of the factor-graph engine, one table.

Each module of this package declares one ``InferenceMethod``
(``fgl.engines.graph.inference.method``): its settings, its kernel entry,
what it keeps and guarantees, its title, memory and advice.  The spec's
``infer NAME(...)``, the checker, ``fgl explain``, the memory estimate, the
convergence warning and ``docs/settings.md`` all read this table, so a new
method is one module and one ``register_inference_method`` call (the
built-in ones are listed in ``_BUILT_IN``).
"""
from __future__ import annotations

from fgl.engines.graph.inference import auto, exact, junction_tree, loopy, trp, trw
from fgl.engines.graph.inference.method import InferenceMethod
from fgl.errors import FglError

DEFAULT_METHOD = "auto"   # exact junction tree where its tables fit, TRW elsewhere

_BUILT_IN = (auto.METHOD, junction_tree.METHOD, exact.METHOD, loopy.METHOD, trp.METHOD,
             trw.METHOD)
_TABLE: dict[str, InferenceMethod] = {m.name: m for m in _BUILT_IN}


def register_inference_method(method: InferenceMethod) -> None:
    """Add ``method`` to the table: ``infer NAME`` then runs it."""
    if not method.name.isidentifier():
        raise ValueError(f"an inference method's name is a word of letters, digits and _; "
                         f"found {method.name!r}")
    if method.name in _TABLE:
        raise ValueError(f"inference method {method.name!r} is registered already")
    _TABLE[method.name] = method


def unregister_inference_method(name: str) -> None:
    """Take a method ``register_inference_method`` added out of the table."""
    if any(m.name == name for m in _BUILT_IN):
        raise ValueError(f"{name!r} is built in")
    _TABLE.pop(name, None)


def inference_methods() -> tuple[InferenceMethod, ...]:
    """Every method, in table order."""
    return tuple(_TABLE.values())


def method_names() -> tuple[str, ...]:
    """The names ``infer NAME`` accepts, in table order."""
    return tuple(_TABLE)


def inference_method(name: str) -> InferenceMethod:
    """The method ``infer name`` runs."""
    try:
        return _TABLE[name]
    except KeyError:
        raise FglError(f"unknown inference method '{name}'; this fgl has: "
                       f"{', '.join(_TABLE)}") from None


def methods_markdown() -> str:
    """The inference methods as a Markdown section of ``docs/settings.md``."""
    rows = ["## Inference methods", "",
            "Generated from `fgl/engines/graph/inference/` (one module per method; "
            "`infer NAME(...)` in a spec, default `" + DEFAULT_METHOD + "`). Each method's "
            "settings are the `infer NAME` rows above.", "",
            "| method | what runs | junction tree first | kernel entry | exact | convex | "
            "warm starts | advice when it does not converge |",
            "|---|---|---|---|---|---|---|---|"]
    for m in _TABLE.values():
        defaults = _Defaults(m)
        title = m.title(defaults, False).replace("|", "\\|")
        kernel = "—" if m.run is None else f"`{m.run.__module__}`"
        advice = "; ".join(m.advice(defaults)) or "— (it always ends)"
        rows.append(f"| `{m.name}` | {title} | {_yes(m.junction_tree)} | {kernel} | "
                    f"{_yes(m.exact)} | {_yes(m.convex)} | {_yes(m.keeps_messages)} | "
                    f"{advice} |")
    return "\n".join(rows) + "\n"


class _Defaults:
    """A method's default settings, as the docs show its title and advice."""

    def __init__(self, method: InferenceMethod):
        self.method = method.name
        self._values = {s.key: s.default for s in method.settings}

    def __getattr__(self, key: str) -> object:
        if key.startswith("_"):
            raise AttributeError(key)
        return self._values.get(key)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"
