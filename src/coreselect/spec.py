"""The old import path of :mod:`coreselect.selection.spec`, kept because users import it: the
same module object, so reading or patching a name here is reading or patching it there."""

import sys

from coreselect.selection import spec as _module

sys.modules[__name__] = _module
