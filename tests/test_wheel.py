"""The release as a user installs it: sdist -> wheel -> a clean venv -> ``jaxsamp run quickstart`` outside the repository.

Nothing is downloaded: the wheel is built without build isolation (the test
environment's setuptools) and installed with ``--no-deps --no-index`` into a venv
made without pip; the venv then sees this environment's dependencies through a
``.pth`` file, added after the install so that pip does not take the checkout's
editable install for the package. The checkout is kept off the venv's path
(no PYTHONPATH, working folder outside the repository), and ``jaxsamp list
--configs`` must report the venv's own ``jaxsamp/configs``.

Cost, measured on 2 busy cores: 12-19 s in all -- 2.7 s to build the sdist and
the wheel, 0.8 s to make the venv and install, 1.3 s for ``list --configs``, and
7-15 s for a 20-step quickstart, most of it JAX compiling the run.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["run.num_chains=16", "run.num_steps=20", "run.burn_in=0", "run.chunk=10", "run.checkpoint_every=20", "run.num_eval_samples=100", "run.progress=false"]
#: What a source release leaves out (git, environments, build outputs, run folders, the benchmark results).
NOT_RELEASED = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "runs", "benchmarks")


def _run(cmd, cwd, env=None):
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def _build_wheel(tmp_path: Path) -> Path:
    """Build the sdist from a copy of the checkout, then the wheel from the sdist (as ``python -m build`` does)."""
    src, dist = tmp_path / "src", tmp_path / "dist"
    shutil.copytree(ROOT, src, ignore=NOT_RELEASED)
    _run([sys.executable, "-c", f"from setuptools import build_meta; build_meta.build_sdist({str(dist)!r})"], src)
    (sdist,) = dist.glob("jaxsamp-*.tar.gz")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index", "-w", dist, sdist], tmp_path)
    (wheel,) = dist.glob("jaxsamp-*.whl")
    return wheel


def test_the_wheel_installs_in_a_clean_venv_and_runs_quickstart_by_name_outside_the_repository(tmp_path):
    wheel = _build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    configs = sorted(p.name for p in (ROOT / "configs").glob("*.yaml"))
    assert {f"jaxsamp/configs/{name}" for name in configs} <= names
    assert {"jaxsamp/targets/data/README.md", "jaxsamp/targets/data/test_split_DW4.npy"} <= names
    assert {n.split("/", 1)[1] for n in names if n.startswith("jaxsamp-") and "/licenses/" in n} == {"licenses/LICENSE", "licenses/NOTICE"}

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], tmp_path)
    _run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "-q", "--no-deps", "--no-index", wheel], tmp_path)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    deps = dict.fromkeys(sysconfig.get_path(key) for key in ("purelib", "platlib"))
    (site / "test_dependencies.pth").write_text("".join(f"{path}\n" for path in deps))

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    listing = _run([venv / "bin" / "jaxsamp", "list", "--configs"], elsewhere, env).splitlines()
    assert listing[0].startswith(f"configs ({len(configs)} in {site / 'jaxsamp' / 'configs'}"), listing[0]
    out = _run([venv / "bin" / "jaxsamp", "run", "quickstart", *SMALL, "run.out_dir=runs"], elsewhere, env)
    (run_dir,) = (elsewhere / "runs" / "quickstart").iterdir()
    assert (run_dir / "metrics.json").is_file() and (run_dir / "samples.png").is_file()
    assert "mode_weight_tv" in out
