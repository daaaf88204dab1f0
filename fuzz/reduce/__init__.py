"""Reduction of a finding while its signature holds: graphs, shapes, kernels, and crashes in a child process."""
