"""The corpus: counterexamples written atomically as replayable Python files (no oracle is imported here)."""
