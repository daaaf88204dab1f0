"""Seeded bugs and unsound rules: broken pipelines for the fuzzer's own tests."""
