"""The report's training section: what the run did (the model file's
training summary) and its curve, drawn per iteration — the objective, the
gradient norm, BP's sweeps and unconverged instances (loopy models), SGD's
learning rate, the perceptron's mistakes, induction rounds' development
score — with the line-search recoveries marked."""
from __future__ import annotations

from html import escape

from fgl.modelfile.training_curve import stored_curve, training_curve
from fgl.report.charts import line_chart

# (column, chart title, y axis, log scale)
CHARTS = (("objective", "objective (negative penalised log-likelihood)", "objective", False),
          ("gradient_norm", "gradient norm", "‖gradient‖", True),
          ("sweeps", "BP sweeps over all instances, in the iteration's evaluation", "sweeps",
           False),
          ("not_converged", "instances BP left unconverged", "instances", False),
          ("learning_rate", "learning rate (SGD)", "rate", True),
          ("mistakes", "mistakes per epoch (perceptron)", "mistakes", False))
SUMMARY = ("trainer", "iterations", "objective", "converged", "message", "evaluations",
           "recoveries", "seconds")


def curve_of(crf) -> dict | None:
    """The training curve: this process's training log, else the one the
    model file keeps (None: a file from before curves were kept)."""
    if crf.training_log is not None:
        return training_curve(crf.training_log)
    return stored_curve(crf.training_meta)


def _summary(meta: dict) -> str:
    rows = []
    for key in SUMMARY:
        if key in meta:
            v = meta[key]
            text = f"{v:,.6g}" if isinstance(v, float) else str(v)
            rows.append(f"<tr><th>{escape(key)}</th><td>{escape(text)}</td></tr>")
    return f'<table class="facts">{"".join(rows)}</table>' if rows else ""


def _charts(curve: dict) -> list[str]:
    cols = curve["iterations"]
    xs = cols.get("iteration") or list(range(1, 1 + max((len(v) for v in cols.values()),
                                                        default=0)))
    rec = curve.get("recoveries", {})
    marks = [(float(i), f"recovery at iteration {i}: {m}")
             for i, m in zip(rec.get("iteration", []), rec.get("message", []))]
    out = []
    for column, title, axis, log in CHARTS:
        values = cols.get(column)
        if not values or all(v is None for v in values) or \
                (column == "not_converged" and not any(values)):
            continue
        known = [v for v in values if v is not None]
        wide = min(known) > 0 and max(known) > 20 * min(known)   # (an objective falling far)
        out.append(line_chart(xs, [(column, values)], title=title, x_label="iteration",
                              y_label=axis, log=log or wide, marks=marks))
    rounds = curve.get("rounds") or {}
    if rounds.get("dev") and any(v is not None for v in rounds["dev"]):
        out.append(line_chart(rounds.get("round") or list(range(1, len(rounds["dev"]) + 1)),
                              [("dev", rounds["dev"])], title="feature induction: "
                              "development score per round", x_label="round",
                              y_label="dev score"))
    return [c for c in out if c]


def training_html(crf) -> str:
    """The training section's body."""
    meta = crf.training_log.summary(crf.settings.trainer) if crf.training_log is not None \
        else {k: v for k, v in crf.training_meta.items() if k != "curve"}
    parts = [_summary(meta)] if meta else [
        "<p>This model file keeps no record of its training.</p>"]
    curve = curve_of(crf)
    if curve is None:
        parts.append('<p class="note">No training curve: the model file was written before '
                     'fgl kept one (retrain to see it).</p>')
        return "\n".join(parts)
    charts = _charts(curve)
    rec = curve.get("recoveries", {}).get("iteration", [])
    if rec:
        parts.append(f'<p class="note">{len(rec)} line-search recoveries, marked by dashed red '
                     'lines (hover for the reason).</p>')
    parts.append('<div class="charts">' + "\n".join(charts) + "</div>" if charts else
                 '<p class="note">The run recorded no iterations.</p>')
    return "\n".join(parts)
