"""Enzyme-style automatic differentiation on LLVM IR, as a gpucompiler plugin.

The AD engine and the ``autodiff`` API arrive with their own issues; this
package is installed now so that the plugin's entry point and imports are
stable.
"""

__version__ = "0.1.0"
