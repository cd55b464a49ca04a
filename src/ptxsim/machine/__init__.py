"""ptxsim.machine (see DESIGN.md)."""
