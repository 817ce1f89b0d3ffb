"""The generated blocks of README.md and docs/results.md, one module per
subject (scripts/readme_results.py maps each block's name to its function)."""
