"""Benchmarks that print figures (not timed tests): run each as `python -m bench.<name>`."""
