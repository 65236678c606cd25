"""The ``fgl`` command: train, tag, eval, check, explain and draw model specs.

Every user mistake ends in a one-line ``file:line[:col]: message`` on stderr
and a non-zero exit status, never a traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
import warnings
from pathlib import Path

from fgl import __version__
from fgl.engines.program import InferenceStats
from fgl.errors import DataError, FglError, SpecError, TrainingError, shorten
from fgl.io.conll import SHORT_LINES, ShortLineWarning

EPILOG = """\
examples:
  fgl check stdlib/hmm_like.fgl
  fgl explain stdlib/high_order.fgl --train train.txt
  fgl train stdlib/hmm_like.fgl --train train.txt --dev dev.txt -o chunker.fglm
  fgl tag chunker.fglm test.txt > tagged.txt
  fgl eval chunker.fglm test.txt
  fgl compare chunker.fglm other.fglm test.txt
  fgl inspect chunker.fglm --top 5

A spec names the data columns (`columns word, pos, chunk`), the label column
(`output chunk`), observation functions (`obs w = word[t-2..t+2]`) and clique
templates (`template trans: y[t-1..t]`); see stdlib/ and README.md.
"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fgl", description="fgl: conditional random fields written as text files.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"fgl {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def short_lines_arg(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--short-lines", choices=SHORT_LINES, default="error",
                        help="a token line with fewer fields than the others: refuse it "
                             "(error, the default), pad its missing middle columns with '_' "
                             "keeping the first field and the label (pad), or drop it (skip); "
                             "pad and skip print how many lines they mended")

    def memory_arg(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--max-memory", metavar="SIZE",
                        help="memory a model may take (e.g. 4G, 500M; default: FGL_MAX_MEMORY, "
                             "else half the machine's); a larger one is refused at the template "
                             "responsible, before anything is allocated")

    def data_args(sp: argparse.ArgumentParser) -> None:
        memory_arg(sp)
        sp.add_argument("--encoding", default="utf-8",
                        help="text encoding of data files (default utf-8; e.g. latin-1)")
        short_lines_arg(sp)
        sp.add_argument("--jobs", type=int, default=None,
                        help="threads for per-sequence work (0 = every core; default: the "
                             "spec's `train { jobs = N }`, else every core)")

    t = sub.add_parser("train", help="train a spec on a data file",
                       description="Compile SPEC against the training data and fit its weights "
                                   "by the spec's trainer (L-BFGS by default; OWL-QN when l1 > "
                                   "0, the averaged perceptron, the ECRN, or feature induction "
                                   "for a template with `induce`); write the model file.")
    t.add_argument("spec", help="the model spec (.fgl)")
    t.add_argument("--train", required=True, metavar="FILE",
                   help="training data (CoNLL columns; JSON lines for `input graph` specs)")
    t.add_argument("--dev", metavar="FILE",
                   help="development data, evaluated after training (and scored after every "
                        "round of feature induction)")
    t.add_argument("-o", "--output", required=True, metavar="MODEL", help="model file to write")
    t.add_argument("--sigma", type=float, help="override the spec's Gaussian prior sigma")
    t.add_argument("--max-iter", type=int, help="override the spec's L-BFGS iteration limit")
    t.add_argument("--tol", type=float, help="override the spec's stopping tolerance")
    t.add_argument("--l1", type=float, help="override the spec's L1 penalty (above 0: OWL-QN, "
                                             "exact zeros; with sigma, the elastic net)")
    t.add_argument("--time-limit", type=float, metavar="SECONDS",
                   help="stop training after this long and write the model reached; Ctrl-C "
                        "or SIGTERM likewise stop after the current iteration (a second one "
                        "aborts)")
    t.add_argument("--checkpoint", metavar="FILE",
                   help="save the training run here every --checkpoint-every iterations and "
                        "when training stops (a time limit, Ctrl-C, SIGTERM); the file is also "
                        "a model file (default with --resume: the resumed file)")
    t.add_argument("--checkpoint-every", type=int, default=10, metavar="N",
                   help="iterations between checkpoints (default 10)")
    t.add_argument("--checkpoint-seconds", type=float, metavar="SECONDS",
                   help="also save a checkpoint when this long has passed since the last")
    t.add_argument("--resume", metavar="FILE",
                   help="continue the run saved in this checkpoint, with the same spec and "
                        "training data; it goes on as the uninterrupted run would have, and "
                        "--max-iter counts the saved iterations too")
    t.add_argument("-q", "--quiet", action="store_true", help="no per-iteration progress")
    data_args(t)

    g = sub.add_parser("tag", help="label a data file with a trained model",
                       description="Write FILE back with one predicted label column appended "
                                   "(input columns only, or with gold labels: both work).")
    g.add_argument("model", help="a model file written by `fgl train`")
    g.add_argument("file", help="data to label (CoNLL columns)")
    g.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    data_args(g)

    e = sub.add_parser("eval", help="evaluate a model on labelled data",
                       description="Token accuracy, conlleval-style per-chunk-type P/R/F1 "
                                   "(BIO/IOB tags), or segment P/R/F1 (--scheme runs), and "
                                   "per-label P/R/F1; --labels adds a micro-average of "
                                   "token-level P/R/F1 over chosen labels.")
    e.add_argument("model")
    e.add_argument("file", help="labelled data (CoNLL columns, gold label last)")
    e.add_argument("--scheme", choices=("auto", "iob", "plain", "runs"), default="auto",
                   help="how tags make chunks: iob (B-/I-/E-/S- prefixes), plain (each "
                        "token is a chunk), runs (each maximal run of one label is a "
                        "segment); auto (default): the model's own segments for a segment "
                        "model `from change` (runs), else iob when any tag has a prefix, "
                        "else plain")
    e.add_argument("--ignore", action="append", metavar="LABEL",
                   help="a label (chunk type) that is not a chunk or segment; repeatable; "
                        "replaces the default O (--ignore '' ignores nothing)")
    e.add_argument("--labels", action="extend", type=_label_list, metavar="L1,L2,...",
                   help="also print the micro-averaged token-level P/R/F1 over these labels "
                        "(e.g. the punctuation measure); repeatable")
    e.add_argument("--label", action="append", dest="labels", metavar="LABEL",
                   help="one label for --labels, taken as is (for labels with a comma: "
                        "--label , --label . --label '?'); repeatable")
    data_args(e)

    m = sub.add_parser("compare", help="compare two models on labelled data",
                       description="Tag FILE with both models and print their F1, the mean F1 "
                                   "over --partitions contiguous partitions with 95%% "
                                   "t-intervals, and an approximate randomisation test of the "
                                   "F1 difference (each shuffle swaps the two outputs of a "
                                   "sequence with probability 1/2; p = (nc + 1) / (nt + 1)). "
                                   "F1 is the chunk F1 of `fgl eval` (BIO tags), or the F1 of "
                                   "tokens not labelled O for plain labels.")
    m.add_argument("model_a")
    m.add_argument("model_b")
    m.add_argument("file", help="labelled data (the label columns of both models)")
    m.add_argument("--trials", type=int, default=10000,
                   help="shuffles of the randomisation test (default 10000)")
    m.add_argument("--partitions", type=int, default=10,
                   help="contiguous test partitions for the t-intervals (default 10)")
    m.add_argument("--seed", type=int, default=0, help="random seed of the shuffles")
    data_args(m)

    i = sub.add_parser("inspect", help="show a trained model's weights and training log",
                       description="Per template: feature counts and the strongest weights "
                                   "(attribute -> labels), positive and negative, or the label "
                                   "matrix of a two-label template without observations (a "
                                   "transition table); the training log the model file keeps.")
    i.add_argument("model", help="a model file written by `fgl train`")
    i.add_argument("--top", type=int, default=10, help="weights shown per template (default 10)")
    i.add_argument("--template", metavar="NAME", help="only this template")
    i.add_argument("--json", action="store_true", help="print JSON instead of text")

    c = sub.add_parser("check", help="validate a spec", description="Parse and check a spec; "
                       "report every error as file:line:col.")
    c.add_argument("spec")

    d = sub.add_parser("draw", help="write one instance's factor graph as Graphviz DOT",
                       description="Unroll every template over one instance of FILE and write "
                                   "its factor graph (variables, factors coloured by template) "
                                   "as Graphviz DOT; render with `dot -Tpng g.dot -o g.png`.")
    d.add_argument("spec")
    d.add_argument("file", help="data (labels optional)")
    d.add_argument("--instance", type=int, default=0, help="which instance (default 0)")
    memory_arg(d)
    d.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    d.add_argument("--encoding", default="utf-8")
    short_lines_arg(d)

    x = sub.add_parser("explain", help="show the compiled program",
                       description="Show the engine chosen for SPEC and why, the labels, "
                                   "patterns, forward/backward states, features and the cost "
                                   "of one pass.  Sizes depend on the training data.")
    x.add_argument("spec")
    x.add_argument("--train", metavar="FILE", help="training data to compile against")
    memory_arg(x)
    x.add_argument("--encoding", default="utf-8")
    short_lines_arg(x)
    return p


def _cmd_train(a: argparse.Namespace) -> None:
    from fgl.api import CRF
    from fgl.io.model_files import check_writable

    check_writable(a.output)  # before training, not after

    crf = CRF(Path(a.spec), sigma=a.sigma, max_iter=a.max_iter, tol=a.tol, jobs=a.jobs, l1=a.l1,
              verbose=not a.quiet, time_limit=a.time_limit,
              checkpoint=a.checkpoint or a.resume, checkpoint_every=a.checkpoint_every,
              checkpoint_seconds=a.checkpoint_seconds)
    t0 = time.perf_counter()
    with _stop_on_signals(crf):
        crf.fit_file(a.train, encoding=a.encoding, short_lines=a.short_lines, resume=a.resume,
                     dev=a.dev)
    log = crf.training_log
    if log.iterations and "mistakes" in log.iterations[-1]:   # the perceptron
        print(f"trained in {time.perf_counter() - t0:.1f}s: {len(log.iterations)} epochs, "
              f"{log.iterations[-1]['mistakes']} mistakes in the last ({log.message})",
              file=sys.stderr)
    elif log.iterations and "bigrams" in log.iterations[-1]:   # the ECRN
        row = log.iterations[-1]
        print(f"trained in {time.perf_counter() - t0:.1f}s: ECRN (Zhu et al., eq. 5) of "
              f"{row['features']} features counted over {row['tokens']} tokens and "
              f"{row['bigrams']} bigrams in {log.seconds:.2f}s; -log eq. 5 on the training "
              f"data {log.objective:.6g}", file=sys.stderr)
    else:
        print(f"trained in {time.perf_counter() - t0:.1f}s: {len(log.iterations)} iterations, "
              f"{log.evaluations} evaluations, objective {log.objective:.6g} ({log.message})",
              file=sys.stderr)
    _warn_convergence(crf.spec, log.inference, "the last training evaluation")
    if crf.checkpoint:
        print(f"checkpoint {crf.checkpoint} (iteration {len(log.iterations)}; "
              f"--resume {crf.checkpoint} continues it)", file=sys.stderr)
    crf.save(a.output)
    print(f"wrote {a.output}", file=sys.stderr)
    if a.dev:
        _report(crf, a.dev, a)


@contextlib.contextmanager
def _stop_on_signals(crf):
    """While training: the first SIGINT or SIGTERM asks the run to stop
    after its current iteration (the model reached is then written); a
    second one interrupts as usual."""
    def handler(signum, frame) -> None:
        name = signal.Signals(signum).name
        print(f"fgl: {name}: stopping after this iteration (again to abort)", file=sys.stderr)
        crf.request_stop(f"stopped by {name}")
        for s in caught:
            signal.signal(s, old[s])

    caught = [signal.SIGINT, signal.SIGTERM]
    old = {s: signal.getsignal(s) for s in caught}
    for s in caught:
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s in caught:
            signal.signal(s, old[s])


def _warn_convergence(spec, stats: InferenceStats | None, when: str) -> None:
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


def _label_list(text: str) -> list[str]:
    """The labels of ``--labels L1,L2,...``."""
    labels = text.split(",")
    if "" in labels:
        raise argparse.ArgumentTypeError(
            f"empty label in {text!r}; give a label with a comma in it with --label, "
            "as in --label ,")
    return labels


def _report(crf, path: str, a: argparse.Namespace) -> None:
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
    _warn_convergence(crf.spec, pred.stats, "decoding")
    outputs, columns = pred.outputs, [c.name for c in crf.spec.columns]
    if sentences and len(sentences[0].rows[0]) != len(columns):
        raise DataError(f"evaluation needs the label column(s) {', '.join(outputs)}",
                        sentences[0].file, sentences[0].lines[0])
    for out in outputs:
        if len(outputs) > 1:
            print(f"== {out}")
        gold = [s.column(columns.index(out)) for s in sentences]
        print(evaluate(gold, pred.layer(out), scheme, ignore, labels).format())


def _cmd_tag(a: argparse.Namespace) -> None:
    import json

    from fgl.api import CRF
    from fgl.io.conll import has_docstart, write_conll

    crf = CRF.load(a.model, jobs=a.jobs)
    sentences, tagged = crf.tag_file(a.file, encoding=a.encoding, short_lines=a.short_lines)
    _warn_convergence(crf.spec, tagged.stats, "decoding")
    pred = tagged.tokens()
    out = open(a.output, "w", encoding="utf-8") if a.output else sys.stdout
    try:
        if crf.spec.input_format == "graph":  # one JSON line per graph: node id -> labels
            for graph, labels in zip(sentences, pred):
                print(json.dumps({"labels": dict(zip(graph.node_ids, labels))},
                                 ensure_ascii=False), file=out)
        else:
            extra = [[list(y) if isinstance(y, tuple) else [y] for y in labels] for labels in pred]
            write_conll(out, sentences, extra, docstart=has_docstart(a.file, a.encoding))
    finally:
        if a.output:
            out.close()


def _cmd_eval(a: argparse.Namespace) -> None:
    from fgl.api import CRF

    _report(CRF.load(a.model, jobs=a.jobs), a.file, a)


def _cmd_compare(a: argparse.Namespace) -> None:
    from fgl.api import CRF
    from fgl.io.significance import compare

    if a.trials < 1 or a.partitions < 1:
        raise FglError("--trials and --partitions must be at least 1")
    models = [CRF.load(path, jobs=a.jobs) for path in (a.model_a, a.model_b)]
    tagged = [crf.tag_file(a.file, encoding=a.encoding, short_lines=a.short_lines)
              for crf in models]
    sentences = tagged[0][0]
    if not sentences:
        raise DataError("no sentences to compare on (the file is empty)", a.file, 1)
    outputs = [p.outputs for _, p in tagged]
    if outputs[0] != outputs[1]:
        raise FglError(f"the models label different columns ({', '.join(outputs[0])} and "
                       f"{', '.join(outputs[1])}); compare models of the same task")
    columns = [c.name for c in models[0].spec.columns]
    if len(sentences[0].rows[0]) != len(columns):
        raise DataError(f"comparing needs the label column(s) {', '.join(outputs[0])}",
                        sentences[0].file, sentences[0].lines[0])
    for out in outputs[0]:
        if len(outputs[0]) > 1:
            print(f"== {out}")
        gold = [s.column(columns.index(out)) for s in sentences]
        result = compare(gold, tagged[0][1].layer(out), tagged[1][1].layer(out),
                         trials=a.trials, partitions=a.partitions, seed=a.seed)
        print(result.format(a.model_a, a.model_b))


def _cmd_inspect(a: argparse.Namespace) -> None:
    import json

    from fgl.api import CRF
    from fgl.io.inspect import format_inspection

    if a.top < 0:
        raise FglError("--top must be 0 or more")
    crf = CRF.load(a.model)
    names = [t.name for t in crf.model.templates]
    if a.template is not None and a.template not in names:
        raise FglError(f"{a.model}: no template '{a.template}'; the model has "
                       f"{', '.join(names)}")
    info = crf.inspect(a.top, a.template)
    print(json.dumps(info, indent=1, ensure_ascii=False) if a.json else format_inspection(info))


def _cmd_check(a: argparse.Namespace) -> int:
    from fgl.lang.checks import check_spec
    from fgl.lang.parser import parse_spec

    path = Path(a.spec)
    try:
        text = path.read_text(encoding="utf-8-sig")   # as read_spec reads it
    except (OSError, UnicodeDecodeError) as e:
        raise FglError(f"{path}: cannot read spec: {e}") from None
    notes: list[SpecError] = []
    try:
        errors = check_spec(parse_spec(text, str(path)), path.parent, notes)
    except SpecError as e:  # a syntax error: reported like every other spec error
        errors = [e]
    for err in errors + notes:    # errors first, then warnings, each in source order
        print(err, file=sys.stderr)
    if errors:
        return 1
    print(f"{path}: ok")
    return 0


def _cmd_explain(a: argparse.Namespace) -> None:
    from fgl.api import CRF
    from fgl.lang.checks import labels_text
    from fgl.lang.parser import read_spec

    spec = read_spec(a.spec)
    print(f"spec {a.spec}: {len(spec.observations)} observation functions, "
          f"{len(spec.templates)} templates")
    crf = CRF(spec)
    if not a.train:
        for tpl in spec.templates:
            kind = tpl.patterns.kind.replace("_", " ") if tpl.patterns else "default"
            where = f", {len(tpl.where)} conditions" if tpl.where else ""
            print(f"  {tpl.name}: {labels_text(tpl.labels)} patterns {kind}, "
                  f"{len(tpl.observations)} observations{where}")
        print(crf.explain())
        print("labels, patterns and state counts depend on the data: add --train FILE")
        return
    print(crf.explain(a.train, encoding=a.encoding, short_lines=a.short_lines))


def _cmd_draw(a: argparse.Namespace) -> None:
    from fgl.api import CRF
    from fgl.io.draw import factor_graph_dot

    crf = CRF(Path(a.spec))
    dot = factor_graph_dot(crf.spec, crf.read(a.file, a.encoding, a.short_lines), a.instance,
                           Path(a.spec).parent)
    if a.output:
        Path(a.output).write_text(dot, encoding="utf-8")
    else:
        sys.stdout.write(dot)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Data warnings (--short-lines) as one plain line on stderr."""
    if issubclass(category, ShortLineWarning):
        if str(message) not in _shown:  # a file streamed twice warns once
            _shown.add(str(message))
            print(f"fgl: warning: {message}", file=sys.stderr)
    else:
        _default_show(message, category, filename, lineno, file, line)


_default_show = warnings.showwarning
_shown: set[str] = set()


@contextlib.contextmanager
def _memory_budget(size: str | None):
    """``--max-memory`` in force while a command runs (then the one before)."""
    if size is None:
        yield
        return
    from fgl.compile.budget import parse_size, set_memory_budget

    previous = set_memory_budget(parse_size(size, "--max-memory"))
    try:
        yield
    finally:
        set_memory_budget(previous)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    command = {"train": _cmd_train, "tag": _cmd_tag, "eval": _cmd_eval,
               "compare": _cmd_compare, "inspect": _cmd_inspect, "check": _cmd_check,
               "explain": _cmd_explain, "draw": _cmd_draw}[args.command]
    try:
        with warnings.catch_warnings(), _memory_budget(getattr(args, "max_memory", None)):
            warnings.simplefilter("always", ShortLineWarning)
            warnings.showwarning = _show_warning
            return command(args) or 0
    except FglError as e:   # 2: a user error; 1: the input was fine, the run was not
        print(f"fgl: {shorten(str(e), 2000)}", file=sys.stderr)
        return 1 if isinstance(e, TrainingError) else 2
    except KeyboardInterrupt:
        print("fgl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `fgl eval ... | head`: the reader left; say nothing
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
