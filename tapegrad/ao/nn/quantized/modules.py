"""torch.ao.nn.quantized's small modules: Quantize / DeQuantize (float <-> quantized at a model's
edges) and the functional wrappers of eager-mode quantization: FloatFunctional (float ops that
an observer can watch), FXFloatFunctional, and QFunctional, their quantized twin, which
requantizes its results to its own scale and zero point (quantized::add, mul, add_relu, cat,
add_scalar, mul_scalar: tapegrad._quantized)."""
from __future__ import annotations

import tapegrad as torch
from tapegrad import _quantized
from tapegrad import nn


class Quantize(nn.Module):
    """Quantizes its float input per tensor with fixed qparams (kept as float32 / int64
    buffers, so the scale used is the float32 one, as PyTorch's)."""

    def __init__(self, scale, zero_point, dtype, factory_kwargs=None):
        super().__init__()
        factory_kwargs = dict(factory_kwargs or {})
        self.register_buffer("scale", torch.tensor([scale], **factory_kwargs))
        factory_kwargs.pop("dtype", None)
        self.register_buffer("zero_point", torch.tensor([zero_point], dtype=torch.long,
                                                        **factory_kwargs))
        self.dtype = dtype

    def forward(self, X):  # noqa: N803
        return torch.quantize_per_tensor(X, float(self.scale), int(self.zero_point), self.dtype)

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant: bool = False):
        if not hasattr(mod, "activation_post_process"):
            raise AssertionError(f"Module {type(mod).__name__} must have "
                                 "activation_post_process attribute")
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        return Quantize(scale.float().item(), zero_point.long().item(),
                        mod.activation_post_process.dtype)

    def extra_repr(self) -> str:
        return f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}"


class DeQuantize(nn.Module):
    """Dequantizes its quantized input to float32."""

    def forward(self, Xq):  # noqa: N803
        return Xq.dequantize()

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant: bool = False):
        return DeQuantize()


class FXFloatFunctional(nn.Module):
    """The float ops as methods (add, add_scalar, mul, mul_scalar, cat, add_relu, matmul), for
    FX graph mode, which places its observers itself."""

    def forward(self, x):
        raise RuntimeError("FloatFunctional is not intended to use the 'forward'. Please use "
                           "the underlying operation")

    def _post(self, r):
        return r

    def add(self, x, y):
        return self._post(torch.add(x, y))

    def add_scalar(self, x, y: float):
        return torch.add(x, y)

    def mul(self, x, y):
        return self._post(torch.mul(x, y))

    def mul_scalar(self, x, y: float):
        return torch.mul(x, y)

    def cat(self, x, dim: int = 0):
        return self._post(torch.cat(x, dim=dim))

    def add_relu(self, x, y):
        return self._post(nn.functional.relu(torch.add(x, y)))

    def matmul(self, x, y):
        return self._post(torch.matmul(x, y))


class FloatFunctional(FXFloatFunctional):
    """FXFloatFunctional whose tensor results pass through `activation_post_process` (an
    Identity until eager-mode preparation puts an observer there)."""

    def __init__(self) -> None:
        super().__init__()
        self.activation_post_process = nn.Identity()

    def _post(self, r):
        return self.activation_post_process(r)


class QFunctional(nn.Module):
    """The quantized ops as methods; the tensor-tensor ones requantize to this module's
    `scale` and `zero_point` (saved in its state_dict)."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = 1.0
        self.zero_point = 0
        self.activation_post_process = nn.Identity()

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = torch.tensor(self.scale)
        destination[prefix + "zero_point"] = torch.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        self.scale = float(state_dict.pop(prefix + "scale"))
        self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def _get_name(self) -> str:
        return "QFunctional"

    def extra_repr(self) -> str:
        return f"scale={self.scale}, zero_point={self.zero_point}"

    def forward(self, x):
        raise RuntimeError("Functional is not intended to use the 'forward'. Please use the "
                           "underlying operation")

    def add(self, x, y):
        return self.activation_post_process(
            _quantized.quantized_add(x, y, self.scale, self.zero_point))

    def add_scalar(self, x, y: float):
        return _quantized.quantized_add_scalar(x, y)

    def mul(self, x, y):
        return self.activation_post_process(
            _quantized.quantized_mul(x, y, self.scale, self.zero_point))

    def mul_scalar(self, x, y: float):
        return _quantized.quantized_mul_scalar(x, y)

    def cat(self, x, dim: int = 0):
        return self.activation_post_process(
            _quantized._cat_requantized(list(x), dim, self.scale, self.zero_point))

    def add_relu(self, x, y):
        return self.activation_post_process(
            _quantized.quantized_add(x, y, self.scale, self.zero_point, relu=True))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        if type(mod) is not FloatFunctional:
            raise AssertionError("QFunctional.from_float expects an instance of "
                                 f"FloatFunctional, got {type(mod).__name__}")
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        new_mod = QFunctional()
        new_mod.scale = float(scale)
        new_mod.zero_point = int(zero_point)
        return new_mod
