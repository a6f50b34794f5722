# ---------------------------------------------------------------------------------------------
# Grad mode: one C thread-local flag, read on every op.  Zero-initialised means "enabled", so every
# new thread starts with grad mode on, as in PyTorch.
# ---------------------------------------------------------------------------------------------

cdef extern from *:
    """
    static _Thread_local int tapegrad_grad_disabled = 0;
    """
    int tapegrad_grad_disabled


cdef inline bint grad_enabled() noexcept:
    return not tapegrad_grad_disabled


def is_grad_enabled():
    """True when operations on tensors that require grad are recorded (this thread)."""
    return not tapegrad_grad_disabled


def _set_grad_enabled(bint mode):
    """Set this thread's grad mode; returns the previous mode."""
    cdef bint prev = not tapegrad_grad_disabled
    global tapegrad_grad_disabled
    tapegrad_grad_disabled = 0 if mode else 1
    return prev


cdef class GradModeGuard:
    """The base of no_grad / enable_grad / set_grad_enabled (tapegrad/grad_mode.py): entering
    sets this thread's grad mode to the class's `_mode`, leaving restores the mode it found.
    Compiled because training loops enter `with no_grad():` once per step."""
    cdef int saved_disabled

    def __enter__(self):
        global tapegrad_grad_disabled
        self.saved_disabled = tapegrad_grad_disabled
        tapegrad_grad_disabled = 0 if self._mode else 1
        return None

    def __exit__(self, *exc_info):
        global tapegrad_grad_disabled
        tapegrad_grad_disabled = self.saved_disabled


cdef class no_grad_scope:
    """Internal: pause recording for a block (the in-place ops' unrecorded path)."""

    def __enter__(self):
        global tapegrad_grad_disabled
        self.prev = tapegrad_grad_disabled
        tapegrad_grad_disabled = 1

    def __exit__(self, *exc):
        global tapegrad_grad_disabled
        tapegrad_grad_disabled = self.prev


cdef int set_grad_disabled(int disabled) noexcept:
    """Set this thread's grad-mode flag (1: disabled) and return its previous value: the other
    extension modules cannot reach the C thread-local itself (it is static to this one)."""
    global tapegrad_grad_disabled
    cdef int prev = tapegrad_grad_disabled
    tapegrad_grad_disabled = disabled
    return prev
