"""Token counting with the model family's real BPE, offline, incrementally, calibrated.

``encodings`` loads the BPE rank files a package ships (no download), ``family`` picks the
encoding for a model name, ``counter`` counts requests as the chat wire sends them (message
overhead, tool schemas, images by the route's formula) and remembers the messages it has
counted, ``calibration`` scales estimates by the provider's own figures. Nothing here imports
the UI, and importing this package loads no encoding.
"""
