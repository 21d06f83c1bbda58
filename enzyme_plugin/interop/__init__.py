"""A kernel program and its generated gradient as a PyTorch ``autograd.Function`` (:mod:`.pytorch`) or a
JAX ``custom_vjp`` function (:mod:`.jaxfunc`). Neither library is imported until its module is."""
