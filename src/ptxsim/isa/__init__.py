"""ptxsim.isa (see DESIGN.md)."""
