"""What several commands print about a run: BP convergence and evaluations."""
from __future__ import annotations

import argparse
import sys

from fgl.engines.program import InferenceStats
from fgl.errors import DataError, FglError


def warn_convergence(spec, stats: InferenceStats | None, when: str) -> None:
    """Say so when belief propagation stopped at max_iter (general CRFs),
    with advice that fits the spec's `infer` settings."""
    if stats is None or not stats.not_converged:
        return
    from fgl.engines.graph.inference import inference_method
    from fgl.lang.settings import resolve_infer

    settings = resolve_infer(spec)
    advice = inference_method(settings.method).advice(settings)
    consider = (f"; consider {', '.join(advice[:-1])} or {advice[-1]}" if len(advice) > 1 else
                f"; consider {advice[0]}" if advice else "")
    print(f"warning: belief propagation did not converge on {stats.not_converged} of "
          f"{stats.instances} instances in {when} (max_iter {stats.max_iterations}, "
          f"final residual {stats.max_residual:.2g}){consider}", file=sys.stderr)



def add_scheme_arg(p: argparse.ArgumentParser, help: str) -> None:
    """``--scheme SCHEME`` or ``--scheme LAYER=SCHEME`` (repeatable)."""
    p.add_argument("--scheme", action="append", type=_scheme, metavar="[LAYER=]SCHEME",
                   help=help)


def _scheme(text: str) -> tuple[str | None, str]:
    from fgl.data.schemes import ALIASES, SCHEMES

    layer, _, name = text.rpartition("=")
    if name.lower() not in SCHEMES + tuple(ALIASES):
        raise argparse.ArgumentTypeError(
            f"unknown scheme {name!r}; expected one of {', '.join(SCHEMES + tuple(ALIASES))}"
            ", or LAYER=SCHEME for one output layer")
    return layer or None, name.lower()


def layer_schemes(crf, given: list[tuple[str | None, str]] | None) -> dict[str, str]:
    """The scheme of each output layer from the ``--scheme`` values: a bare
    scheme for every layer, ``LAYER=SCHEME`` for one (``auto`` otherwise;
    ``fgl.api.eval_scheme`` resolves a segment model's ``auto``)."""
    from fgl.api import eval_scheme

    outputs = list(crf.spec.outputs)
    default = "auto"
    named: dict[str, str] = {}
    for layer, name in given or ():
        if layer is None:
            default = name
        elif layer not in outputs:
            raise FglError(f"--scheme {layer}={name}: the model has no output layer {layer!r}; "
                           f"its output layers are {', '.join(outputs)}")
        else:
            named[layer] = name
    return {out: eval_scheme(crf.spec, named.get(out, default)) for out in outputs}


def report(crf, path: str, a: argparse.Namespace) -> None:
    """Evaluate every output column (`fgl eval`'s --scheme, --ignore,
    --labels, --confusion and -o apply; `train --dev` has their defaults)."""
    from fgl.evaluation.evaluate import TagError, evaluate

    schemes = layer_schemes(crf, getattr(a, "scheme", None))
    ignore = getattr(a, "ignore", None) or ("O",)
    labels = getattr(a, "labels", None)

    sentences = crf.read(path, encoding=a.encoding, short_lines=a.short_lines)
    from fgl.engines.first_run import note_first_compile
    note_first_compile(crf.engine.engine, "tag")   # (a first run compiles the kernels)
    if not sentences:
        from fgl.io.sources import expand, files_label
        raise DataError("no sentences to evaluate (the file is empty)",
                        files_label(expand(path)), 1)
    columns = [c.name for c in crf.spec.columns]
    scored = None
    if crf.spec.input_format == "graph":   # the nodes whose labels the model is not given
        from fgl.io.graphs import scoring
        scored = scoring(sentences, crf.spec)
    pred = crf.tag_sentences(sentences)
    warn_convergence(crf.spec, pred.stats, "decoding")
    outputs = pred.outputs
    if scored is None and len(sentences[0].rows[0]) != len(columns):
        raise DataError(f"evaluation needs the label column(s) {', '.join(outputs)}",
                        sentences[0].file, sentences[0].lines[0])
    if scored is not None and scored.note():
        print(scored.note())
    for out in outputs:
        if len(outputs) > 1:
            print(f"== {out}")
        if scored is None:
            gold, guess, where = ([s.column(columns.index(out)) for s in sentences],
                                  pred.layer(out), sentences)
        else:
            gold, guess = scored.gold[out], scored.select(pred.layer(out))
            where = [sentences[i] for i in scored.graphs]
        try:
            result = evaluate(gold, guess, schemes[out], ignore, labels)
        except TagError as e:
            raise located(e, where, out) from None
        result = _conlleval_tokens(result, path, a)
        print(result.format("graphs" if scored is not None else "sequences"))
        if getattr(a, "confusion", False):
            _confusion(result, getattr(a, "picture", None), out if len(outputs) > 1 else None)


def located(e, sentences, layer: str) -> Exception:
    """A scheme's refusal of a tag, at its line of the data file (a gold
    tag) or naming the model's label (a predicted one)."""
    side, i, j = e.where.replace("]", "").split("[")
    if side == "gold":
        s = sentences[int(i)]
        return DataError(e.describe(f"the gold tag in column {layer} is "), s.file,
                         s.lines[int(j)])
    model = {"pred_a": "the first model", "pred_b": "the second model"}.get(side, "the model")
    return FglError(e.describe(f"{model} predicts, in column {layer}, the tag ") + "; choose "
                    "the scheme of the model's labels")


def report_tagged(path, a: argparse.Namespace) -> None:
    """`fgl eval --tagged FILE`: score a file whose last two columns are the
    gold and the predicted labels (conlleval's input: any columns before
    them, blank lines between sentences, ``-DOCSTART-`` lines), with `fgl
    eval`'s --scheme, --ignore, --labels, --confusion and -o."""
    from fgl.data.inputs import display_name
    from fgl.evaluation.evaluate import TagError, evaluate
    from fgl.io.conll import read_conll
    from fgl.io.sources import expand

    given = getattr(a, "scheme", None) or ()
    layered = [f"{layer}={name}" for layer, name in given if layer is not None]
    if layered:
        raise FglError(f"--scheme {layered[0]}: a tagged file has one label column, the gold "
                       "and predicted tags its last two; give --scheme SCHEME")
    scheme = given[-1][1] if given else "auto"
    sentences = [s for f in expand(path) for s in read_conll(
        f, encoding=a.encoding, short_lines=a.short_lines)]
    if not sentences:
        raise DataError("no sentences to evaluate (the file is empty)", display_name(path), 1)
    first = sentences[0]
    if len(first.rows[0]) < 2:
        raise DataError("a tagged file's lines end with the gold and the predicted label "
                        f"(as conlleval reads them); found 1 field: {first.rows[0][0]!r}",
                        first.file, first.lines[0])
    gold, guess = [s.column(-2) for s in sentences], [s.column(-1) for s in sentences]
    try:
        result = evaluate(gold, guess, scheme, getattr(a, "ignore", None) or ("O",),
                          getattr(a, "labels", None))
    except TagError as e:
        side, i, j = e.where.replace("]", "").split("[")
        s = sentences[int(i)]
        what = "gold" if side == "gold" else "predicted"
        raise DataError(e.describe(f"the {what} tag is "), s.file, s.lines[int(j)]) from None
    result = _conlleval_tokens(result, path, a)
    print(result.format())
    if getattr(a, "confusion", False):
        _confusion(result, getattr(a, "picture", None), None)


def _conlleval_tokens(result, path: str, a: argparse.Namespace):
    """``result`` counting the data's ``-DOCSTART-`` lines as tokens
    tagged right, as conlleval does, with ``--docstart-tokens``
    (``fgl.evaluation.docstart_tokens``); else as it is."""
    if not getattr(a, "docstart_tokens", False):
        return result
    from fgl.evaluation.docstart_tokens import counting_docstarts, docstart_lines
    from fgl.io.sources import expand

    return counting_docstarts(result, docstart_lines(expand(path), a.encoding))


def _confusion(result, picture: str | None, layer: str | None) -> None:
    """Print the confusion matrix, or draw it into ``picture`` (with the
    layer's name before the suffix when the model has several layers)."""
    from pathlib import Path

    from fgl.evaluation.confusion import draw_confusion, format_confusion

    if picture is None:
        print(format_confusion(result.confusion))
        return
    dest = Path(picture)
    if layer is not None:
        dest = dest.with_name(f"{dest.stem}.{layer}{dest.suffix}")
    title = "confusion matrix" + (f" of {layer}" if layer else "")
    draw_confusion(result.confusion, dest, title=f"{title} (scheme {result.scheme})")
    print(f"wrote the confusion matrix to {dest}", file=sys.stderr)
