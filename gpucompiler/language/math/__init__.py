"""The ``math`` module: LLVM intrinsics or libm on the CPU, a target's device library on GPUs."""
