# Development entry points. Every target first brings the venv up to date through scripts/setup.sh,
# which returns within milliseconds when nothing changed. DISTRO selects the ROS 2 distro:
# kilted (default, .venv) or jazzy (.venv-jazzy), e.g. `make test DISTRO=jazzy`.
DISTRO ?= kilted
export DISTRO
VENV := $(if $(filter jazzy,$(DISTRO)),.venv-jazzy,.venv)
PYTHON := $(VENV)/bin/python

# ROS 2 traffic stays on this machine.
export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST
# Domain of `make run` (override: make run ROS_DOMAIN_ID=7). The tests choose their own domain
# unless ROS_DOMAIN_ID is set in the environment.
RUN_DOMAIN_ID := $(or $(ROS_DOMAIN_ID),42)

.PHONY: setup run test check-install bench

setup:
	scripts/setup.sh

# The shipped YAML names no robot: run the bundled quadruped.
run: setup
	ROS_DOMAIN_ID=$(RUN_DOMAIN_ID) $(VENV)/bin/dynamics_node --ros-args \
	  --params-file config/dynamics_node.yaml -p robot_description_file:=quadruped_rotors

# TESTS narrows the run, e.g. `make test DISTRO=jazzy TESTS=test/ros`.
TESTS ?= test
test: setup
	$(PYTHON) -m pytest -q $(TESTS)

# The colcon-style install, into a prefix of its own, serves from the installed tree.
check-install: setup
	scripts/check_install.sh

bench: setup
	$(PYTHON) bench/run.py
