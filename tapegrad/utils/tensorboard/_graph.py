"""add_graph's GraphDef, built from a tapegrad.fx trace of the model.

torch traces with torch.jit and names each node <Model>/<Class[attr]>/.../<value>, with aten::*
ops, prim::GetAttr parameter reads, "IO Node" inputs (input/<arg>) and outputs
(output/output.<i>).  tapegrad has no jit; fx records the same calls (tracing through every
submodule, so Linear becomes aten::linear as in torch's inlined graph), and its nn_module_stack
gives the same scopes.  What differs: node suffixes are fx's names (linear_1) rather than jit's
value numbers, constants are not separate prim::Constant nodes, and ops keep the name they were
called by (conv2d rather than jit's _convolution).  A forward fx cannot trace symbolically (a
loop over a size, a branch on a value) is read from the tape of one run instead, as jit reads one
run: ops named from their backward nodes, no module scopes, no shapes inside."""
import contextlib
import operator
import re

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef


def _node_def(name, op, inputs=(), shape=None, attributes=""):
    attr = {"attr": AttrValue(s=attributes.encode("utf_8"))}
    if shape is not None:
        shape_proto = TensorShapeProto(dim=[TensorShapeProto.Dim(size=d) for d in shape])
        attr["_output_shapes"] = AttrValue(list=AttrValue.ListValue(shape=[shape_proto]))
    return NodeDef(name=name.encode("utf_8"), op=op, input=list(inputs), attr=attr)


@contextlib.contextmanager
def _eval_mode(model):
    was_training = model.training
    model.train(False)
    try:
        yield
    finally:
        model.train(was_training)


def _trace(model):
    """The fx GraphModule of model, traced through its submodules when fx can (as jit inlines
    them), else with each submodule as one call (a submodule whose forward branches on a value
    cannot be entered symbolically)."""
    from ... import fx

    class ThroughSubmodules(fx.Tracer):
        def is_leaf_module(self, module, qualified_name):
            return False

    class SubmodulesAsCalls(fx.Tracer):
        def is_leaf_module(self, module, qualified_name):
            return True

    try:
        graph = ThroughSubmodules().trace(model)
    except Exception:  # noqa: BLE001 - symbolic tracing fails as TraceError, TypeError, ...
        graph = SubmodulesAsCalls().trace(model)
    return fx.GraphModule(model, graph)


def _forward_op_name(grad_fn):
    """The op a backward node differentiates, by its name (AddmmBackward0 -> addmm)."""
    forward = re.sub(r"Backward\d*$", "", grad_fn.name())
    return re.sub(r"(?<!^)(?=[A-Z])", "_", forward).lower()


def _tape_nodes(model, args, root_name):
    """NodeDefs of the recorded tape of one run of model(*args), for a forward fx cannot trace
    symbolically (loops over a size, branches on values; torch's jit traces one run, too).
    Ops come from the backward nodes' names, parameters from the leaves' AccumulateGrad; there
    are no module scopes, and only ops on the way from a parameter or input to an output."""
    import inspect

    from ... import Tensor, enable_grad
    arg_names = list(inspect.signature(model.forward).parameters)
    inputs = [a.detach().requires_grad_() if isinstance(a, Tensor) and a.is_floating_point()
              else a for a in args]
    leaf_names = {id(p): f"{_module_scope(root_name, path.rpartition('.')[0], model)}/"
                  f"{path.rpartition('.')[2]}/{path.rpartition('.')[2]}"
                  for path, p in model.named_parameters()}
    nodes = []
    for i, value in enumerate(inputs):
        if isinstance(value, Tensor) and value.requires_grad:
            name = arg_names[i] if i < len(arg_names) else f"input.{i + 1}"
            leaf_names[id(value)] = f"input/{name}"
            nodes.append(_node_def(f"input/{name}", "IO Node", shape=list(value.shape)))
    for path, p in model.named_parameters():
        nodes.append(_node_def(leaf_names[id(p)], "prim::GetAttr",
                               attributes=f"{{ name :  {path.rpartition('.')[2]} }}"))
    with enable_grad():
        outputs = model(*inputs)
    outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    names, counts = {}, {}

    def is_leaf(fn):  # torch names it torch::autograd::AccumulateGrad
        return fn.name().endswith("AccumulateGrad")

    def name_of(fn):
        if is_leaf(fn):
            return leaf_names.get(id(fn.variable))
        if fn not in names:
            op = _forward_op_name(fn)
            counts[op] = counts.get(op, 0) + 1
            names[fn] = f"{root_name}/{op}_{counts[op]}"
        return names[fn]

    # post-order over the backward graph (explicit stack: deep graphs need no recursion), so
    # that each op is written after the ops it reads
    done, stack = set(), [(out.grad_fn, False) for out in reversed(outputs)
                          if isinstance(out, Tensor) and out.grad_fn is not None]
    while stack:
        fn, expanded = stack.pop()
        if fn in done or is_leaf(fn):
            continue
        parents = [f for f, _ in fn.next_functions if f is not None]
        if not expanded:
            stack.append((fn, True))
            stack.extend((f, False) for f in reversed(parents) if f not in done)
            continue
        done.add(fn)
        inputs_read = [n for n in (name_of(f) for f in parents) if n is not None]
        nodes.append(_node_def(name_of(fn), f"aten::{_forward_op_name(fn)}", inputs_read,
                               attributes="{}"))
    for i, out in enumerate(outputs, 1):
        if isinstance(out, Tensor):
            source = [name_of(out.grad_fn)] if out.grad_fn is not None else []
            nodes.append(_node_def(f"output/output.{i}", "IO Node", source,
                                   shape=list(out.shape)))
    return nodes


def _output_shapes(graph_module, args):
    """The shape of each node's value (None when not a tensor) from one run on args."""
    from ... import Tensor, fx
    shapes = {}

    class ShapeRecorder(fx.Interpreter):
        def run_node(self, node):
            value = super().run_node(node)
            shapes[node] = list(value.shape) if isinstance(value, Tensor) else None
            return value

    ShapeRecorder(graph_module).run(*args)
    return shapes


def _op_name(node, graph_module):
    if node.op == "call_module":
        return type(graph_module.get_submodule(node.target)).__name__
    if node.op == "call_method":
        return f"aten::{node.target}"
    if node.target is operator.getitem:
        return "prim::TupleIndex"
    return f"aten::{getattr(node.target, '__name__', str(node.target)).strip('_')}"


def _module_scope(root_name, module_path, model):
    """torch's scope of a submodule: <Root>/<Class[attr]>/... along its dotted path."""
    scope, module = [root_name], model
    for attr in module_path.split(".") if module_path else ():
        module = getattr(module, attr)
        scope.append(f"{type(module).__name__}[{attr}]")
    return "/".join(scope)


def _flat_node_inputs(node):
    inputs = []
    from ... import fx
    fx.node.map_arg((node.args, node.kwargs), lambda n: inputs.append(n) or n)
    return inputs


def _fx_nodes(model, args, root_name, verbose):
    """NodeDefs of model's fx graph, with each value's shape from one run on args."""
    graph_module = _trace(model)
    shapes = _output_shapes(graph_module, args)
    if verbose:
        print(graph_module.graph)
    names, nodes = {}, []
    for node in graph_module.graph.nodes:
        if node.op == "placeholder":
            if not node.users:
                continue  # torch omits inputs nothing reads
            names[node] = f"input/{node.name}"
            nodes.append(_node_def(names[node], "IO Node", shape=shapes.get(node)))
        elif node.op == "get_attr":
            owner, _, attr = node.target.rpartition(".")
            # torch names a parameter read <scope>/<attr>/<attr> (plus jit's uniquing suffix)
            names[node] = f"{_module_scope(root_name, owner, model)}/{attr}/{attr}"
            nodes.append(_node_def(names[node], "prim::GetAttr",
                                   attributes=f"{{ name :  {attr} }}"))
        elif node.op == "output":
            outputs = node.args[0] if isinstance(node.args[0], (tuple, list)) else [node.args[0]]
            for i, out in enumerate(outputs, 1):
                nodes.append(_node_def(f"output/output.{i}", "IO Node",
                                       [names[out]] if out in names else [],
                                       shape=shapes.get(out)))
        else:
            stack = node.meta.get("nn_module_stack") or {}
            module_path = next(reversed(stack), "") if stack else ""
            if node.op == "call_module":
                module_path = node.target
            scope = _module_scope(root_name, module_path, model)
            names[node] = f"{scope}/{node.name}"
            nodes.append(_node_def(names[node], _op_name(node, graph_module),
                                   [names[n] for n in _flat_node_inputs(node)],
                                   shape=shapes.get(node), attributes="{}"))
    return nodes


def graph(model, args, verbose=False, use_strict_trace=True):
    """(GraphDef, RunMetadata) of model run on args (a tensor or a tuple of them), as torch's
    add_graph writes them: from tapegrad.fx's trace, or when fx cannot trace the model's own
    forward, from the tape of one run."""
    if not isinstance(args, (tuple, list)):
        args = (args,)
    root_name = type(model).__name__
    with _eval_mode(model):
        try:
            nodes = _fx_nodes(model, args, root_name, verbose)
        except Exception:  # noqa: BLE001 - any failure of symbolic tracing; a real error of
            # the model raises again, as itself, from the run the tape records
            nodes = _tape_nodes(model, args, root_name)
    run_metadata = RunMetadata(step_stats=StepStats(
        dev_stats=[DeviceStepStats(device="/device:CPU:0")]))
    return GraphDef(node=nodes, versions=VersionDef(producer=22)), run_metadata

def onnx_graph(path):
    """The GraphDef of an ONNX file (needs the onnx package): its inputs and outputs as Variable
    nodes with dtype and shape, then one node per ONNX node named by its first output."""
    import onnx
    onnx_model_graph = onnx.load(path).graph
    nodes = []
    for value in list(onnx_model_graph.input) + list(onnx_model_graph.output):
        tensor_type = value.type.tensor_type
        shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=d.dim_value)
                                      for d in tensor_type.shape.dim])
        nodes.append(NodeDef(name=value.name.encode("utf_8"), op="Variable", input=[],
                             attr={"dtype": AttrValue(type=tensor_type.elem_type),
                                   "shape": AttrValue(shape=shape)}))
    for onnx_node in onnx_model_graph.node:
        parameters = ", ".join(" = ".join(str(f[1]) for f in a.ListFields())
                               for a in onnx_node.attribute)
        nodes.append(NodeDef(name=onnx_node.output[0].encode("utf_8"), op=onnx_node.op_type,
                             input=onnx_node.input,
                             attr={"parameters": AttrValue(s=parameters.encode("utf_8"))}))
    return GraphDef(node=nodes, versions=VersionDef(producer=22))
