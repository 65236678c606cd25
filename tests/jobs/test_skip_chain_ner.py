"""examples/skip_chain_ner.py end to end on a few articles of each corpus
(skipped when ../shared/data is absent): it reads the Dutch file with its
malformed lines, scores IOB1 English, and prints the table."""
import subprocess
import sys

import pytest
from support.paths import REPO, require_shared


@pytest.mark.parametrize("corpus", ["conll2003", "ned"])
def test_example_prints_the_table(corpus):
    require_shared("data", "conll2003" if corpus == "conll2003" else "conll2002")
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "skip_chain_ner.py"), "--corpus", corpus,
         "--train-docs", "4", "--test-docs", "3", "--max-iter", "5", "--jobs", "1"],
        capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "train: 4 articles" in text and "testa: 3 articles" in text
    for model in ("linear", "all/trp", "all/trw", "nearest/trp", "nearest/trw"):
        assert f"\n{model} " in text
    assert "inconsistent mislabels" in text
    if corpus == "ned":
        assert "lines with fewer than 3 columns" in text  # padded, not refused


def test_example_skips_cleanly_without_data(tmp_path):
    script = (REPO / "examples" / "skip_chain_ner.py").read_text(encoding="utf-8")
    copy = tmp_path / "examples" / "skip_chain_ner.py"
    copy.parent.mkdir()
    # the copy looks for ../shared/data next to tmp_path, which is absent
    copy.write_text(script.replace('sys.path.insert(0, str(ROOT / "examples"))',
                                   f'sys.path.insert(0, {str(REPO / "examples")!r})'),
                    encoding="utf-8")
    out = subprocess.run([sys.executable, str(copy), "--corpus", "both"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("data not found") == 2
