"""The Triton backend package named by ptxsim's `triton.backends` entry point: Triton's backend
discovery imports `compiler` and `driver` from here (each holds exactly one concrete backend
class, as the discovery requires). Both are loaded by every `import triton` once ptxsim is
installed, so they import nothing heavy and never fail."""
