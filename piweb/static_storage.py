"""Static files for production: hashed names, compressed copies, and module imports that follow them.

The browser code is ES modules importing each other by relative path (``./api.js``). Without rewriting,
a hashed ``main.3f2a.js`` would import the unhashed ``./page.js``, which is served with no cache-busting:
a deploy could mix old and new modules. Django rewrites those import paths to the hashed names when
``support_js_module_import_aggregation`` is on.
"""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class ModuleManifestStaticFilesStorage(CompressedManifestStaticFilesStorage):
    support_js_module_import_aggregation = True

    def url(self, name: str | None, force: bool = False) -> str:
        # Hashed names also with DEBUG on (`make run` collects first): the rewritten imports name hashed
        # files, so the page must too, or the browser would load each module twice.
        return super().url(name, force=True)
