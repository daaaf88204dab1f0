"""The campaign engine and its targets (the reference pipeline, the symbolic simplifier): workers, state and
resume, coverage, status lines, and the fuzz side of the CLI verbs."""
