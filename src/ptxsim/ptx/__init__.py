"""ptxsim.ptx (see DESIGN.md)."""
