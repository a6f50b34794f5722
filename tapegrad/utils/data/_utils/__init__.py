"""torch.utils.data._utils: the collate module (`collate`, `default_collate_fn_map`, and the
`default_collate` some scripts import from here)."""
from . import collate
