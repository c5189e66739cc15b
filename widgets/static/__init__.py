"""Static files of the widgets: ``embed.js`` is @jupyter-widgets/html-manager 1.0.15 ``dist/embed.js``
(npm pack), the renderer of the offline HTML export. A package so that wheels ship it."""
