"""
Choosing k automatically
========================

``k="auto"`` orders the features greedily up to a cap, scores the prefixes by internal
cross-validation on the training rows (BRkNN-b, example F1) and keeps the smallest ``k`` within
one standard error of the best. The curve shows why: every ``k`` to the right of the chosen one
is no better by more than the noise of the folds.
"""

import coreselect
from coreselect.selection.autok import plot_k_curve

data = coreselect.load("emotions")
selector = coreselect.GDSSelector(k="auto").fit(data.X, data.Y)
print("chosen k:", selector.k_)
print("prefixes:", selector.cv_results_["n_features"].tolist())
print("mean F1: ", selector.cv_results_["mean_test_score"].round(3).tolist())

# %%
# The curve of k
# --------------
# The same figure as ``coreselect select emotions -k auto --k-curve k.png``.

plot_k_curve(selector.auto_k_, "k_curve.png", title=f"emotions: chosen k = {selector.k_}")
