"""The old import path of :mod:`coreselect.selection.autok`, kept because users import it: the
same module object, so reading or patching a name here is reading or patching it there."""

import sys

from coreselect.selection import autok as _module

sys.modules[__name__] = _module
