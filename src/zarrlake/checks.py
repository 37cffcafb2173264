"""Built-in checks for :meth:`zarrlake.Repo.add_check`, and :func:`custom` for a check a
package registers in the ``zarrlake.checks`` entry point group::

    from zarrlake import checks
    repo.add_check("no-nan", checks.no_nan("temperature"), on=("commit", "merge"))
    repo.add_check("cf", checks.required_attributes("units", "standard_name"))

A custom check is a callable taking a :class:`Proposal` (the would-be commit: ``changes``,
``arrays()``, ``changed_chunks(path)``, ``attributes(path)``, ``metadata(path)``, ``params``)
and returning ``None`` or ``True`` (passed), ``False`` or a message (failed), or a
:class:`zarrlake.CheckFailure` naming the chunks concerned.
"""

from zarrlake.core.proposal import Proposal
from zarrlake.model.rules import (
    BranchRule,
    CheckResult,
    CheckSpec,
    custom,
    frozen_schema,
    max_chunks,
    no_nan,
    required_attributes,
    value_range,
)

__all__ = [
    "BranchRule",
    "CheckResult",
    "CheckSpec",
    "Proposal",
    "custom",
    "frozen_schema",
    "max_chunks",
    "no_nan",
    "required_attributes",
    "value_range",
]
