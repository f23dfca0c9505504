"""Monte-Carlo sampling of an expression and the statistical check of a law (rank 3)."""
