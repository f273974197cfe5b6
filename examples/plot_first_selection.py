"""
A first selection and its coverage
==================================

Select 10 features of the *emotions* data (72 audio features, 6 emotion labels), print why each
was picked, and draw the feature x label coverage: the colour is each pick's mutual information
with each label, and the bars beside it each pick's share of the relevance. The command line
draws the same figure with ``coreselect select emotions -k 10 --coverage coverage.png``.
"""

import coreselect
from coreselect.selection.explain import plot_coverage

data = coreselect.load("emotions")
result = coreselect.select(data, k=10)
print(result)
for pick in result.explain():
    print(f"{pick.feature:36s} {pick.g_share:5.0%} of g, most for {pick.labels[0]!r};"
          f" nearest pick: {pick.nearest}")

# %%
# The coverage plot
# -----------------
# ``result.label_relevance`` holds each pick's relevance to each label; ``p`` is how many picks
# count per label (every pick under the default calibration).

path = plot_coverage(result.label_relevance, result.spec["p"], "coverage.png",
                     label_names=result.shown_label_names(), feature_names=result.names)
