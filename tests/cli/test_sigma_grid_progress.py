"""``fgl train --sigma-grid`` says what it does while it runs (issue 49):
a line as each grid point starts and as it ends (its sigma, dev F1,
iterations and seconds), and each fit's iteration lines between them;
``-q`` keeps it quiet."""
from __future__ import annotations

import re

from support.cli import data_files, run
from support.paths import HMM


def test_each_grid_point_says_when_it_starts_and_how_it_ended(capsys, tmp_path):
    train, dev = data_files(tmp_path)
    code, out, err = run(capsys, "train", HMM, "--train", train, "--dev", dev,
                         "--sigma-grid", "0.1,10", "--max-iter", "4", "-o", tmp_path / "m.fglm")
    assert code == 0, err
    lines = err.splitlines()
    table = {float(r.split()[1]): r.split()[5] for r in out.splitlines()[1:] if r.strip()}
    for k, sigma in enumerate((0.1, 10.0)):
        name = f"sigma grid {k + 1}/2: {HMM.name}, sigma {sigma:g}"
        start = lines.index(f"{name}: training")
        end = next(i for i, line in enumerate(lines) if line.startswith(f"{name}: dev F1"))
        m = re.fullmatch(rf"{re.escape(name)}: dev F1 ([\d.]+), (\d+) iterations, [\d.]+s \(.*\)",
                         lines[end])
        assert m and m[1] == table[sigma] and 1 <= int(m[2]) <= 4
        iterations = [line for line in lines[start:end] if line.startswith("iter ")]
        assert len(iterations) == int(m[2])      # the fit's own progress, in between
    code, out, err = run(capsys, "train", HMM, "--train", train, "--dev", dev, "-q",
                         "--sigma-grid", "0.1,10", "--max-iter", "4", "-o", tmp_path / "q.fglm")
    assert code == 0 and "sigma grid" not in err
    assert not any(line.startswith("iter ") for line in err.splitlines())   # no progress lines
