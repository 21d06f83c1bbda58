"""NumPy: arrays the compiled code owns, expressions and ufuncs, constructors, reductions, views."""
