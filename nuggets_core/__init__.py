"""What both extensions share, and nothing else: the row ids of nugget evaluation (:mod:`nuggets_core.ids`) and
the two error kinds a user can act on (:mod:`nuggets_core.errors`).

It imports only the standard library, so that ``datasets_ext`` (loaded with ``ir_datasets``) and ``ir_measures_ext``
(loaded with ``ir_measures``) can both use it without one library's import pulling in the other
(docs/architecture.md, "Three packages"). Users reach the same objects as ``ir_measures_ext.ids`` and
``ir_measures_ext.errors``.
"""
