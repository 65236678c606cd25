"""The trainer ecrn: an empirical co-occurrence rate network, weights counted
in one pass (``fgl.learn.crn``, Zhu et al., eq. 5)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fgl.compile.frontend import loc_error
from fgl.lang import ast
from fgl.learn.trainer_options import ECRNOptions
from fgl.learn.trainers.base import Fitted, RunContext, Trainer

if TYPE_CHECKING:
    from fgl.learn.learner import TrainingLog
    from fgl.registry import Engine

ADVICE = "trainer lbfgs or perceptron"


def check_spec(spec: ast.Spec, engine: "Engine", reason: str) -> None:
    """Refuse, at its location, a spec whose model is no ECRN (it runs on
    ``engine`` because of ``reason``; an ECRN needs the chain engine with
    windows of at most two labels), and the template option ``sigma``,
    which an ECRN does not read."""
    if engine.segmented:
        raise loc_error("trainer ecrn: an ECRN factorises a chain of token labels (Zhu et al., "
                        f"eq. 5), not segments; use {ADVICE}", spec.segments.loc)
    if engine.name not in ECRN.engines:
        pair = next((t for t in spec.templates
                     if len(t.labels) > 1 or t.where or t.labels[0].index != "t"), None)
        trainer = next(s for s in spec.train if s.key == "trainer")
        raise loc_error(f"trainer ecrn: an ECRN is a chain model (Zhu et al., eq. 5), but "
                        f"{reason}; use {ADVICE}", (pair or trainer).loc)
    for tpl in spec.templates:
        width = 1 - min(ref.lo for ref in tpl.labels)
        if width > 2:
            raise loc_error(f"trainer ecrn: template '{tpl.name}' spans {width} labels; an "
                            "ECRN's factors are single labels and pairs of adjacent ones (Zhu "
                            f"et al., eq. 5): use windows y[t] and y[t-1..t], or {ADVICE}",
                            tpl.loc)
        for option in tpl.options:
            if option.key == "sigma":
                raise loc_error(f"template '{tpl.name}': `sigma` is not read by trainer ecrn "
                                "(its weights are counted, not trained); remove it",
                                option.loc)


def _fit(run: RunContext, model: Any, data: Any) -> Fitted:
    from fgl.learn.crn import train_ecrn
    return (model, *train_ecrn(model, data))


def _summary(log: "TrainingLog") -> str:
    row = log.iterations[-1]
    return (f"ECRN (Zhu et al., eq. 5) of {row['features']} features counted over "
            f"{row['tokens']} tokens and {row['bigrams']} bigrams in {log.seconds:.2f}s; -log "
            f"eq. 5 on the training data {log.objective:.6g}")


def _progress_line(row: dict) -> str:
    return f"counted {row['features']} features in {row['seconds']:.1f}s"


ECRN = Trainer(
    title="the empirical co-occurrence rate network (Zhu et al., eq. 5): weights set in one "
          "pass to log relative frequencies p(y | a) and co-occurrence rates CR(y'; y | a), "
          "decoded by the chain Viterbi",
    chosen_when="`trainer = ecrn`; first-order chain models only",
    options=ECRNOptions, fit=_fit, summary=_summary, progress_line=_progress_line,
    engines=("chain",),
    hint=" (it counts relative frequencies in one pass)",
    override_hint=": it counts relative frequencies in one pass, nothing is optimised",
    check_spec=check_spec, kernels=None)
