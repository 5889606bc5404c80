"""piweb-sync: push local Pi session files to a piweb server, pull sessions back into Pi's folders.

Standard library and httpx only, so it installs on a Pi user's machine without the server.
"""

__version__ = "0.1.0"
