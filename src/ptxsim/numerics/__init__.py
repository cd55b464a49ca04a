"""ptxsim.numerics (see DESIGN.md)."""
