"""The ``fgl`` console command's entry point.

It imports the command line (and with it numpy, numba and the engines)
inside its own handler, so Ctrl-C during start-up ends as quietly as
Ctrl-C later on (``fgl.cli.main``): "fgl: interrupted", status 130.
"""
from __future__ import annotations

import sys


def main() -> int:
    try:
        from fgl.cli import main as run
    except KeyboardInterrupt:
        print("fgl: interrupted", file=sys.stderr)
        return 130
    return run()
