"""Per-trial CPU profiles (--profile): perf samples, the grouping table, the analysis."""
