"""A sweep rerun of some cells only (mlp_vs_torch.py, train_vs_torch.py):
GC_CELLS="width:batch,..." names the cells, GC_WHY says why (a sentence for
the footnote under the sweep's table in docs/results.md)."""
import os
import time


def cells_from_env():
    """The (width, batch) cells to rerun alone and the rerun's record (its
    date, the cells and why), or (None, {}) for the whole sweep."""
    spec = os.environ.get("GC_CELLS")
    if not spec:
        return None, {}
    cells = {tuple(map(int, c.split(":"))) for c in spec.split(",")}
    return cells, {"date": time.strftime("%Y-%m-%d", time.gmtime()), "cells": spec,
                   "why": os.environ.get("GC_WHY", "")}
