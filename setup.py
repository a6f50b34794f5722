"""Build script: the compiled core, several extension modules built from src/tapegrad/.

Everything expensive happens inside the build_ext command (below), not when this file is imported,
so a metadata query (`pip install` resolving, `python setup.py --version`) costs no compilation.

The build:
- cythonizes and compiles the extension modules in parallel (build_ext --parallel, default: every
  CPU; TAPEGRAD_BUILD_JOBS=N to choose);
- keeps each built module in build/cache/ under a hash of everything it is made from (its Cython
  sources and the .pxd/.pxi/.h they reach, Cython's and numpy's versions, the flags), and reuses it
  when nothing changed: an edit to one op family rebuilds that module only, and a second
  `pip install -e .` (a fresh temporary build directory each time) compiles nothing;
- puts Cython's utility code (the cyfunction type, argument parsing, ...), which every module
  would otherwise compile its own copy of, into one shared module, tapegrad._cyutility
  (Cython 3.1's shared utility module);
- compiles with -O3 and no debug info.  TAPEGRAD_DEBUG=1 builds with bounds checks on, -O0 -g;
  TAPEGRAD_ASAN=1 builds with AddressSanitizer (tools/asan.sh).
"""
import hashlib
import os
import re
import shutil
import sys
import sysconfig
import threading

from setuptools import Extension, setup
from setuptools.command.build_clib import build_clib
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join("src", "tapegrad")
CACHE = os.path.join("build", "cache")
CYTHON_OUT = os.path.join("build", "cython")
BUILDING = threading.local()        # the cache path of the extension this thread is building

DEBUG = os.environ.get("TAPEGRAD_DEBUG") == "1"
ASAN = os.environ.get("TAPEGRAD_ASAN") == "1"

# Optimisation levels.  The C kernels (kernels.c, small) are the only loops over array elements:
# -O3.  The Cython modules are glue around CPython and numpy calls; compiling them is most of the
# build.  They get GLUE: -O1 (which still inlines Cython's `inline` helpers) plus -O2's code
# layout (aligned branch targets, hot/cold block ordering), which is what made -O2 faster on this
# code (measured per op: within noise of -O3; plain -O1 was ~6% slower) at -O1's compile time, a
# third of -O3's.  GLUE also takes -O2's cross-jumping (tail merging): Cython ends every error
# path with the same release-the-temporaries-and-jump code, which it merges; 2-5% less machine
# code (deflated: unary 185 -> 181 KB, shape 210 -> 206, nn 306 -> 299 without its kernels,
# replay 200 -> 195; 26 KB of the wheel) and per-op time unchanged (tools/compare_builds.py).
# -g0 comes after the interpreter's CFLAGS (which carry -g): debug info made the .so 6x larger.
LAYOUT = ("-falign-functions -falign-jumps -falign-loops -falign-labels -fstrict-aliasing "
          "-freorder-blocks-algorithm=stc -freorder-blocks-and-partition -freorder-functions "
          "-fcrossjumping")
GLUE = "-O1 " + LAYOUT
# COLD: -Og with GLUE's code layout, for the families off the per-op path: reductions (their
# work is in the kernels), in-place ops, linalg and _graph_vjp (create_graph only).  (Replay was
# measured too, below, but stays at GLUE: its fused loops are issue 19's benches, not measured
# at -Og.)  -Og runs a short list of
# optimisation passes: these five compile in ~60% of their CPU time at GLUE or -Os (clean build,
# CPU-seconds: reduce 5.0 -> 3.0, graph_vjp 6.1 -> 3.6, inplace 5.5 -> 3.1, linalg 3.8 -> 2.2,
# replay 8.4 -> 5.3), which brought issue 18's clean build back under its target after it grew
# to 119-124 CPU-seconds (target 116).  Per-op time (tools/compare_builds.py, 150 rounds, against
# an A/A control of median 1.020): median 0.999, every op 0.96-1.04 (inplace 1.030, linalg mm
# 1.022, replay 0.989, double backward 0.977).  Code: 15-20% less than GLUE's, deflated (inplace
# 154 -> 125 KB, linalg 123 -> 98, replay 215 -> 170), 10-15% more than -Os's (reduce 107 -> 114,
# graph_vjp 129 -> 143, which were at -Os): the wheel's compiled modules 2,453 -> 2,340 KB.
# -Os, which these two had, compiles no faster than GLUE; -Og on every module (the core and the
# per-op families too) cost 2-9% per op (median 1.054 against A/A 1.022) and stays off them.
# (Before: the core at -O2 was 42 of a clean build's 154 CPU-seconds; at GLUE 21, its per-op
# time within the A/A noise, session 26.)
COLD = "-Og " + LAYOUT
KERNELS_ARGS = ["-O3", "-g0"]
link_args = []
# Every module that calls a kernel links the kernels' static library, and a linker copies archive
# members whole: a module calling one transpose kernel carried all the vectorised math (~250 KB, in
# four modules).  Each kernel function gets a section of its own and the linker drops the sections
# no module code reaches; the library's symbols stay out of each module's dynamic symbol table
# (exported, they were roots that kept everything).  Stripped modules: 5.20 -> 4.66 MB (4.44 MB
# with replay calling the pooled kernels through the core, src/tapegrad/pooled_kernels.pxi).
if sys.platform.startswith("linux"):
    KERNELS_ARGS += ["-ffunction-sections", "-fdata-sections"]
    link_args += ["-Wl,--gc-sections", "-Wl,--exclude-libs,ALL"]
elif sys.platform == "darwin":
    KERNELS_ARGS += ["-ffunction-sections", "-fdata-sections"]
    link_args += ["-Wl,-dead_strip"]
# The kernels' thread pool (threadpool.c) uses POSIX threads: -pthread links them explicitly (a C
# library where they are separate, as older glibc and some BSDs, would fail to load otherwise) and
# compiles the kernels thread-safe.  MSVC uses Win32 threads and knows no such flag.
if os.name != "nt":
    KERNELS_ARGS.append("-pthread")
    link_args.append("-pthread")
    # The kernels never read errno: without this, GCC keeps sqrt a libm call (for errno on
    # negative input) and cannot vectorise rsqrt's and the gradients' square roots.
    KERNELS_ARGS.append("-fno-math-errno")
# No unwind tables (.eh_frame, 4-5% of each stripped module): C code needs them only to unwind
# through its frames (C++ exceptions, pthread_cancel/pthread_exit, backtrace()), and nothing here
# does that; the debug and sanitizer builds keep them for their stack traces.  Linux only: macOS
# derives its compact unwind info from them.
NO_UNWIND = (["-fno-asynchronous-unwind-tables", "-fno-unwind-tables"]
             if sys.platform.startswith("linux") and not (DEBUG or ASAN) else [])
KERNELS_ARGS += NO_UNWIND
if DEBUG:
    KERNELS_ARGS = ["-O0", "-g"] + KERNELS_ARGS[2:]
if ASAN:
    # -O1 keeps the sanitizer build quick; ASan needs no more.
    KERNELS_ARGS = ["-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer"] + KERNELS_ARGS[2:]
    link_args += ["-fsanitize=address"]


def compile_args(opt):
    if DEBUG:
        return ["-O0", "-g"]
    if ASAN:
        return list(KERNELS_ARGS)
    return opt.split() + ["-g0"] + NO_UNWIND


# The extension modules in layer order (src/tapegrad/_core.pyx describes the layering) and the
# optimisation level of each.
MODULES = [
    ("_core", GLUE),
    ("_ops_unary", GLUE),
    ("_ops_reduce", COLD),
    ("_ops_shape", GLUE),
    ("_ops_inplace", COLD),
    ("_ops_linalg", COLD),
    ("_ops_nn", GLUE),
    # (issue 19's replay workloads at -Og, tools/compare_builds.py --suite replay: 1.03-1.05
    # against an A/A control of 0.95-1.02 on a loaded machine; -2.7 CPU-seconds not worth it)
    ("_replay", GLUE),
    ("_graph_vjp", COLD),
    ("_factories", GLUE),       # (the factories' common calls: their per-call time is the point)
]

# Modules that link numpy.random's C samplers (numpy's static libnpyrandom, its documented route
# for extensions): the factories draw the global stream with the samplers numpy's Generator runs.
NUMPY_RANDOM_USERS = ("_factories",)


def numpy_random_link():
    """(library_dirs, libraries) of numpy's libnpyrandom (none without numpy: build_ext then
    stops with its own message)."""
    try:
        import numpy
    except ImportError:
        return [], []
    # (its samplers call the C math library, a library of its own but on Windows)
    libm = [] if sys.platform == "win32" else ["m"]
    return [os.path.join(os.path.dirname(numpy.__file__), "random", "lib")], ["npyrandom"] + libm


# Every module is compiled without Cython's bound-method unpacking (CYTHON_UNPACK_METHODS=0).  At
# every call of a Python method Cython inlines a test for a bound Python method and, when it is
# one, a call of its function with self prepended: that saves only the bound method's own
# vectorcall trampoline, and numpy's methods (most calls here) are C methods that never take the
# path.  Without it a module has 1-5% less code, deflated as much, and per-op time is unchanged
# (tools/compare_builds.py against A/A controls).  The cold families first (1,852 -> 1,801 KB
# deflated; families and small suites: medians 0.988-1.013 and 1.003 against A/A 0.996-1.016 and
# 0.995); then the hot ones (_core, _ops_unary, _ops_shape, _ops_nn: 2,185 -> 2,150 KB of the
# repaired wheel's compiled modules; families median 0.972, every op 0.93-1.00, against A/A 0.993
# (0.96-1.02); small suite median 0.985, max 1.043, against A/A 1.001, max 1.064).

# Cython's utility code, shared by the modules above (each imports it when it loads).  Without
# MemoryView, which no module uses (a third of the shared module's code).
SHARED_UTILITY = "tapegrad._cyutility"
SHARED_UTILITY_OPTIONS = {"shared_utility_qualified_name": SHARED_UTILITY,
                          "shared_utility_features_disabled": ["MemoryView"]}

# kernels.c, compiled once into a static library that the modules calling the kernels link, with
# the vectorised math functions it calls (vecmath*.c), its thread pool and the sums in PyTorch's
# order (cascade_sum.c).
KERNEL_SOURCES = ["kernels.c", "vecmath.c", "vecmath_scalar.c", "vecmath_avx2.c", "vecmath_avx512.c",
                  "vecmath_pow_one.c", "threadpool.c", "cascade_sum.c"]
KERNEL_HEADERS = ["kernels.h", "cascade_sum.h", "vecmath.h", "vecmath_levels.h", "vecmath_impl.h",
                  "vecmath_one_lane.h", "vecmath_consts.h", "vecmath_tables.h", "vecmath_f32n.h",
                  "threadpool.h"]
KERNELS = ("tapegrad_kernels", {
    "sources": [os.path.join(SRC, f)
                for f in KERNEL_SOURCES + ["nn_kernels.c", "scan_kernels.c", "index_kernels.c",
                                          "order_kernels.c", "grid_kernels.c"]],
    "include_dirs": [SRC],
    "cflags": KERNELS_ARGS,
    # build_clib recompiles the library when a source is newer than its object; the headers the
    # sources include count too (an edit of vecmath_impl.h alone linked the stale objects).
    "obj_deps": {"": [os.path.join(SRC, f)
                      for f in KERNEL_HEADERS + ["nn_kernels.h", "scan_kernels.h", "index_kernels.h",
                                                 "order_kernels.h", "grid_kernels.h"]]},
})

# Hand-written C that only some modules read, so that an edit of it rebuilds only them: the nn
# kernels, the running sums and products with the order kernels (kthvalue, searchsorted), the
# index copies (linked from the same static library), and the out= wrapper's type (a header).
MODULE_C_FILES = {"_ops_nn": ("nn_kernels.h", "nn_kernels.c", "grid_kernels.h",
                             "grid_kernels.c"), "_ops_inplace": ("out_arg_call.h",),
                  "_ops_reduce": ("scan_kernels.h", "scan_kernels.c", "order_kernels.h",
                                  "order_kernels.c"),
                  "_ops_shape": ("index_kernels.h", "index_kernels.c")}

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": DEBUG,
    "embedsignature": True,
    "binding": True,
    # A def function's extension-typed (or builtin-typed) argument, `def exp(TensorBase input)`,
    # refuses None unless it says `or None` or defaults to None: by Cython's default it took
    # None, and the function then read through it (tapegrad.exp(None) crashed the interpreter,
    # as did some 170 other functions).
    "allow_none_for_extension_args": False,
    # No copies of the .pyx lines as comments in the generated C: it is 30% smaller (_core.c
    # 9.1 -> 6.4 MB) and the compiler reads less (issue 18's clean build).  Only the generated
    # C changes; the machine code is identical.
    "emit_code_comments": False,
}

MISSING_TOOL = (
    "tapegrad: building the compiled core needs {what}, which was not found.\n"
    "tapegrad: {fix}, or install a prebuilt wheel of tapegrad, which needs neither a compiler nor "
    "Cython.")


def fail(what, fix):
    """Stop the build with two lines saying what is missing (not a compiler's traceback)."""
    raise SystemExit(MISSING_TOOL.format(what=what, fix=fix))


# Cython 3.3's extension types create instances through a vectorcall tp_new, which a plain
# tp_new call (wrap()'s, every op's result tensor) reaches through an adapter
# (__Pyx_CallTpnewAsVectorcall): ~45 instructions more per tensor made, 2% of a one-element op
# (issue 20's check that sizes 1-16 keep their per-op time).  Every module (and the shared
# utility module, so that they agree on it) uses the plain tp_new, as Cython 3.2 did.
#
# (Cython's per-site cache of module globals stays on where Cython enables it, Python < 3.12:
# without it, CYTHON_USE_DICT_VERSIONS=0, each module compiled 4-9% faster with 4-9% less code,
# but every `np.` and other module-global lookup became a dict lookup, and the per-op bench lost
# 5% on shape.view_t_permute and replay.compiled_call (tools/compare_builds.py, halves agreeing,
# A/A within 0.99-1.02): over the 5%.)
CYTHON_MACROS = [("CYTHON_VECTORCALL_TPNEW", "0")]


def extensions():
    # Its sources: the C file Cython generates for it (cythonize maps this path into build_dir).
    shared = Extension(SHARED_UTILITY, sources=[SHARED_UTILITY.replace(".", os.sep) + ".c"],
                       define_macros=CYTHON_MACROS,
                       extra_compile_args=compile_args(GLUE), extra_link_args=link_args)
    return [shared] + [
        Extension(
            f"tapegrad.{name}",
            sources=[os.path.join(SRC, name + ".pyx")],
            depends=[os.path.join(SRC, f)
                     for f in KERNEL_HEADERS + KERNEL_SOURCES + list(MODULE_C_FILES.get(name, ()))],
            include_dirs=[SRC],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION")] + CYTHON_MACROS
            + [("CYTHON_UNPACK_METHODS", "0")],
            extra_compile_args=compile_args(opt),
            extra_link_args=link_args,
            **(numpy_random_kwargs() if name in NUMPY_RANDOM_USERS else {}),
        )
        for name, opt in MODULES
    ]


def numpy_random_kwargs():
    dirs, libs = numpy_random_link()
    return {"library_dirs": dirs, "libraries": libs}


INCLUDE = re.compile(r'^\s*include\s+"([^"]+)"', re.M)
CIMPORT = re.compile(r"^\s*(?:from\s+tapegrad\.(\w+)\s+cimport|cimport\s+tapegrad\.(\w+))", re.M)


def sources_of(sources):
    """The project files the build of these sources reads: each .pyx with its own .pxd, the .pxi
    it includes and the .pxd of the modules it cimports, transitively.  (Cython's and numpy's own
    .pxd files are covered by their versions in the cache key.)"""
    seen, todo = set(), list(sources)
    while todo:
        path = todo.pop()
        if path in seen or not os.path.exists(path):
            continue
        seen.add(path)
        if not path.endswith((".pyx", ".pxd", ".pxi")):
            continue
        if path.endswith(".pyx"):
            todo.append(path[:-4] + ".pxd")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        todo += [os.path.join(os.path.dirname(path), name) for name in INCLUDE.findall(text)]
        todo += [os.path.join(SRC, (a or b) + ".pxd") for a, b in CIMPORT.findall(text)]
    return seen


class BuildClib(build_clib):
    """kernels.c as a static library: built when build_ext has a module to compile (it runs this
    command itself then), not on every `build` (a second editable install compiles nothing).

    Its sources compile in parallel (build_ext's job count) and one by one: setuptools' own
    build_clib compiles them in one sequence, and all of them again when any one is stale, so an
    edit of nn_kernels.c recompiled every kernel (~20 CPU-seconds, serial, before the first
    module started)."""

    wanted = False
    jobs = 1

    def run(self):
        if self.wanted:
            super().run()

    def build_libraries(self, libraries):
        from concurrent.futures import ThreadPoolExecutor
        from setuptools.modified import newer_group

        for name, info in libraries:
            sources = sorted(info["sources"])
            objects = self.compiler.object_filenames(sources, output_dir=self.build_temp)
            shared_deps = info.get("obj_deps", {}).get("", [])
            stale = [src for src, obj in zip(sources, objects)
                     if self.force or newer_group([src] + shared_deps, obj)]

            def compile_one(src):
                self.compiler.compile([src], output_dir=self.build_temp,
                                      include_dirs=info.get("include_dirs"),
                                      extra_postargs=info["cflags"], debug=self.debug)

            with ThreadPoolExecutor(max(1, self.jobs)) as pool:
                list(pool.map(compile_one, stale))      # list(): re-raises a failed compile
            self.compiler.create_static_lib(objects, name, output_dir=self.build_clib,
                                            debug=self.debug)


class BuildExt(build_ext):
    """build_ext that cythonizes at build time, in parallel, and reuses unchanged modules."""

    def finalize_options(self):
        if self.parallel is None:
            jobs = os.environ.get("TAPEGRAD_BUILD_JOBS")
            self.parallel = int(jobs) if jobs else (os.cpu_count() or 1)
        super().finalize_options()

    def run(self):
        try:
            import numpy
        except ImportError:
            fail("numpy", "pip install numpy")
        for ext in self.extensions:
            if numpy.get_include() not in ext.include_dirs:
                ext.include_dirs.append(numpy.get_include())
        self._keys = {ext.name: self._cache_key(ext) for ext in self.extensions}
        todo = [ext for ext in self.extensions
                if self.force or not os.path.exists(self._cached(ext))]
        if todo:
            self._check_compiler()
            clib = self.get_finalized_command("build_clib")
            clib.wanted = True
            clib.jobs = self.parallel
            clib.run()                          # kernels.c, for the modules about to be linked
            try:
                from Cython.Build import cythonize
            except ImportError:
                fail("Cython (3.x)", "pip install 'Cython>=3.0,<4'")
            # force: Cython's own staleness test compares file times only, so it would reuse a
            # generated .c made with other directives (TAPEGRAD_DEBUG) or without the shared
            # utility module; what is in `todo` is stale by the cache key, which covers those.
            done = cythonize(todo, compiler_directives=directives, include_path=["src"],
                             build_dir=CYTHON_OUT, force=True, quiet=True,
                             nthreads=self.parallel if self.parallel > 1 else 0,
                             **SHARED_UTILITY_OPTIONS)
            generated = {ext.name: ext.sources for ext in done}
            for ext in todo:
                ext.sources = generated[ext.name]       # the .pyx's generated .c from now on
        super().run()

    def _check_compiler(self):
        """Fail early, with two plain lines, when the C compiler the build would run is missing."""
        if os.name == "nt":
            return                              # MSVC is found by setuptools' own search
        cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()
        if cc and shutil.which(cc[0]) is None:
            fail(f"a C compiler ({cc[0]})",
                 "install one (Debian/Ubuntu: apt install gcc; macOS: xcode-select --install)")

    def build_extension(self, ext):
        """Build `ext` into the cache (unless an identical build is there), then copy it where
        setuptools expects it."""
        target = self.get_ext_fullpath(ext.name)
        cached = self._cached(ext)
        if self.force or not os.path.exists(cached):
            os.makedirs(os.path.dirname(cached), exist_ok=True)
            BUILDING.path = cached      # per thread: build_ext --parallel builds in threads
            try:
                super().build_extension(ext)
            finally:
                BUILDING.path = None
            self._prune(ext, cached)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(cached, target)

    def get_ext_fullpath(self, ext_name):
        building = getattr(BUILDING, "path", None)
        return building if building else super().get_ext_fullpath(ext_name)

    # -- the cache -------------------------------------------------------------------------------

    def _flavour(self, ext):
        """What the build of `ext` depends on besides its sources' contents."""
        import numpy
        try:
            from Cython import __version__ as cython_version
        except ImportError:                     # then only a cached build can be used
            cython_version = None
        return repr((sys.version, sysconfig.get_platform(), cython_version,
                     numpy.__version__, ext.extra_compile_args, ext.extra_link_args, KERNELS,
                     ext.define_macros, directives, SHARED_UTILITY_OPTIONS,
                     os.environ.get("CC"), os.environ.get("CFLAGS"), os.environ.get("LDFLAGS")))

    def _cache_key(self, ext):
        h = hashlib.sha256(self._flavour(ext).encode())
        for path in sorted(set(ext.depends) | sources_of(ext.sources)):
            h.update(os.path.basename(path).encode())
            with open(path, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
        return h.hexdigest()[:20]

    def _cached(self, ext):
        suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
        return os.path.join(CACHE, f"{ext.name}.{self._keys[ext.name]}{suffix}")

    def _prune(self, ext, keep):
        """Drop older cached builds of `ext` (a few flavours may stay: debug, ASan, plain)."""
        prefix = ext.name + "."
        old = sorted((os.path.getmtime(os.path.join(CACHE, f)), f) for f in os.listdir(CACHE)
                     if f.startswith(prefix) and os.path.join(CACHE, f) != keep)
        for _, f in old[:-2]:
            os.remove(os.path.join(CACHE, f))


# Guarded so that a test can import this file's build classes; pip's build backend and
# `python setup.py` both run it as __main__.
if __name__ == "__main__":
    setup(ext_modules=extensions(), libraries=[KERNELS],
          cmdclass={"build_ext": BuildExt, "build_clib": BuildClib})
