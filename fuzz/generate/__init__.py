"""Generation: Hypothesis strategies of tensor graphs and read-modify-write kernels, and the screens that keep
cases free of undefined behaviour."""
