"""Generated data sets for the examples, the benchmarks and the tests."""
