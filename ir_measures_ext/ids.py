"""How nugget evaluation is written as qrels and runs: the row ids and grades of :mod:`nuggets_core.ids` (the one
place that defines the mapping, described there), under the name the measures and their users know."""
from nuggets_core.ids import *  # noqa: F403
from nuggets_core.ids import __all__  # noqa: F401
