"""Model presets, profiles and the ChatOpenAI factory. Light to import; langchain loads lazily."""
