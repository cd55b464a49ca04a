"""Legality tables per instruction family, transcribed from the PTX ISA texts in shared/spec:
tcgen05 (9.7.16), mma_sp (9.7.14.6.3), video (9.7.18), stack_misc (9.7.17, 9.7.19)."""
