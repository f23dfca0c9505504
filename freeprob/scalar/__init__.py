"""Scalar laws, free convolutions and closed forms (rank 2: no law object, no solver)."""
