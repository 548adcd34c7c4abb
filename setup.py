"""Build hook: the wheel ships the repository's top-level ``configs/`` as ``jaxsamp/configs/``.

Everything else about the package is declared in pyproject.toml. The configs
live once in git, in the top-level folder that the README, the tests and a
source checkout use; ``build_py`` copies them into the built package, where
``jaxsamp run NAME`` finds an installed wheel's configs by name
(:mod:`jaxsamp.experiments.shipped`).
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithConfigs(build_py):
    """``build_py`` that also copies ``configs/*.yaml`` into the built ``jaxsamp/configs/``."""

    def run(self):
        super().run()
        target = Path(self.build_lib, "jaxsamp", "configs")
        self.mkpath(str(target))
        for config in sorted(Path(__file__).parent.joinpath("configs").glob("*.yaml")):
            self.copy_file(str(config), str(target / config.name))


setup(cmdclass={"build_py": BuildPyWithConfigs})
