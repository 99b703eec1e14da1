"""The suite's version (the package's, and what config.json records)."""

__version__ = "0.1.0"
