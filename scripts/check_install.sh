#!/usr/bin/env bash
# Checks the regular (colcon-style) install of one ROS 2 distro's environment (DISTRO=kilted, .venv,
# or jazzy, .venv-jazzy; scripts/setup.sh must have run, `make check-install` does so):
#   1. reconfigures the set-up's CMake build directory with CLUSTER_DYNAMICS_INTERFACES_ONLY=OFF
#      (the interfaces are built already: nothing recompiles) and installs everything into a
#      prefix of its own, $VENV/build/install; the set-up's install manifest is kept, and the
#      set-up reconfigures the directory itself whenever it rebuilds;
#   2. checks that the install loaded the numba kernels from the source tree's cache instead of
#      compiling them: every installed numba index equals the source tree's;
#   3. starts the installed lib/cluster_dynamics/dynamics_node script with the installed config and
#      a bundled robot, PYTHONPATH and AMENT_PREFIX_PATH at the prefix (then the venv), and checks
#      that its describe_model service answers with the library's model, called through the
#      installed client and interfaces, and that every dynamics_node and cluster_dynamics module
#      the node imported came from the prefix.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DISTRO="${DISTRO:-kilted}"
case "$DISTRO" in
  kilted) VENV="$ROOT/.venv" ;;
  jazzy) VENV="$ROOT/.venv-jazzy" ;;
  *) echo "check_install.sh: unknown DISTRO '$DISTRO'; expected kilted or jazzy" >&2; exit 2 ;;
esac
BUILD="$VENV/build/cluster_dynamics"
PREFIX="$VENV/build/install"
LOG="$VENV/build/check_install.log"
ROBOT=linkage_leg
start=$SECONDS

fail() { echo "check_install.sh: $*" >&2; exit 1; }
# Runs a command with its output appended to $LOG, shown only if it fails.
logged() { "$@" >> "$LOG" 2>&1 || { cat "$LOG" >&2; fail "failed: $*"; }; }

[[ -f "$BUILD/CMakeCache.txt" ]] || fail "no set-up build in $BUILD: run scripts/setup.sh first"
: > "$LOG"
export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV"
logged cmake -S "$ROOT" -B "$BUILD" -Wno-dev -DCMAKE_INSTALL_PREFIX="$PREFIX" \
  -DCLUSTER_DYNAMICS_INTERFACES_ONLY=OFF
logged cmake --build "$BUILD" --parallel "$(nproc)"
manifest="$BUILD/install_manifest.txt"
[[ ! -f "$manifest" ]] || cp "$manifest" "$manifest.setup"
rm -rf "$PREFIX"
logged cmake --install "$BUILD"
[[ ! -f "$manifest.setup" ]] || mv "$manifest.setup" "$manifest"

SITE=("$PREFIX"/lib/python3.*/site-packages)
for file in "$PREFIX/share/cluster_dynamics/launch/dynamics.launch.py" \
            "$PREFIX/share/cluster_dynamics/config/dynamics_node.yaml" \
            "$PREFIX/lib/cluster_dynamics/dynamics_node" "$SITE/dynamics_node/robots/$ROBOT.urdf"; do
  [[ -f "$file" ]] || fail "not installed: $file"
done
indexes=0
while IFS= read -r index; do
  cmp -s "$ROOT/dynamics_node/$index" "$SITE/dynamics_node/$index" ||
    fail "the install compiled the kernels instead of loading the source tree's cache ($index)"
  indexes=$((indexes + 1))
done < <(cd "$ROOT/dynamics_node" && find kernels -name '*.nbi')
((indexes > 0)) || fail "no numba cache in the source tree: run scripts/setup.sh first"

export PATH="$VENV/bin:$PATH" PYTHONPATH="$SITE" AMENT_PREFIX_PATH="$PREFIX:$VENV"
export LD_LIBRARY_PATH="$PREFIX/lib" ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-64}"
namespace="/check_install_$$"
node_log="$VENV/build/check_install_node.log"
PYTHONVERBOSE=1 "$PREFIX/lib/cluster_dynamics/dynamics_node" --ros-args -r "__ns:=$namespace" \
  --params-file "$PREFIX/share/cluster_dynamics/config/dynamics_node.yaml" \
  -p "robot_description_file:=$ROBOT" > "$node_log" 2>&1 &
node=$!
trap 'kill -TERM $node 2> /dev/null; wait $node 2> /dev/null || true' EXIT
# The node's output without PYTHONVERBOSE's lines.
node_output() { grep -vE "^(#|import |Processing |Adding )" "$node_log"; }

# A describe_model call waits 5 s and is repeated until 60 s: a new node needs about a second, and
# DDS can lose a response while discovery completes.
python -P - "$namespace/dynamics_node" "$ROBOT" "$SITE" <<'EOF' || { node_output >&2; exit 1; }
import sys
import time

import rclpy

import dynamics_node
from dynamics_node import bundled_model, load_model, ModelError
from dynamics_node.ros.client import DynamicsClient

node, robot, site = sys.argv[1:]
assert dynamics_node.__file__.startswith(site), f'the client imports {dynamics_node.__file__}'
rclpy.init()
with DynamicsClient(node, timeout=5.0) as client:
    end = time.monotonic() + 60.0
    while True:
        try:
            response = client.describe()
            break
        except ModelError:
            if time.monotonic() > end:
                raise
expected = load_model(bundled_model(robot))
assert response.robot_name == robot, response
assert list(response.joint_names) == list(expected.joint_names), response
print(f'{node}/describe_model: {robot}, joints {", ".join(response.joint_names)}')
rclpy.shutdown()
EOF

imported="$(grep -oE "(code object|loaded) from '[^']*/(dynamics_node|cluster_dynamics)/[^']*'" \
            "$node_log" |
            cut -d"'" -f2 | sort -u)"
[[ -n "$imported" ]] || fail "the node's imports were not recorded (PYTHONVERBOSE)"
outside="$(grep -v "^$SITE/" <<< "$imported" || true)"
[[ -z "$outside" ]] || fail "the node imported modules from outside $SITE:"$'\n'"$outside"
echo "check_install.sh: $DISTRO install in $PREFIX serves $ROBOT from the installed tree" \
  "($(wc -l <<< "$imported") modules, $indexes numba indexes from the cache; $((SECONDS - start)) s)"
