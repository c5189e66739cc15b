"""Static export of a widget to an HTML page that renders offline.

The page loads ``@jupyter-widgets/html-manager`` 1.0.15's ``dist/embed.js``
(shipped in ``widgets/static/``) without require.js: either from a copy written
next to the page, or inlined as a ``data:`` URL (one self-contained file; an
inline ``<script>`` body does not work because webpack needs a script ``src``).
"""

from __future__ import annotations

import base64
import os
import shutil

from pathlib import Path
from typing import Any

from ipywidgets.embed import dependency_state, embed_minimal_html

__all__ = ["EMBED_JS", "EMBED_NAME", "export_html"]

EMBED_JS = Path(__file__).resolve().parent / "static" / "embed.js"
EMBED_NAME = "spindle-widgets-embed.js"


def _embed_url(target: Path, self_contained: bool) -> str:
    if self_contained:
        return "data:text/javascript;base64," + base64.b64encode(EMBED_JS.read_bytes()).decode()
    copy = target.parent / EMBED_NAME
    if not copy.exists() or copy.stat().st_size != EMBED_JS.stat().st_size:
        shutil.copyfile(EMBED_JS, copy)
    return EMBED_NAME


def export_html(widget: Any, path: str | os.PathLike[str], *, title: str, self_contained: bool = False) -> Path:
    """Write ``widget`` (and the widgets it contains) to ``path`` as a page that needs no network.

    Without ``self_contained`` the widget renderer is copied next to the page as
    ``spindle-widgets-embed.js`` (1.9 MB, shared by every page of the folder).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    embed_minimal_html(str(target), views=[widget], title=title, requirejs=False, state=dependency_state(widget),
                       embed_url=_embed_url(target, self_contained), cors=False)
    return target

