"""torch.cuda's legacy tensor types, device context managers, Stream and Event, as in PyTorch's
CPU build: old scripts name them (`Tensor = torch.cuda.FloatTensor if cuda else
torch.FloatTensor`, isinstance checks, `with torch.cuda.device(0):`)."""
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

EXPRESSIONS = [
    "lib.cuda.FloatTensor(3)", "lib.cuda.LongTensor([1, 2])",
    "isinstance(lib.ones(2), lib.cuda.FloatTensor)", "lib.cuda.FloatTensor.dtype",
    "lib.cuda.ByteTensor.is_cuda", "lib.FloatTensor.is_cuda", "lib.cuda.DoubleTensor.__name__",
    "lib.cuda.device(0).__enter__()", "lib.cuda.device(-1).__enter__()",
    "lib.cuda.device('cuda:1').__enter__()", "lib.cuda.Stream()", "lib.cuda.Event()",
    "lib.cuda.Event(enable_timing=True)", "lib.cuda.default_stream()",
    "lib.cuda.device_of(lib.ones(1)).__enter__()", "lib.ones(2).type(lib.cuda.FloatTensor)",
    "lib.ones(2).type(lib.FloatTensor).dtype", "lib.cuda.default_generators",
]


def _outcome(lib, expression):
    try:
        value = eval(expression, {"lib": lib})
    except Exception as e:
        return type(e).__name__, str(e).split(".")[0][:40]
    return "value", str(value).replace("tapegrad", "torch")


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_cuda_names_as_torch_cpu_build(expression):
    assert _outcome(tg, expression) == _outcome(torch, expression)
