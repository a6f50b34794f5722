"""torch.fx.experimental: symbolic_shapes' exception types, which torch.export raises."""
