"""Model files and checkpoints: the versioned zip archive a trained model is
saved in, read under bounds, and the recognition of what was given instead
(a spec, another toolkit's model or template)."""
