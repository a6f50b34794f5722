"""tapegrad.optim: optimizers and learning-rate schedulers, as torch.optim has them.

The updates follow PyTorch's single-tensor implementations operation for operation, on the
parameters' numpy arrays in place (float32 results agree with PyTorch's bit for bit, up to
PyTorch's own not-quite-correctly-rounded square root).
"""
from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "SGD", "lr_scheduler"]
