"""fgl: conditional random fields written as text files.

A spec (``.fgl``) names the data columns, observation functions and clique
templates; ``fgl.compiler`` turns it into an exact chain program (Ye et al. 2009),
an exact semi-Markov program (Cuong et al. 2014) or factor graphs for loopy belief
propagation (Sutton & McCallum); ``fgl.learner`` trains any of them.  Start with
``fgl.CRF`` (``fgl.api``) or the ``fgl`` command (``fgl.cli``).
"""
from fgl.api import CRF

__all__ = ["CRF"]
__version__ = "0.1.0"
