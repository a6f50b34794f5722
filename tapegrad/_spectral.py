"""torch.stft and torch.istft (and their Tensor methods): the short-time Fourier transform and its
inverse, composed of differentiable ops (pad, unfold, window product, torch.fft, index_add), so
gradients flow to the signal, the window and the spectrum without a VJP of their own.

PyTorch's semantics, checked against torch 2.13 (tests/test_spectral.py):
  stft   pads the signal by n_fft // 2 on each side when `center` (F.pad with `pad_mode`), cuts
         frames of n_fft samples every hop_length (default n_fft // 4), multiplies them by the
         window (default rectangular, of win_length = n_fft; a shorter window is centred in
         n_fft with zeros), takes the FFT of each frame (one-sided for real signal and window),
         scaled by n_fft^-1/2 when `normalized`; the result is (..., freq, frames).  Real input
         requires `return_complex`; return_complex=False gives view_as_real of the result, with
         PyTorch's deprecation warning.  `align_to_window` (center=False only) starts the frames
         where the window starts: the signal gets the window's zero padding on each side.
  istft  inverts it by overlap-add: inverse FFT of each frame, times the window, summed at the
         frame positions, divided by the summed squared window (refused where that envelope is
         below 1e-11: the NOLA condition), trimmed of the centre padding or to `length` (zero
         padded beyond the signal, with PyTorch's warning).
The refusals carry PyTorch's messages, which print the resolved call ahead of the reason.
"""
from __future__ import annotations as _annotations

from . import _core
from ._extra_ops import _check_tensor

_REAL_INPUT_NEEDS_RETURN_COMPLEX = (
    "stft requires the return_complex parameter be given for real inputs, and will further "
    "require that return_complex=True in a future PyTorch release.")
_STFT_REAL_DEPRECATED = (
    "stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
    "complex tensors for all inputs, and return_complex=False will raise an error.\nNote: you can "
    "still call torch.view_as_real on the complex output to recover the old return format.")
_STFT_NO_WINDOW = (
    "A window was not provided. A rectangular window will be applied,which is known to cause "
    "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
    "recommended to reduce spectral leakage.To suppress this warning and use a rectangular "
    "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.")
_ISTFT_NO_WINDOW = (
    "A window was not provided. A rectangular window will be applied.Please provide the same "
    "window used by stft to make the inversion lossless.To suppress this warning and use a "
    "rectangular window, explicitly set `window=torch.ones(n_fft, device=<device>)`.")
_ISTFT_SHORT = (
    "The length of signal is shorter than the length parameter. Result is being padded with zeros "
    "in the tail. Please check your center and hop_length settings.")


def _tg():
    import tapegrad
    return tapegrad


def _flag(value) -> str:
    """PyTorch's printing of an optional bool in these messages: None, 0 or 1."""
    return "None" if value is None else str(int(bool(value)))


def _window_repr(window) -> str:
    return "None" if window is None else f"{window.type()}{{{list(window.shape)}}}"


def _framed_window(window, win_length: int, n_fft: int, like):
    """The window as n_fft samples: a rectangular one when none is given, a shorter one centred
    with zeros on both sides."""
    tg = _tg()
    if window is None:
        window = tg.ones(win_length, dtype=like.real.dtype if like.is_complex() else like.dtype)
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = tg.nn.functional.pad(window, [left, n_fft - win_length - left])
    return window


# PyTorch's signatures of its stft builtin, which its parser lists for a call that fits none
_STFT_SIGNATURES = "".join(
    f" * (Tensor input, int n_fft, int hop_length = None, int win_length = None, Tensor window = "
    f"None, {centered}bool normalized = False, bool onesided = None, bool return_complex = None, "
    "bool align_to_window = None)\n" for centered in ('bool center = True, str pad_mode = '
                                                      '"reflect", ', ""))


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """Short-time Fourier transform of a 1D signal or a batch of them (rows): (..., freq, frames),
    freq = n_fft // 2 + 1 when one-sided (real signal and window), else n_fft."""
    _check_tensor(input, "stft")
    # (PyTorch's Python stft passes them on to its builtin, whose parser takes bools, and None
    # but for normalized; center is Python's truth value: the padding is done before)
    for name, flag in (("normalized", normalized), ("onesided", onesided),
                       ("return_complex", return_complex), ("align_to_window", align_to_window)):
        if flag is not None or name == "normalized":
            _core.check_bool("stft", name, flag, 0, _STFT_SIGNATURES)
    tg = _tg()
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if window is None:      # (PyTorch warns of it before it checks return_complex)
        _core.warn_once(_STFT_NO_WINDOW, "aten/src/ATen/native/SpectralOps.cpp:835")
    complex_in = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not complex_in:
            raise RuntimeError(_REAL_INPUT_NEEDS_RETURN_COMPLEX)
        return_complex = True
    if not return_complex:
        _core.warn_once(_STFT_REAL_DEPRECATED, "aten/src/ATen/native/SpectralOps.cpp:874")
    signal = input
    if center:
        # As torch.functional.stft: F.pad on a view of at least 3 dims, then its last
        # input.dim() dims (all of them for a 0-d input, as `shape[-0:]` is the whole shape).  So
        # a 1-3D signal pads by any mode, and a bad input fails as PyTorch's does: F.pad's own
        # error for >3D non-constant padding or a too-short reflection, else the stft refusal
        # below naming the padded shape.
        pad = n_fft // 2
        shape = list(input.shape)
        padded = tg.nn.functional.pad(input.reshape([1] * (3 - len(shape)) + shape), [pad, pad],
                                      pad_mode)
        signal = padded.reshape(list(padded.shape)[-len(shape):] if shape else padded.shape)
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length

    def refuse(reason):
        return RuntimeError(
            f"stft({signal.type()}{list(signal.shape)}, n_fft={n_fft}, hop_length={hop}, "
            f"win_length={win}, window={_window_repr(window)}, normalized={int(bool(normalized))},"
            f" onesided={_flag(onesided)}, return_complex={_flag(return_complex)}, "
            f"align_to_window={_flag(align_to_window)}) : {reason}")

    if not (signal.is_floating_point() or signal.is_complex()):
        raise refuse("expected a tensor of floating point or complex values")
    if signal.dtype == _core.float16:          # (its FFT's refusal, before the shape checks)
        raise RuntimeError("MKL FFT doesn't support tensors of type: Half")
    if signal.dim() not in (1, 2):
        raise refuse("expected a 1D or 2D tensor")
    length = signal.shape[-1]
    if n_fft <= 0 or n_fft > length:
        # (PyTorch's message reports win_length as the n_fft it got)
        raise refuse(f"expected 0 < n_fft < {length}, but got n_fft={win}")
    if hop <= 0:
        raise refuse(f"expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise refuse(f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise refuse(f"expected a 1D window tensor of size equal to win_length={win}, but got "
                     f"window with size {list(window.shape)}")
    one_sided = (not complex_in) if onesided is None else bool(onesided)
    if one_sided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")

    frames_of = signal if signal.dim() == 2 else signal.unsqueeze(0)
    if align_to_window and win < n_fft:
        # (frame t then holds samples t*hop .. t*hop + win under the window, as PyTorch's when
        # n_fft - win_length is even; when odd PyTorch reads past the signal and raises)
        left = (n_fft - win) // 2
        frames_of = tg.nn.functional.pad(frames_of, [left, n_fft - win - left])
    frames = frames_of.unfold(-1, n_fft, hop) * _framed_window(window, win, n_fft, signal)
    norm = "ortho" if normalized else "backward"
    spectrum = (tg.fft.rfft if one_sided else tg.fft.fft)(frames, dim=-1, norm=norm)
    spectrum = spectrum.transpose(-1, -2)
    if signal.dim() == 1:
        spectrum = spectrum.squeeze_(0)     # (in place as PyTorch's: SqueezeBackward4)
    return spectrum if return_complex else tg.view_as_real(spectrum)


def _overlap_add(frames, hop: int, total: int):
    """Sum of the frames (batch, n_frames, n_fft) placed every hop samples: (batch, total)."""
    tg = _tg()
    n_frames, n_fft = frames.shape[-2], frames.shape[-1]
    positions = (tg.arange(n_frames).unsqueeze(1) * hop + tg.arange(n_fft)).reshape(-1)
    out = tg.zeros(frames.shape[0], total, dtype=frames.dtype)
    return out.index_add(1, positions, frames.reshape(frames.shape[0], -1))


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """Inverse of stft by windowed overlap-add: a (freq, frames) or (batch, freq, frames) complex
    spectrum back to its signal(s)."""
    _check_tensor(input, "istft")
    # (PyTorch's istft is its builtin: bools, and None for onesided)
    for name, flag in (("center", center), ("normalized", normalized), ("onesided", onesided),
                       ("return_complex", return_complex)):
        if flag is not None or name != "onesided":
            _core.check_bool("istft", name, flag)
    tg = _tg()
    # PyTorch warns about the missing window before it looks at the input's dtype
    if window is None:
        _core.warn_once(_ISTFT_NO_WINDOW, "aten/src/ATen/native/SpectralOps.cpp:1035")
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    type_name = ("CPUComplexFloatType" if input.dtype == tg.complex64 else "CPUComplexDoubleType")

    def refuse(reason, sep=" : "):
        return RuntimeError(
            f"istft({type_name}{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, "
            f"win_length={win}, window={_window_repr(window)}, center={int(bool(center))}, "
            f"normalized={int(bool(normalized))}, onesided={_flag(onesided)}, length="
            f"{'None' if length is None else length}, return_complex={int(bool(return_complex))})"
            f"{sep}{reason}")

    # (PyTorch counts the dims of view_as_real(input): one more than the complex tensor's.  It
    # reads that view's frame and frequency sizes, dims -2 and -3, before any check: a 0-d or
    # 1-d spectrum fails on that read, as an IndexError, and an empty one before the dim count.)
    real_dims = input.dim() + 1
    if real_dims < 3:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-real_dims}, "
                         f"{real_dims - 1}], but got {-real_dims - 1})")
    if input.numel() == 0:
        raise refuse("input tensor cannot be empty.")
    if real_dims not in (3, 4):
        raise refuse(f"expected a tensor with 3 or 4 dimensions, but got {input.dim() + 1}")
    freq = input.shape[-2]
    one_sided = (freq != n_fft) if onesided is None else bool(onesided)
    if one_sided and freq != n_fft // 2 + 1:
        raise refuse("expected the frequency dimension (3rd to the last) of the input tensor to "
                     f"match n_fft / 2 + 1 when onesided=True, but got {freq}")
    if not one_sided and freq != n_fft:
        raise refuse("expected the frequency dimension (3rd to the last) of the input tensor to "
                     f"match n_fft when onesided=False, but got {freq}")
    if not 0 < hop <= win:
        raise refuse("expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise refuse("expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise refuse("Invalid window shape. window has to be 1D and length of `win_length`")

    full_window = _framed_window(window, win, n_fft, input)
    spectrum = (input if input.dim() == 3 else input.unsqueeze(0)).transpose(1, 2)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if one_sided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = tg.fft.ifft(spectrum, n_fft, dim=-1, norm=norm)
    else:
        if window is not None and window.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not one_sided:
            spectrum = spectrum[..., :n_fft // 2 + 1]
        frames = tg.fft.irfft(spectrum, n_fft, dim=-1, norm=norm)
    n_frames = frames.shape[1]
    total = n_fft + hop * (n_frames - 1)
    signal = _overlap_add(frames * full_window, hop, total)
    # The envelope divides the signal and is recorded: the window's gradient has a part through
    # it (PyTorch's does; computing it under no_grad silently dropped that part).
    squared = full_window.pow(2)                    # (PyTorch's: w^2, not |w|^2)
    envelope = _overlap_add(squared.expand(1, n_frames, n_fft), hop, total)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (total - n_fft // 2 if center else total)
    signal = signal[:, start:end]
    envelope = envelope[:, start:end]
    # (an empty envelope - one centred frame - is refused by min() itself, as PyTorch's is)
    if bool(envelope.abs().min() < 1e-11):
        # (PyTorch prints the test's boolean tensor after the reason)
        raise refuse("window overlap add min: 1\n[ CPUBoolType{} ]", sep=" ")
    signal = signal / envelope
    if input.dim() == 2:
        signal = signal.squeeze(0)
    if end > total:
        # (PyTorch: TORCH_WARN_ONCE)
        _core.warn_once(_ISTFT_SHORT, "aten/src/ATen/native/SpectralOps.cpp:1199")
        signal = tg.nn.functional.pad(signal, [0, end - total])
    return signal


FUNCTIONS = ("stft", "istft")


def register(namespace: dict, tensor_cls) -> None:
    """torch.stft/istft and Tensor.stft/istft; existing names win.  The functions serve as the
    methods themselves (input is their first parameter): no wrapper frame, and their signatures
    reach the stubs."""
    for name in FUNCTIONS:
        fn = globals()[name]
        namespace.setdefault(name, fn)
        if not hasattr(tensor_cls, name):
            setattr(tensor_cls, name, fn)
