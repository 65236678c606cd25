"""The factor graph of one instance, as Graphviz DOT text (for teaching).

Every clique template is unrolled exactly as the general-CRF compiler
(``fgl.compile.factor_graphs``) does it (Sutton & McCallum §1.4.1: a template
ties the weights of all its factors), so a chain spec shows its chain, a
skip-chain spec its long edges, a factorial spec its two layers.  Variables
are circles labelled ``layer[position]`` and the token; factors are small
squares labelled with their template.  Render with
``dot -Tpng graph.dot -o graph.png``.
"""
from __future__ import annotations

from pathlib import Path

from fgl.compile.factor_graphs import Unroller, group_instances
from fgl.compile.frontend import Layer
from fgl.errors import FglError
from fgl.io.conll import Sentence
from fgl.lang import ast

_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")


def _quote(text: str) -> str:
    """A DOT string literal; a newline in ``text`` becomes a line break."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n") + '"'


def factor_graph_dot(spec: ast.Spec, sentences: list[Sentence], instance: int = 0,
                     base_dir: Path | None = None) -> str:
    """DOT text of instance ``instance`` (a sentence, a document for
    ``within document`` specs, or a graph)."""
    if spec.segments is not None:
        raise FglError("a semi-Markov spec has no fixed factor graph: its segments are "
                       "variables too; draw the token-level spec instead")
    layers = [Layer(o, [], False) for o in spec.outputs] + \
        [Layer(h.name, list(h.labels), True) for h in spec.hidden]
    unroller = Unroller.for_spec(spec, base_dir or Path("."), layers)
    instances = group_instances(spec, sentences, with_gold=False)
    if not 0 <= instance < len(instances):
        raise FglError(f"instance {instance} does not exist; the data has {len(instances)}")
    inst = instances[instance]
    var, n = unroller.var_index(inst)
    first_column = spec.columns[0].name
    words = inst.cols.get(first_column, [""] * n)
    lines = [f"graph {_quote(spec.name or 'fgl')} {{", "  layout=neato; overlap=false;",
             "  node [fontname=Helvetica, fontsize=10];"]
    for k, layer in enumerate(layers):
        style = "dashed" if layer.hidden else "solid"
        for p in range(n):
            label = f"{layer.name}[{p}]\n{words[p]}"
            lines.append(f"  v{var[k, p]} [label={_quote(label)}, shape=circle, "
                         f"style={style}, pos=\"{p * 1.5},{-k * 1.5}!\"];")
    for f, (ti, variables, _) in enumerate(unroller.factors(inst)):
        tpl = spec.templates[ti].name
        colour = _COLOURS[ti % len(_COLOURS)]
        lines.append(f"  f{f} [label=\"\", xlabel={_quote(tpl)}, shape=square, width=0.12, "
                     f"style=filled, fillcolor={_quote(colour)}, color={_quote(colour)}];")
        lines.extend(f"  f{f} -- v{v} [color={_quote(colour)}];" for v in variables)
    lines.append("}")
    return "\n".join(lines) + "\n"
