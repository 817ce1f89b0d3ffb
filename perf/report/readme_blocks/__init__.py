"""The generated blocks of README.md and docs/results.md, one module per
subject (perf/report/readme_results.py maps each block's name to its function)."""
