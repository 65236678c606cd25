"""``python -m fgl.cli``: the ``fgl`` command."""
import sys

from fgl.cli import main

sys.exit(main())
