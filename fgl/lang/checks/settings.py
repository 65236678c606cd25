"""Checks of `train { ... }`, `infer METHOD(...)` and template options
against the table of settings (``fgl.lang.settings``).  Which train settings
the chosen trainer reads is the trainers' to say (``fgl.learn.trainers``)."""
from __future__ import annotations

from fgl.lang.ast import Loc, Setting
from fgl.lang.checks.base import CheckerBase
from fgl.lang.checks.text import did_you_mean, loc_of, show
from fgl.lang.settings import block_settings, infer_methods

MAX_WHOLE = 2**31 - 1   # the largest whole-number setting (engines count in machine integers)

class SettingChecks(CheckerBase):
    def check_train(self) -> None:
        self.check_settings(self.spec.train, "train", "train")

    def check_infer(self) -> None:
        if self.spec.infer_method is None:
            return
        method, loc = self.spec.infer_method
        methods = infer_methods()
        if method not in methods:
            self.error(loc_of(method, loc),
                       f"unknown inference method '{method}'; expected one of: "
                       f"{', '.join(methods)}{did_you_mean(method, methods)}")
            return
        self.check_settings(self.spec.infer, f"infer {method}", f"infer {method}")

    def check_settings(self, settings: list[Setting], block: str, where: str,
                       noun: str = "setting") -> None:
        """Each setting of ``block`` once, known, implemented and valid;
        ``where`` and ``noun`` name them in messages."""
        table = block_settings(block)
        allowed = [key for key, s in table.items() if s.refusal is None]
        seen: dict[str, Loc] = {}
        for s in settings:
            if s.key in seen:
                first = seen[s.key]
                self.error(s.loc, f"{where}: {noun} '{s.key}' is given twice "
                                  f"(first at {first.line}:{first.col})")
            seen.setdefault(s.key, s.loc)
            entry = table.get(s.key)
            if entry is None:
                self.error(s.loc, f"unknown {noun} '{s.key}' for {where}; expected one of: "
                                  f"{', '.join(allowed)}{did_you_mean(s.key, allowed)}")
            elif entry.refusal is not None:
                self.error(s.loc, f"{where}: {noun} '{s.key}' is not available: "
                                  f"{entry.refusal}; remove it")
            else:
                problem = entry.validator(s.value)
                if problem:
                    self.error(s.loc, f"{where}: {s.key} must be {problem}; found {show(s.value)}")
                elif isinstance(s.value, int) and s.value > MAX_WHOLE:
                    self.error(s.loc, f"{where}: {s.key} = {show(s.value)} is beyond the "
                                      f"largest whole number a setting may take ({MAX_WHOLE})")
