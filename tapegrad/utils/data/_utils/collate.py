"""torch.utils.data._utils.collate: where PyTorch defines the DataLoader's default batch
functions (scripts import them from here to wrap them in their own collate_fn)."""
from ..dataloader import default_collate, default_convert

__all__ = ["default_collate", "default_convert"]
