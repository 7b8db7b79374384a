"""numba's on-disk cache of the kernels: Model.kernels_cached, warm_up's progress, and cache keys
on every module of kernels/ and the joint-type table."""

import os
import subprocess
import sys

from dynamics_node.kernels import aba, cache, calls, checks, completion, frames, lcaba
from dynamics_node.kernels.flat import checks as flat_checks, lcaba as flat_lcaba, model as flat
from fast_paths import model_and_fast_path


def test_kernels_cached_says_whether_warm_up_compiles(tmp_path):
    """Model.kernels_cached (the node's notice that numba compiles): True in a fresh process whose
    numba cache holds the kernels (the suite's, filled by the set-up), False in one with an empty
    cache, True once warmed up."""
    script = ("from dynamics_node import bundled_model, load_model\n"
              "model = load_model(bundled_model('four_bar'))\n"
              "print(model.kernels_cached)")
    root = os.path.join(os.path.dirname(__file__), '..', '..')
    warm = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                          timeout=300, cwd=root)
    cold = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                          timeout=600, cwd=root,
                          env={**os.environ, 'NUMBA_CACHE_DIR': str(tmp_path)})
    assert (warm.stdout.split(), cold.stdout.split()) == (['True'], ['False']), (warm, cold)
    model, _ = model_and_fast_path('four_bar')
    assert model.kernels_cached


def test_warm_up_reports_each_kernel_once():
    """Model.warm_up(progress) calls progress after each kernel, numbered 1 to n, in a fresh
    process (here loading the kernels from the suite's numba cache), and not again."""
    script = ("from dynamics_node import bundled_model, load_model\n"
              "model = load_model(bundled_model('four_bar'))\n"
              "for _ in range(2):\n"
              "    model.warm_up(lambda name, i, n, seconds: print(name, i, n, seconds >= 0))\n")
    done = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                          timeout=300, cwd=os.path.join(os.path.dirname(__file__), '..', '..'))
    lines = [line.split() for line in done.stdout.splitlines()]
    n = len(lines)
    assert n >= 10 and len({name for name, *_ in lines}) == n, done
    assert [(int(i), int(total), ok) for _, i, total, ok in lines] == \
        [(i, n, 'True') for i in range(1, n + 1)], done


def test_kernel_caches_are_keyed_on_every_kernel_module():
    """Kernels inline the kernels of other modules and, like call_context, unbox and read Borrowed
    handles (borrowed.py): their numba cache must go stale with any module of kernels/ and with the
    joint-type table."""
    kernels = os.path.dirname(os.path.abspath(cache.__file__))
    modules = [os.path.join(root, f) for root, _, files in os.walk(kernels) for f in files
               if f.endswith('.py')]
    modules.append(os.path.join(os.path.dirname(kernels), 'joint_types.py'))
    assert set(cache.HELPERS) == set(modules)
    stamps = tuple((os.stat(path).st_mtime, os.stat(path).st_size) for path in sorted(modules))
    for kernel in (aba.aba, lcaba.lcaba, checks.accept_positions, checks.velocity_violation,
                   calls.forward_dynamics, calls.inverse_dynamics, completion.complete,
                   frames.link_kinematics, calls.link_kinematics,
                   flat_checks.call_context, flat._new_model_ref,
                   flat._new_data_ref, flat_lcaba._new_plan_ref, flat_lcaba._new_data_ref):
        assert kernel._cache._impl.locator.get_source_stamp()[1:] == stamps, kernel
