"""torch.fx.passes.utils: helpers of graph passes (the subgraph matcher)."""
