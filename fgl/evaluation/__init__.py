"""Scoring tagged output against gold: accuracy and chunk P/R/F1 under a tag
scheme, the confusion matrix, conlleval's ``-DOCSTART-`` counting, and the
significance tests comparing two systems."""
