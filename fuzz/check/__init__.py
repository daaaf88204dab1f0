"""The oracles a case is checked by (spec, parity, metamorphic, gradients), blame by rewrite bisection, and local
evaluation."""
