"""Deterministic input generators shared by the hardware captures (hw/) and their replay tests."""
