"""The pure core: discretization, entropy kernels, the objective, Greedy and AltGreedy.

Nothing here does I/O or knows about engines; engines only call these functions.
"""

from coreselect.core.discretize import DiscreteMatrix, discretize, discretize_labels
from coreselect.core.entropy import (
    DistanceOracle,
    entropy,
    joint_entropy,
    mutual_information,
    pairwise_distances,
    relevance_matrix,
)
from coreselect.core.greedy import GreedyResult, greedy
from coreselect.core.objective import ObjectiveParams, argmax_first, relevance_of, top_p_sum
from coreselect.core.problem import Problem, centralized
from coreselect.core.sparse_relevance import SparseRelevance

__all__ = [
    "DiscreteMatrix", "discretize", "discretize_labels", "DistanceOracle", "entropy",
    "joint_entropy", "mutual_information", "pairwise_distances", "relevance_matrix",
    "GreedyResult", "greedy", "ObjectiveParams", "argmax_first", "relevance_of", "top_p_sum",
    "Problem", "centralized", "SparseRelevance",
]
