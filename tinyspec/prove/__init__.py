"""z3 proofs of rewrite rules: `tinyspec prove`.

  templates  instances of a rule's UPat with symbolic slots of chosen bounds
  evalsem    z3 terms with the reference evaluator's meaning (the op registry's, values at C's undefined points
             kept), with a memory model for loads and stores
  exact      the exact-integer encodings (Ints with explicit wraps, wide bit vectors) of slot-only expressions
  prover     the Prover: each rule's instances rewritten, both sides compared by z3, counterexamples confirmed
  cli        the verb's arguments and run
"""
