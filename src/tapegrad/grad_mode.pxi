# ---------------------------------------------------------------------------------------------
# Grad mode and inference mode: one C thread-local word, read on every op.  Bit GRAD_OFF is grad
# mode switched off (no_grad, set_grad_enabled(False)), bit INFERENCE_ON is inference mode.  An op
# records only when the whole word is 0, so the per-op test stays one load and one compare, and
# inference mode stops recording even under enable_grad(), as PyTorch's does.  Zero-initialised
# means "grad on, no inference", so every new thread starts that way, as in PyTorch.
# ---------------------------------------------------------------------------------------------

cdef extern from *:
    """
    #if defined(__GNUC__) && defined(__GLIBC__) && defined(__ELF__)
    /* The initial-exec model reads the word at a fixed offset from the thread pointer; the
       default model of a shared library (general dynamic) calls __tls_get_addr on every read,
       ~10 instructions that every op paid twice (wrap's inference test, then grad_enabled).
       glibc reserves static TLS room for the modules dlopen loads, which these 4 bytes fit. */
    #define TAPEGRAD_TLS_MODEL __attribute__((tls_model("initial-exec")))
    #else
    #define TAPEGRAD_TLS_MODEL
    #endif
    static _Thread_local int tapegrad_grad_disabled TAPEGRAD_TLS_MODEL = 0;
    """
    int tapegrad_grad_disabled

cdef enum:
    GRAD_OFF = 1
    INFERENCE_ON = 2


cdef inline bint grad_enabled() noexcept:
    """Whether ops record (grad mode on and not in inference mode)."""
    return not tapegrad_grad_disabled


cdef inline bint inference_mode_on() noexcept:
    return (tapegrad_grad_disabled & INFERENCE_ON) != 0     # (0 or 1: stored as a tensor's flag)


def is_grad_enabled():
    """True when grad mode is on in this thread (inference mode turns it off on entry; an
    enable_grad() inside it turns it on again, though nothing records there)."""
    return not (tapegrad_grad_disabled & GRAD_OFF)


def is_inference_mode_enabled():
    """True inside `with inference_mode():` (and not inside a nested inference_mode(False))."""
    return bool(tapegrad_grad_disabled & INFERENCE_ON)


def _set_grad_enabled(bint mode):
    """Set this thread's grad mode (inference mode untouched); returns the previous grad mode."""
    cdef bint prev = not (tapegrad_grad_disabled & GRAD_OFF)
    global tapegrad_grad_disabled
    tapegrad_grad_disabled = (tapegrad_grad_disabled & INFERENCE_ON) | (0 if mode else GRAD_OFF)
    return prev


cdef class InferenceModeGuard:
    """The base of inference_mode (tapegrad/grad_mode.py): entering with `mode` True turns
    inference mode on and grad mode off; with `mode` False turns both the other way (PyTorch's
    InferenceMode(false)); leaving restores what it found.  Tensors created while inference mode
    is on are inference tensors (TensorBase._inference)."""
    cdef int saved_word
    cdef public bint mode

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __enter__(self):
        global tapegrad_grad_disabled
        self.saved_word = tapegrad_grad_disabled
        tapegrad_grad_disabled = (INFERENCE_ON | GRAD_OFF) if self.mode else 0
        return None

    def __exit__(self, *exc_info):
        global tapegrad_grad_disabled
        tapegrad_grad_disabled = self.saved_word


cdef class GradModeGuard:
    """The base of no_grad / enable_grad / set_grad_enabled (tapegrad/grad_mode.py): entering
    sets this thread's grad mode to the class's `_mode`, leaving restores the mode it found.
    Compiled because training loops enter `with no_grad():` once per step."""
    cdef int saved_disabled

    def __enter__(self):
        global tapegrad_grad_disabled
        self.saved_disabled = tapegrad_grad_disabled
        tapegrad_grad_disabled = (tapegrad_grad_disabled & INFERENCE_ON) | (
            0 if self._mode else GRAD_OFF)
        return None

    def __exit__(self, *exc_info):
        global tapegrad_grad_disabled
        tapegrad_grad_disabled = self.saved_disabled


cdef class no_grad_scope:
    """Internal: pause recording for a block (the in-place ops' unrecorded path)."""

    def __enter__(self):
        global tapegrad_grad_disabled
        self.prev = tapegrad_grad_disabled
        tapegrad_grad_disabled |= GRAD_OFF

    def __exit__(self, *exc):
        global tapegrad_grad_disabled
        tapegrad_grad_disabled = self.prev


cdef int set_grad_disabled(int disabled) noexcept:
    """Set this thread's grad-mode word (1: grad off; inference mode is kept unless `disabled`
    is a previous return value, which restores it whole) and return its previous value: the
    other extension modules cannot reach the C thread-local itself (it is static to this one)."""
    global tapegrad_grad_disabled
    cdef int prev = tapegrad_grad_disabled
    tapegrad_grad_disabled = (tapegrad_grad_disabled & INFERENCE_ON) | disabled
    return prev
