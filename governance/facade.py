"""What other apps may use of ``governance``: they import from here and nowhere else in it.

The log filter (``piweb.log_redaction``) masks what the secret scanner would flag in a stored line.
"""

from __future__ import annotations

from governance.domain.scanning import secret_spans

__all__ = ["secret_spans"]
