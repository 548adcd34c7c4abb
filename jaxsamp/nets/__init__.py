"""Flax nnx networks: MLP and time embeddings, locally equivariant lattice networks (LEAPS), EGNN."""
