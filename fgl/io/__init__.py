"""Data formats: CoNLL column files, Python rows, sklearn-crfsuite feature
dicts and JSON-lines graphs read into sentences and written back; input
files and globs (``sources``); every file fgl writes (``safe_files``).

Below the compiler: nothing here imports ``fgl.compile`` or ``fgl.learn``
(docs/design.md, "Packages by concern")."""
