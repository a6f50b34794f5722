"""tapegrad.utils.tensorboard: torch.utils.tensorboard's SummaryWriter for tapegrad.  Like torch's,
it needs the `tensorboard` package (>= 1.15; the same ModuleNotFoundError without it) and writes
through that package's EventFileWriter and protos, so TensorBoard reads the logs."""
import tensorboard

from ...torch_version import TorchVersion

if not hasattr(tensorboard, "__version__") or TorchVersion(tensorboard.__version__) < "1.15":
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")
del tensorboard, TorchVersion

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
