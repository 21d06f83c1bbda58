"""``np.random``: NumPy's legacy functions and ``default_rng``'s Generator."""
