"""Sessions as readers see them: messages rendered to safe HTML, whole sessions as HTML or Markdown documents,
and the secrets any text holds (``documents.secrets``).

Pure Python with no framework: the same rendering serves the pages, the API, exports and discussions.
"""
