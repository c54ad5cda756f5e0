"""Build switch for the optional C accelerator (a plain C library loaded with ctypes).

RC_BUILD_C=auto (default): build if a compiler works, else install without it.
RC_BUILD_C=1: the build must succeed.  RC_BUILD_C=0: never build it.
"""
import os

from setuptools import Extension, setup

mode = os.environ.get("RC_BUILD_C", "auto").strip().lower()
ext_modules = []
if mode != "0":
    ext_modules.append(
        Extension(
            "retrieval_conformance.implementations._rc_core",
            sources=["implementations/_rc_core.c"],
            extra_compile_args=["-O3", "-std=c99", "-fopenmp"],
            extra_link_args=["-fopenmp"],
            optional=(mode != "1"),
        )
    )

# A separate build folder per mode: a stale C library from an earlier build must never ship
# in a wheel built without it (setuptools copies whatever build/lib holds).
setup(ext_modules=ext_modules, options={"build": {"build_base": f"build/c-{mode}"}})
