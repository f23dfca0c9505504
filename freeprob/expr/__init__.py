"""Matrix expressions with symbolic dimensions, and model files (rank 2)."""
