"""Builds the roberta_cpp extension with the project's CMake (target roberta_cpp_core) and puts it
into the package. Metadata is in pyproject.toml. Offline on Debian 12 after
`bash tools/setup.sh --test`:

    /usr/bin/python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation --no-index .

ROBERTA_CMAKE_ARGS adds CMake arguments; ROBERTA_BUILD_JOBS sets the build's parallel jobs (2).
"""
import os
import shlex
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name: str, target: str):
        super().__init__(name, sources=[])
        self.target = target


class CMakeBuild(build_ext):
    def build_extension(self, ext: CMakeExtension) -> None:
        out = Path(self.get_ext_fullpath(ext.name)).resolve()
        build_dir = Path(self.build_temp).resolve() / "cmake"
        build_dir.mkdir(parents=True, exist_ok=True)
        python_dir = build_dir / "python-package"
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            "-DROBERTA_BUILD_TESTS=OFF",
            "-DROBERTA_BUILD_PYTHON=ON",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-DROBERTA_PYTHON_DIR={python_dir}",
            *shlex.split(os.environ.get("ROBERTA_CMAKE_ARGS", "")),
        ]
        subprocess.run(configure, check=True)
        jobs = os.environ.get("ROBERTA_BUILD_JOBS", "2")
        subprocess.run(["cmake", "--build", str(build_dir), "--target", ext.target, "-j", jobs], check=True)
        built = next((python_dir / "roberta_cpp").glob("_core*.so"))
        out.parent.mkdir(parents=True, exist_ok=True)
        self.copy_file(str(built), str(out))


setup(
    ext_modules=[CMakeExtension("roberta_cpp._core", "roberta_cpp_core")],
    cmdclass={"build_ext": CMakeBuild},
)
