"""First-party reference plugins for gpucompiler (other than Enzyme)."""
