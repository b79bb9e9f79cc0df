"""Settings and what guards them: the config files and their precedence, the project gate,
trust, the project's own files, and private files under ``$DCODE_HOME``."""
