"""torch.utils.data._utils.worker: where PyTorch keeps WorkerInfo (torch.utils.data itself exports
only get_worker_info); tapegrad's live in tapegrad.utils.data._worker."""
from .._worker import WorkerInfo, get_worker_info  # noqa: F401
