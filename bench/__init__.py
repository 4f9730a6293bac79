"""Benchmarks that print figures (never timed tests).

`python -m bench` runs the whole suite on servers of its own and prints one table
(bench/__main__.py); each measurement also runs alone as `python -m bench.<module>`:
`turns`, `visible_stream`, `gate_scan`, `checkpoint_growth`, `floor_probe`.
"""
