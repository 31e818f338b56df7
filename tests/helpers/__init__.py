"""Helpers shared by the test modules: the authors' pools, feature tables, labels read-back."""
