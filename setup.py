"""The accelerated build: rocketpy._speedups compiled with Cython when a C compiler is there.

Everything else is in pyproject.toml. The extension is optional: where it cannot be built, the
install still succeeds and the pure-Python twins of its functions are used.
"""

import os

from setuptools import Extension, setup

ext_modules = []
if not os.environ.get("ROCKETPY_PURE"):
    try:
        from Cython.Build import cythonize
    except ImportError:
        pass
    else:
        ext_modules = cythonize(
            [Extension("rocketpy._speedups", ["rocketpy/_speedups.pyx"], optional=True, extra_compile_args=["-O2"])],
            compiler_directives={"language_level": 3},
            quiet=True,
        )

setup(ext_modules=ext_modules)
