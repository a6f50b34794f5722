"""tapegrad.utils.tensorboard: as torch.utils.tensorboard, importing it needs the `tensorboard`
package; without it the import fails with the same ModuleNotFoundError as torch's.  With it,
SummaryWriter is still not provided by tapegrad (ImportError says so)."""
import tensorboard  # noqa: F401 - the same failure as torch when the package is missing

raise ImportError("tapegrad.utils.tensorboard: SummaryWriter is not implemented by tapegrad "
                  "(write scalars with the tensorboard package's own API, or use a CSV log)")
