"""Prefect flows of lwec. :func:`flows.consensus.consensus_flow` is the main one."""
