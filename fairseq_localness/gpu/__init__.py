"""GPU support: the list of architecture families, the fused attention choice and the one-call GPU suite."""
