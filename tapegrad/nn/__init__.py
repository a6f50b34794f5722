"""tapegrad.nn: neural-network building blocks (functional API so far)."""
from . import functional
