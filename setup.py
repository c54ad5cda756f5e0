"""Build switch for the optional C accelerator (a plain C library loaded with ctypes).

RC_BUILD_C=auto (default): build if a compiler works, else install without it.
RC_BUILD_C=1: the build must succeed.  RC_BUILD_C=0: never build it.
"""

import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

OPENMP = ["-fopenmp"]
#: POSIX threads (csrc/rc_threads.c) where the platform has them
PTHREAD = ["-pthread"] if os.name == "posix" else []
#: the C sources: units and their shared header (also shipped as package data, for the sanitizer run)
CSRC = "implementations/csrc"


def c_files(suffix):
    """The files of CSRC ending in ``suffix``, sorted, as paths relative to this folder."""
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), CSRC)
    return sorted(f"{CSRC}/{name}" for name in os.listdir(folder) if name.endswith(suffix))


class BuildExtOpenMPOptional(build_ext):
    """Build with OpenMP where the compiler has it, else single-threaded (the C units build both ways)."""

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception:
            if OPENMP[0] not in ext.extra_compile_args:
                raise
            print(f"building {ext.name} without OpenMP (the compiler rejected {OPENMP[0]})")
            ext.extra_compile_args = [a for a in ext.extra_compile_args if a not in OPENMP]
            ext.extra_link_args = [a for a in ext.extra_link_args if a not in OPENMP]
            super().build_extension(ext)


mode = os.environ.get("RC_BUILD_C", "auto").strip().lower()
ext_modules = []
if mode != "0":
    ext_modules.append(
        Extension(
            "retrieval_conformance.implementations._rc_core",
            sources=c_files(".c"),
            include_dirs=[CSRC],
            depends=c_files(".h"),  # a changed header rebuilds the units
            extra_compile_args=["-O3", "-std=c99"] + PTHREAD + OPENMP,
            extra_link_args=PTHREAD + OPENMP,
            optional=(mode != "1"),
        )
    )

# A separate build folder per mode: a stale C library from an earlier build must never ship
# in a wheel built without it (setuptools copies whatever build/lib holds).
setup(
    ext_modules=ext_modules,
    cmdclass={"build_ext": BuildExtOpenMPOptional},
    options={"build": {"build_base": f"build/c-{mode}"}},
)
