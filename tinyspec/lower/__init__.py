"""The reference lowering: a TENSOR graph to C or OpenCL C, as graph rewrites, one module per pass.

The passes, in the order `pipeline.PASSES` runs them (each output is verified against the spec of its stage):

    callify       TENSOR -> TENSOR        value calls inlined (or precompiled: bodies storing into output PARAMs); GETTUPLE of a TUPLE folded
    rangeify      TENSOR -> KERNEL        realize, allocate, index: a kernel graph of CALLs of kernel SINKs (a precompiled call's body
                                          becomes a nested kernel graph)
    simplify      KERNEL -> KERNEL        integer rewrites that `tinyspec prove` proves sound
    optimize      KERNEL -> KERNEL        split, unroll and mark GLOBAL the ranges of each kernel, then simplify
    lower_reduce  KERNEL -> KERNEL        every REDUCE becomes an accumulator loop over a REG buffer
    linearize     KERNEL -> PROGRAM       each kernel becomes PROGRAM(sink, LINEAR(nodes in execution order))
    render        PROGRAM -> PROGRAM      the LINEAR rendered to C or OpenCL C source

A kernel-level graph (a KERNEL_GRAPH a user or the kernel generator wrote) starts after rangeify (`start.py`).

The shared parts: `base.py` (what a pass is, its tables, LowerOptions, the Trace that counts and observes every rule
application), `kernel_map.py` (walking and rebuilding the kernels of a graph), `indexing.py` (view-to-index rules
rangeify uses), `schedule.py` (which buffers are realized and the order of kernels), `ordering.py` (the order a value
rewrite must keep), and `tinyspec.loop_order` (the statement order linearize and the evaluator share).

Each pass rewrites with the tables it holds (Pass.tables); a different pipeline is a different list of passes given to
`pipeline.lower(passes=...)`.
"""
