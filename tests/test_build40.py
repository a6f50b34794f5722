"""setup.py's kernel library step: the kernel sources compile in parallel, each only when it is
stale (setuptools' build_clib recompiled every kernel when one changed)."""
import importlib.util
import os
import threading

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETUP = os.path.join(ROOT, "setup.py")

pytestmark = pytest.mark.skipif(not os.path.exists(SETUP), reason="needs the source tree's setup.py")
# setup.py's build step imports it (setuptools >= 69); a fresh virtualenv on Python >= 3.12 has no
# setuptools at all.
pytest.importorskip("setuptools.modified")


def load_setup():
    spec = importlib.util.spec_from_file_location("tapegrad_setup_under_test", SETUP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)         # not __main__: defines the build, runs no setup()
    return module


class RecordingCompiler:
    """Stands in for the C compiler: records each compile's sources and flags."""

    def __init__(self):
        self.compiled, self.archived = [], None
        self.lock = threading.Lock()

    def object_filenames(self, sources, output_dir):
        return [os.path.join(output_dir, os.path.basename(s)[:-2] + ".o") for s in sources]

    def compile(self, sources, output_dir, include_dirs=None, extra_postargs=None, debug=None):
        with self.lock:
            self.compiled.append((tuple(sources), tuple(extra_postargs)))
        for obj in self.object_filenames(sources, output_dir):
            open(obj, "w").close()

    def create_static_lib(self, objects, name, output_dir, debug=None):
        self.archived = (name, sorted(os.path.basename(o) for o in objects))


def kernel_step(setup, tmp_path, compiler):
    from setuptools.dist import Distribution

    step = setup.BuildClib(Distribution())
    step.compiler, step.build_temp, step.build_clib = compiler, str(tmp_path), str(tmp_path)
    step.force, step.debug, step.jobs = False, None, 2
    return step


def test_only_stale_kernel_sources_recompile(tmp_path):
    setup = load_setup()
    fast, edited, header = tmp_path / "fast.c", tmp_path / "edited.c", tmp_path / "shared.h"
    for path in (fast, edited, header):
        path.write_text("/* */\n")
    info = {"sources": [str(edited), str(fast)], "cflags": ["-O3"], "obj_deps": {"": [str(header)]}}
    compiler = RecordingCompiler()
    step = kernel_step(setup, tmp_path, compiler)

    step.build_libraries([("kernels", info)])           # clean: both, each with the flags
    assert sorted(compiler.compiled) == [((str(edited),), ("-O3",)), ((str(fast),), ("-O3",))]
    assert compiler.archived == ("kernels", ["edited.o", "fast.o"])

    compiler.compiled.clear()
    os.utime(edited, (os.path.getmtime(tmp_path / "fast.o") + 10,) * 2)   # edit edited.c only
    step.build_libraries([("kernels", info)])
    assert compiler.compiled == [((str(edited),), ("-O3",))]
    assert compiler.archived == ("kernels", ["edited.o", "fast.o"])     # the archive keeps both

    compiler.compiled.clear()
    later = os.path.getmtime(tmp_path / "edited.o") + 10
    os.utime(header, (later, later))                    # a shared header: every source
    step.build_libraries([("kernels", info)])
    assert sorted(s for (s,), _ in compiler.compiled) == [str(edited), str(fast)]


def test_the_module_levels_name_real_modules():
    setup = load_setup()
    for name, level in setup.MODULES:
        assert os.path.exists(os.path.join(ROOT, setup.SRC, name + ".pyx")), name
        assert level in (setup.GLUE, setup.COLD), name
