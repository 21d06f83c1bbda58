"""``np.sort`` and ``np.argsort``, ``a.sort()``, ``sorted``: sorts written in Python and compiled."""
