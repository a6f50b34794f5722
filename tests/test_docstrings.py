"""Every public Python-level function and class of tapegrad has a docstring.

The public surface is what a user reaches: the names of the public namespaces below (without a
leading underscore, or in the module's __all__) and the public methods and properties of the
public classes.  Compiled functions (the Cython core in src/) are listed apart: the core is being
split into several extension modules, and its docstrings come with that split (issue 18); until
then `COMPILED_EXEMPT` says how many may lack one, so the count can only go down.

Run as a script (python tests/test_docstrings.py) to print the public callables without one.
"""
import importlib
import inspect
import types

NAMESPACES = (
    "tapegrad", "tapegrad.nn", "tapegrad.nn.functional", "tapegrad.nn.init", "tapegrad.nn.utils",
    "tapegrad.nn.utils.rnn", "tapegrad.optim", "tapegrad.optim.lr_scheduler", "tapegrad.autograd",
    "tapegrad.autograd.functional", "tapegrad.utils.data", "tapegrad.utils.dlpack",
    "tapegrad.utils.viz", "tapegrad.linalg", "tapegrad.distributions",
    "tapegrad.distributions.constraints", "tapegrad.random", "tapegrad.testing", "tapegrad.cuda",
    "tapegrad.backends.cudnn", "tapegrad.backends.mps", "tapegrad.accelerator", "tapegrad.sparse",
)

# Compiled functions (the extension modules) whose docstring is only Cython's embedded
# signature: none since session 24.
COMPILED_EXEMPT = 0


def _public_names(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")]
    return sorted(set(names))


def _is_compiled(obj) -> bool:
    fn = obj.fget if isinstance(obj, property) else obj
    if isinstance(fn, (staticmethod, classmethod)):
        fn = fn.__func__
    if inspect.isclass(fn):
        return fn.__module__ == "tapegrad._core"
    return not isinstance(fn, (types.FunctionType, types.MethodType))


def _own_doc(obj):
    fn = obj.fget if isinstance(obj, property) else obj
    if isinstance(fn, (staticmethod, classmethod)):
        fn = fn.__func__
    doc = fn.__doc__ if inspect.isclass(fn) else getattr(fn, "__doc__", None)
    return doc if doc and doc.strip() else None


def _documented_in_a_base(cls, name) -> bool:
    """An override inherits its contract: Linear.forward needs no docstring of its own when
    Module.forward has one (inspect.getdoc shows the base's)."""
    for base in cls.__mro__[1:]:
        if name in vars(base) and _own_doc(vars(base)[name]):
            return True
    return False


def _in_tapegrad(obj) -> bool:
    fn = obj.fget if isinstance(obj, property) else obj
    if isinstance(fn, (staticmethod, classmethod)):
        fn = fn.__func__
    return (getattr(fn, "__module__", None) or "").startswith("tapegrad")


def public_callables():
    """(qualified name, object, is_compiled) of every public function, class, method, property."""
    seen, out = set(), []

    def add(qualname, obj):
        key = id(obj.fget if isinstance(obj, property) else obj)
        if key in seen:
            return
        seen.add(key)
        out.append((qualname, obj, _is_compiled(obj)))

    classes = []
    for modname in NAMESPACES:
        module = importlib.import_module(modname)
        for name in _public_names(module):
            obj = getattr(module, name, None)
            if inspect.isclass(obj) and _in_tapegrad(obj):
                add(f"{modname}.{name}", obj)
                classes.append((f"{modname}.{name}", obj))
            elif callable(obj) and not inspect.isclass(obj) and _in_tapegrad(obj):
                add(f"{modname}.{name}", obj)
    for qual, cls in classes:
        for name, member in vars(cls).items():
            if name.startswith("_") and name != "__init__":
                continue
            if name == "__init__":
                continue        # documented by the class docstring (numpydoc's convention)
            if not (callable(member) or isinstance(member, (property, staticmethod,
                                                            classmethod))):
                continue
            if not _in_tapegrad(member) and not _is_compiled(member):
                continue
            if _documented_in_a_base(cls, name):
                continue
            add(f"{qual}.{name}", member)
    return out


def undocumented():
    python, compiled = [], []
    for qual, obj, is_compiled in public_callables():
        if _own_doc(obj) is None or _looks_like_signature_only(obj):
            (compiled if is_compiled else python).append(qual)
    return python, compiled


def _looks_like_signature_only(obj) -> bool:
    # Cython's embedsignature gives every compiled function a first line like "exp(TensorBase
    # x)": that is a signature, not documentation.
    doc = _own_doc(obj).strip()
    if not _is_compiled(obj):
        return False
    lines = [line for line in doc.splitlines() if line.strip()]
    return len(lines) == 1 and lines[0].rstrip().endswith(")") and "(" in lines[0]


def test_every_public_python_callable_has_a_docstring():
    python, _ = undocumented()
    assert python == [], f"{len(python)} public callables without a docstring: {python}"


def test_compiled_callables_without_docstrings_do_not_grow():
    _, compiled = undocumented()
    assert len(compiled) <= COMPILED_EXEMPT, (
        f"{len(compiled)} compiled callables without a docstring (allowed: {COMPILED_EXEMPT}); "
        f"new ones: document them in src/: {compiled}")


def test_docstring_examples_run():
    """The Examples sections are doctests: each prints what its docstring says."""
    import doctest

    import tapegrad
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for qual, obj, is_compiled in public_callables():
        if is_compiled:
            continue
        fn = obj.fget if isinstance(obj, property) else obj
        if isinstance(fn, (staticmethod, classmethod)):
            fn = fn.__func__
        for test in finder.find(fn, qual, globs={"tapegrad": tapegrad}):
            runner.run(test)
    assert runner.failures == 0


if __name__ == "__main__":
    python, compiled = undocumented()
    print(f"# Python-level without docstring: {len(python)}")
    print("\n".join(python))
    print(f"# compiled without docstring: {len(compiled)}")
    print("\n".join(compiled))
