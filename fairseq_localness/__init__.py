"""fairseq-localness: locality methods for self-attention as a fairseq ``--user-dir`` plugin.

Importing the package (which ``--user-dir`` does) applies the compatibility
fixes this environment needs and registers every locality method, the
``transformer_localness`` model and its architectures.
"""

from . import compat

compat.apply()

from . import methods  # noqa: E402,F401  (registers locality methods; must precede architectures' flags)
from . import architectures  # noqa: E402,F401

__version__ = "0.1.0"
