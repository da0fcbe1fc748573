"""Build script: everything is declared in setup.cfg.

The one thing setup.cfg cannot declare is the ``pyterrier_nuggets_hooks.pth`` start-up file. It makes the
plain ``ir_measures`` and ``ir_datasets`` command lines see this package's measures and datasets: when
either library is imported, its extension (``ir_measures_ext`` / ``datasets_ext``) is imported right after.
"""
import os

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "pyterrier_nuggets_hooks.pth"


class BuildWithPth(build_py):
    def run(self):
        super().run()
        here = os.path.dirname(os.path.abspath(__file__))
        self.copy_file(os.path.join(here, PTH), os.path.join(self.build_lib, PTH), preserve_mode=0)


setup(cmdclass={"build_py": BuildWithPth})
