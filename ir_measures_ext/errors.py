"""The two error kinds a user can act on, :class:`InvalidInput` and :class:`SetupError`: the classes of
:mod:`nuggets_core.errors` (declared there once for the whole distribution, so that ``datasets_ext`` raises them
without importing ir_measures)."""
from nuggets_core.errors import InvalidInput, SetupError

__all__ = ["InvalidInput", "SetupError"]
