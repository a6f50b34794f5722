"""torch.utils.data._utils: the collate module (`collate`, `default_collate_fn_map`, and the
`default_collate` some scripts import from here) and the worker module (WorkerInfo)."""
from . import collate, worker  # noqa: F401  (torch.utils.data._utils.worker, as an attribute)
