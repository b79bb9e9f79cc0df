"""The Files transport for images: each request variant uploaded once, requests carry its id.

- ``policy``: the documented limits of a Files API, and how dcode uses them (expiry, refresh).
- ``index``: which remote file holds which variant, per endpoint and key scope, in
  ``$DCODE_HOME`` (never the key itself).
- ``remote``: what dcode needs of a provider's Files API (``dcode/models/files_api.py`` speaks
  the OpenAI-compatible one).
- ``resolver``: a variant to a live file id: the index, one shared upload per variant, refresh
  before expiry, room made on a quota error.
- ``stale``: which ids a chat error says the provider no longer has.
"""
