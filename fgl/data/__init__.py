"""What every layer reads: the sentence record, tag schemes and input files.

Below ``lang``, ``features``, ``compile`` and ``io`` (which all use it); it
imports nothing of fgl but ``errors`` and ``sizes``.
"""
