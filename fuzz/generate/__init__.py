"""Generation: fuzz cases legal by construction and free of undefined behaviour. case.py holds a case and the weights of
every choice, kinds.py the kinds of case (one row each) and case_for, strategies.py the Hypothesis strategies; a module
per generator (tensor.py, kernels.py, int_kernels.py, ...) and the screens (safety.py, kernel_safety.py)."""
