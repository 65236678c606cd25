"""fgl: conditional random fields written as text files.

The package reads as the pipeline:

* ``fgl.lang`` — the grammar, parser, AST, checks and the settings table;
* ``fgl.features`` — observation functions and their built-ins;
* ``fgl.compile`` — the shared front end, then chain and segment models
  (``sequence``) and general CRFs as factor graphs (``factor_graphs``);
* ``fgl.engines`` — the exact chain (Ye et al. 2009), semi-Markov (Cuong et
  al. 2014) and loopy belief propagation (Sutton & McCallum) programs;
* ``fgl.learn`` — the objective, L-BFGS and OWL-QN, checkpoints, the
  perceptron, empirical co-occurrence rate networks and feature induction;
* ``fgl.io`` — data formats: CoNLL columns, rows, feature dicts, graphs,
  and every file fgl writes (``safe_files``);
* ``fgl.modelfile`` — model files and checkpoints; ``fgl.evaluation`` —
  scores, confusion, significance; ``fgl.report`` — pictures, inspection,
  dumps and the HTML report; ``fgl.convert`` — CRF++/LINQS conversion;
  ``fgl.datasets`` — generated data for examples and tests;
* ``fgl.registry`` picks the engine a spec needs; ``fgl.model`` is the one
  model interface; ``fgl.api`` (``fgl.CRF``) and ``fgl.cli`` are the faces.
"""
__all__ = ["CRF", "CRFEstimator"]
__version__ = "0.1.0"


def __getattr__(name: str):
    """``fgl.CRF``, imported on first use: ``import fgl`` (and the ``fgl``
    command's entry point, ``fgl.entry``) stays light."""
    if name == "CRF":
        from fgl.api import CRF
        return CRF
    if name == "CRFEstimator":
        from fgl.estimator import CRFEstimator
        return CRFEstimator
    raise AttributeError(f"module 'fgl' has no attribute {name!r}")
