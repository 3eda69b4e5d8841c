"""Engine-agnostic run machinery: batches, stage execution, error sink, stats and commit."""
