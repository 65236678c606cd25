"""What several commands print about a run: BP convergence and evaluations."""
from __future__ import annotations

import argparse
import sys

from fgl.engines.program import InferenceStats
from fgl.errors import DataError


def warn_convergence(spec, stats: InferenceStats | None, when: str) -> None:
    """Say so when belief propagation stopped at max_iter (general CRFs),
    with advice that fits the spec's `infer` settings."""
    if stats is None or not stats.not_converged:
        return
    from fgl.lang.settings import infer_settings

    method, settings = infer_settings(spec)
    advice = [f"more iterations (`max_iter` is {settings['max_iter']})"]
    if method in ("loopy", "auto") and not settings["damping"]:
        advice.insert(0, f"damping (`infer {method}(damping = 0.5)`)")
    if method == "loopy":
        advice.append("the tree schedule `infer trp`")
    advice.append(f"a looser `tol` (now {settings['tol']:g})")
    print(f"warning: belief propagation did not converge on {stats.not_converged} of "
          f"{stats.instances} instances in {when} (max_iter {stats.max_iterations}, "
          f"final residual {stats.max_residual:.2g}); consider {', '.join(advice[:-1])} or "
          f"{advice[-1]}", file=sys.stderr)



def report(crf, path: str, a: argparse.Namespace) -> None:
    """Evaluate every output column (conlleval-style when tags are BIO;
    `fgl eval`'s --scheme, --ignore and --labels apply)."""
    from fgl.api import eval_scheme
    from fgl.io.evaluate import evaluate

    scheme = eval_scheme(crf.spec, getattr(a, "scheme", "auto"))
    ignore = getattr(a, "ignore", None) or ("O",)
    labels = getattr(a, "labels", None)

    sentences, pred = crf.tag_file(path, encoding=a.encoding, short_lines=a.short_lines)
    if not sentences:
        raise DataError("no sentences to evaluate (the file is empty)", path, 1)
    warn_convergence(crf.spec, pred.stats, "decoding")
    outputs, columns = pred.outputs, [c.name for c in crf.spec.columns]
    if sentences and len(sentences[0].rows[0]) != len(columns):
        raise DataError(f"evaluation needs the label column(s) {', '.join(outputs)}",
                        sentences[0].file, sentences[0].lines[0])
    for out in outputs:
        if len(outputs) > 1:
            print(f"== {out}")
        gold = [s.column(columns.index(out)) for s in sentences]
        print(evaluate(gold, pred.layer(out), scheme, ignore, labels).format())

