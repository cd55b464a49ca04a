"""Deterministic input generators shared by the hardware captures (hardware/) and their replay tests."""
