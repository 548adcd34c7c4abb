"""Learned samplers, one file each (LEAPS, Adjoint Sampling, ...), and their replay buffer."""
