"""The reference lowering: a TENSOR graph to C or OpenCL C, as graph rewrites, one module per pass.

The passes, in the order `pipeline.PASSES` runs them (each output is verified against the spec of its stage; this list
is `pipeline.describe_passes()`, each line the head of the pass module's docstring, and a test keeps them equal):

    multi         TENSOR -> TENSOR    tensors over several devices become one graph per device, joined by COPYs.
    callify       TENSOR -> TENSOR    value calls inlined (or precompiled), GETTUPLE of a TUPLE folded.
    rangeify      TENSOR -> KERNEL    realize, allocate, index: a kernel graph whose CALL bodies are kernel SINKs.
    simplify      KERNEL -> KERNEL    integer simplification, by rules `tinyspec prove` proves sound with z3.
    scatter       KERNEL -> KERNEL    a one-hot sum whose hot index is data becomes a scatter-add through ATOMICs.
    optimize      KERNEL -> KERNEL    opts applied to the ranges of each kernel.
    lower_reduce  KERNEL -> KERNEL    every REDUCE(value, rr...) becomes an accumulator in a REG buffer.
    images        KERNEL -> KERNEL    kernel args kept as RGBA images, when the storage and every access of it fit one.
    linearize     KERNEL -> PROGRAM   each kernel body becomes PROGRAM(kernel_sink, LINEAR(nodes in execution order)).
    render        PROGRAM -> PROGRAM  PROGRAM(sink, linear) gets its SOURCE, the LINEAR rendered to C or OpenCL C.

A kernel-level graph (a KERNEL_GRAPH a user or the kernel generator wrote) starts after rangeify (`start.py`).

The shared parts: `base.py` (what a pass is, its tables, LowerOptions, the Trace that counts and observes every rule
application, nested_rewrite for a rule's rewrite inside its own application), `kernel_map.py` (walking and rebuilding
the kernels of a graph), `indexing.py` (view-to-index rules rangeify uses), `schedule.py` (which buffers are realized
and the order of kernels), `ordering.py` (the order a value rewrite must keep), `sums.py` (integer sums as linear forms,
which the simplifier's rules in `divmod.py`, `compare.py` and `select.py` read), and `tinyspec.loop_order` (the
statement order linearize and the evaluator share).

Each pass rewrites with the tables it holds (Pass.tables, reached as attributes: `tables.pm_simplify`), its rules'
nested rewrites too; a different pipeline is a different list of passes given to `pipeline.lower(passes=...)`.
"""
