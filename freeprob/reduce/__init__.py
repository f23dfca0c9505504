"""From an expression to its reduced Dyson system: scaling, pencil, covariance map (rank 3)."""
