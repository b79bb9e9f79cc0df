"""Compaction's domain: the record a compaction leaves in a thread's state (``record``), the
summary that makes one (``summary``), tier 1's argument cuts (``truncation``) and the
thresholds they fire at (``thresholds``). The middleware and the tools use these; nothing here
is a middleware."""
