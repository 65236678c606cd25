"""What the test files share: paths (``paths``), ``fgl`` runs (``cli``),
generated sentences (``sentences``), spec texts (``specs``), exhaustive
oracles (``brute_force``, ``trw_reference``, ``graph_cases``), checks
(``gradcheck``, ``spec_errors``), edited model files (``model_files``) and
the fuzzer's mutations and bounds (``fuzz_mutations``, ``fuzz_support``)."""
