"""torch.utils.data._utils: the import path some scripts take `default_collate` from."""
from . import collate
