"""Pinocchio's C++ as the anchor of the batch benchmark: nanoseconds per state of pinocchio::aba,
pinocchio::rnea and pinocchio::computeJointTorqueRegressor on one thread, timed by
bench/pinocchio_anchor.cpp in a loop over the states that bench/batch.py times (the median of
REPEATS interleaved loops, std::chrono::steady_clock).

The model reaches the C++ program as a file of pin.Model.saveToBinary, read back by
Model::loadFromBinary: the exact model a Python column times, whether test/oracle.py's spanning
tree (built joint by joint in Python, revolute joints as JointModelRevoluteUnaligned; a URDF
written from it would come back from the parser with other joint types) or the model of
Pinocchio's URDF parser (pin.buildModelFromUrdf, a JointModelFreeFlyer root on request;
axis-aligned joint types, Pinocchio's fastest form of a robot). The wheel does not ship urdfdom's
headers, so the C++ side cannot include Pinocchio's URDF parser; the Python binding runs that same
compiled parser.

No number is returned unless the C++ outputs equal pin.aba, pin.rnea and
pin.computeJointTorqueRegressor from Python on the same model and states: entry by entry on the
first CHECKED states, and as the sum of every output over all states, each to TOLERANCE relative.

The build (build()): g++ with CMake's Release flags -O3 -DNDEBUG, those of Pinocchio's own
benchmarks (benchmark/CMakeLists.txt, Release build), without -march=native, like the wheel's
libraries (generic x86-64). Pinocchio is used header-only, with the interface definitions of the
wheel's CMake target pinocchio_headers (lib/cmake/pinocchio/pinocchioTargets.cmake): aba, rnea and
the regressor are all compiled in the one file by the one compiler. Both choices make the stricter
anchor on this machine: -march=native measured some 5 % slower, and the wheel's precompiled
instantiations (PINOCCHIO_ENABLE_TEMPLATE_INSTANTIATION, target pinocchio_default) 4 to 12 %
slower. Headers from the cmeel prefix (Pinocchio, Boost) and Debian's libeigen3-dev; linked with
the prefix's Boost.Serialization (reading the model), with the rpath pointing at the prefix's lib,
so no LD_LIBRARY_PATH is needed. Compiled on demand into bench/build/ (ignored by git), again only
when the source or the command changes.
"""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time

import numpy as np
import pinocchio as pin

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, 'pinocchio_anchor.cpp')
EXECUTABLE = os.path.join(HERE, 'build', 'pinocchio_anchor')
EIGEN = '/usr/include/eigen3'
FLAGS = ('-std=c++17', '-O3', '-DNDEBUG')
# the interface definitions of the CMake target pinocchio::pinocchio_headers
DEFINITIONS = ('BOOST_MPL_LIMIT_LIST_SIZE=30', 'BOOST_MPL_LIMIT_VECTOR_SIZE=30',
               'BOOST_MPL_CFG_NO_PREPROCESSED_HEADERS', 'BOOST_FUSION_INVOKE_MAX_ARITY=12')
LIBRARIES = ('boost_serialization',)
ALGORITHMS = ('aba', 'rnea', 'regressor')
REPEATS, CHECKED, TOLERANCE = 21, 20, 1e-9


def cmeel_prefix():
    """The wheels' install prefix (cmeel.prefix), where pinocchio's Python package lives."""
    path = os.path.dirname(pin.__file__)
    while os.path.basename(path) != 'cmeel.prefix':
        if path == os.path.dirname(path):
            raise RuntimeError(f'pinocchio at {pin.__file__} is not from the pin wheel')
        path = os.path.dirname(path)
    return path


def compile_command(output):
    prefix = cmeel_prefix()
    lib = os.path.join(prefix, 'lib')
    return (['g++', *FLAGS, *(f'-D{d}' for d in DEFINITIONS),
             '-isystem', os.path.join(prefix, 'include'), '-isystem', EIGEN, SOURCE, '-o', output,
             f'-L{lib}', f'-Wl,-rpath,{lib}'] + [f'-l{name}' for name in LIBRARIES])


def build():
    """Path of the compiled program, compiled first when the source or the command changed."""
    command = compile_command(EXECUTABLE)
    with open(SOURCE, 'rb') as source:
        digest = hashlib.sha256(source.read() + ' '.join(command).encode()).hexdigest()
    stamp = EXECUTABLE + '.sha256'
    if os.path.exists(EXECUTABLE) and os.path.exists(stamp):
        with open(stamp) as file:
            if file.read() == digest:
                return EXECUTABLE
    if shutil.which('g++') is None:
        raise RuntimeError('g++ not found: the C++ anchor needs it (apt-get install g++)')
    if not os.path.exists(os.path.join(EIGEN, 'Eigen', 'Core')):
        raise RuntimeError(f'Eigen headers not found in {EIGEN}: the C++ anchor needs them '
                           '(apt-get install libeigen3-dev)')
    os.makedirs(os.path.dirname(EXECUTABLE), exist_ok=True)
    partial = EXECUTABLE + '.partial'
    print(f'compiling {os.path.relpath(SOURCE)} (about a minute or two) ...', flush=True)
    start = time.perf_counter()
    result = subprocess.run(compile_command(partial), capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError('compiling the C++ anchor failed:\n' + ' '.join(result.args) + '\n'
                           + '\n'.join(result.stderr.splitlines()[-40:]))
    os.replace(partial, EXECUTABLE)
    with open(stamp, 'w') as file:
        file.write(digest)
    print(f'compiled in {time.perf_counter() - start:.0f} s', flush=True)
    return EXECUTABLE


def urdf_model(path, free_flyer=False):
    """Pinocchio's URDF parser's model of a URDF file, on a JointModelFreeFlyer root if asked."""
    return (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if free_flyer
            else pin.buildModelFromUrdf(path))


def states_on(target, source, Q, V, A, T):
    """States (rows, Pinocchio's layout of source) moved to the layout of target, joint by name;
    checked to be the same robot: equal pin.aba on the first state."""
    moved = [np.zeros((len(Q), target.nq))] + [np.zeros((len(Q), target.nv)) for _ in range(3)]
    for j in range(1, target.njoints):
        joint, other = target.joints[j], source.joints[source.getJointId(target.names[j])]
        if (joint.nq, joint.nv) != (other.nq, other.nv):
            raise ValueError(f'joint {target.names[j]}: sizes differ between the models')
        moved[0][:, joint.idx_q:joint.idx_q + joint.nq] = Q[:, other.idx_q:other.idx_q + joint.nq]
        for out, rows in zip(moved[1:], (V, A, T)):
            out[:, joint.idx_v:joint.idx_v + joint.nv] = rows[:, other.idx_v:
                                                              other.idx_v + joint.nv]
    ddq = [pin.aba(model, model.createData(), q[0], v[0], t[0]).copy()
           for model, (q, v, _, t) in ((source, (Q, V, A, T)), (target, moved))]
    mapped = np.zeros(source.nv)
    for j in range(1, target.njoints):
        joint, other = target.joints[j], source.joints[source.getJointId(target.names[j])]
        mapped[other.idx_v:other.idx_v + joint.nv] = ddq[1][joint.idx_v:joint.idx_v + joint.nv]
    require(close(mapped, ddq[0], 1e-8), 'the two models are not the same robot')
    return moved


def require(condition, message):
    """An assert that python -O keeps: a failed check stops the benchmark."""
    if not condition:
        raise RuntimeError(message)


def close(actual, expected, tolerance=TOLERANCE):
    """|actual - expected| <= tolerance * max(1, |expected|) entrywise."""
    expected = np.asarray(expected)
    return bool(np.max(np.abs(actual - expected), initial=0)
                <= tolerance * max(1.0, np.max(np.abs(expected), initial=0)))


def python_outputs(model, q, v, a, tau):
    data = model.createData()
    return (pin.aba(model, data, q, v, tau).copy(), pin.rnea(model, data, q, v, a).copy(),
            pin.computeJointTorqueRegressor(model, data, q, v, a).ravel(order='F'))


def per_state_ns(model, Q, V, A, T, repeats=REPEATS):
    """{algorithm: median nanoseconds per state} of Pinocchio's C++ on the states (rows of Q, V,
    A and tau T in the model's layout), after checking its outputs against Pinocchio's Python."""
    executable = build()
    with tempfile.TemporaryDirectory() as work:
        model_file, states_file, results_file = (os.path.join(work, name)
                                                 for name in ('model', 'states', 'results'))
        model.saveToBinary(model_file)
        with open(states_file, 'wb') as file:
            np.array([len(Q), model.nq, model.nv], dtype='<i8').tofile(file)
            for rows in (Q, V, A, T):
                np.ascontiguousarray(rows, dtype='<f8').tofile(file)
        run = subprocess.run([executable, model_file, states_file, results_file, str(repeats),
                              str(CHECKED)], capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f'{executable} failed:\n{run.stderr}')
        report = json.loads(run.stdout)
        results = np.fromfile(results_file, dtype='<f8')
    sums, magnitudes = np.zeros(3), np.zeros(3)
    offset = 0
    for i, state in enumerate(zip(Q, V, A, T)):
        for k, (name, expected) in enumerate(zip(ALGORITHMS, python_outputs(model, *state))):
            sums[k] += expected.sum()
            magnitudes[k] += np.abs(expected).sum()
            if i < report['checked']:
                actual = results[offset:offset + expected.size]
                offset += expected.size
                require(close(actual, expected),
                        f'C++ {name} differs from Python on state {i}: the anchor is not reported')
    require(report['states'] == len(Q) and offset == results.size,
            'the C++ program did not answer for the states it was given')
    for k, name in enumerate(ALGORITHMS):
        require(abs(report['checksum'][name] - sums[k]) <= TOLERANCE * max(1.0, magnitudes[k]),
                f'C++ {name} over all states differs from Python: the anchor is not reported')
    return report['ns']
