"""The pure core. Importing any part of it registers the built-in checks and flags first (their
modules import the registry, never the other way), so the registry's names are complete."""

from evaluator.core import checks as _checks  # noqa: F401 - registers the six checks
from evaluator.core import flags as _flags  # noqa: F401 - registers the three flags
