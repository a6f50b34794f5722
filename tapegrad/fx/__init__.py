"""torch.fx: symbolic tracing of Modules into a Graph of Nodes, graph rewriting, GraphModule
(a Module running generated code) and Interpreter."""
from . import experimental, passes  # noqa: F401  (attributes of torch.fx, as PyTorch's)
from ._symbolic_trace import PH, Tracer, symbolic_trace, wrap
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Proxy
from .subgraph_rewriter import replace_pattern

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Interpreter",
           "Transformer", "Node", "Proxy", "map_arg", "PH", "replace_pattern"]
