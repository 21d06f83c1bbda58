"""``np.linalg`` and matrix products: BLAS and LAPACK through the host's libraries."""
