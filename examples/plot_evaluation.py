"""
Evaluating a selection against rivals
=====================================

Cross-validate the default selector against a published rival, a chi-squared ranking and a
random selection at a few values of ``k``: each fold fits the selection on its training rows, trains the evaluator (BRkNN-b) on
the selected columns and scores the held-out rows. ``coreselect evaluate emotions --methods
gds,br-chi2,mdmr,random --k 5,10,20 --folds 3 --out results/`` does the same and writes these
plots into ``results/``.
"""

import coreselect
from coreselect.evaluation import method_factories, run_protocol
from coreselect.evaluation.report import plot_measures, summarize

data = coreselect.load("emotions")
methods = method_factories(["gds", "br-chi2", "mdmr", "random"])
results = run_protocol(data.X, data.Y, methods, ks=[5, 10, 20], n_folds=3, seed=0)
table = summarize(results)
print(table[table["measure"] == "example_f1"].to_string(index=False))

# %%
# One plot per measure
# --------------------
# A line per method over ``k``: the mean over the folds with a band of one fold standard
# deviation. Here, example F1 and macro F1.

paths = plot_measures(results[results["measure"].isin(["example_f1", "macro_f1"])], ".",
                     dataset="emotions")
