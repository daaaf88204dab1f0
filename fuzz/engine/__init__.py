"""The campaign engine: its settings (config), the targets by name (targets: the reference pipeline, the symbolic
simplifier, tinygrad), the campaign's phases and state (campaign), where its cases run (workers, dask_runner), coverage,
and the fuzz side of the CLI verbs. A target only wires its generator, checker, reducer and corpus entries together
(fuzz.generate, fuzz.check, fuzz.reduce, fuzz.corpus): none of that lives here."""
