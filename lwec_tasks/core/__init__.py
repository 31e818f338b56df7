"""The numeric core: ensembles, cluster uncertainty and ECI, LWCA, LWEA, LWGP, their kernels,
metrics and base clusterings.

Imports only numpy, scipy, scikit-learn, pandas and numba (a test enforces it),
so the mathematics is usable and testable without Prefect, MLflow or a database.
"""
