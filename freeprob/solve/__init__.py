"""Numeric solvers of a Dyson system; they know no expression (rank 2)."""
