"""The cluster_dynamics ROS 2 node: a thin adapter between ROS messages and the dynamics library.

DynamicsNode wires the parts together, each in a module of its own that is given the node (or the
logger and clock) it needs: parameters.py (specs, checks, the set-parameters callback),
description.py (the description sources and the served model), services.py (the services' handlers,
plain functions of the served model, request and response), stream.py (joint_states -> torques),
robot_state.py (/tf, /tf_static and the file's joints) and diagnostics.py (``/diagnostics``).
Every callback runs in guard.Guard: a bad input gets its documented outcome (success=false with the
reason, a counted drop, a rejected parameter), any other exception is an internal error logged
with its traceback; nothing raises into the executor. The parameters are listed in
parameters.PARAMETERS (and documented in config/dynamics_node.yaml).

Lifecycle (a managed node, as nav2 and ros2_control nodes are): unconfigured (a description that
arrives is kept), configure (loads it) -> inactive -> activate -> active (the services exist and
answer, the stream publishes) -> deactivate -> inactive (the services withdrawn) -> cleanup (drops
the model) -> unconfigured. Creating the services at activation lets a client's wait_for_service
wait for a served model. /diagnostics reports in every state. The autostart parameter (default
true) configures and activates the node by itself, at start and, while unconfigured, whenever a
description arrives.

Threads: services, parameters, the description topic, lifecycle transitions and diagnostics run on
the main thread's executor; the stream runs on an executor thread of its own, with a second node
``_<name>_stream`` (hidden from ``ros2 node list``) holding its subscriptions and publishers, so
that a long service call (LCABA, a reload) never delays a torque. That node ignores the command
line; its entities take the names the main node resolves, so that every remap written against the
main node (``~/computed_torques``, ``dynamics_node:joint_states``, ``__node``, ``__ns``) applies to
them. The compiled kernels release the GIL, and the interpreter's switch interval is shortened so
that the stream thread gets the GIL back within STREAM_GIL_SWITCH while the main thread runs
Python. rclpy's MultiThreadedExecutor (9.1.2, rclpy issue #1452) cannot keep up with a control-rate
stream, hence two executors of one thread each: EventsExecutor where rclpy has it (Jazzy, Kilted),
else SingleThreadedExecutor. Autostart configures on a thread of its own, so that the node answers
its signals while numba compiles.

rclpy APIs used (all present in Humble's rclpy 3.3, Jazzy's 7.1 and Kilted's 9.1): rclpy.init (with
SignalHandlerOptions.NO: SIGINT and SIGTERM are handled here, see main), rclpy.try_shutdown, Node
(use_global_arguments, start_parameter_services), Node.resolve_topic_name, rclpy.lifecycle
(LifecycleNode, trigger_configure, trigger_activate), declare_parameter with a ParameterDescriptor
(dynamic_typing, ranges), add_on_set_parameters_callback, create_timer with a steady Clock,
ROSClock.ros_time_is_active, Executor.spin_once, ExternalShutdownException, and the message-lost
QoS event (rclpy.event_handler, rclpy.qos_event before Iron); rclpy.experimental.EventsExecutor
only where it exists.
"""

from contextlib import suppress
import faulthandler
import os
import signal
import sys
import tempfile
import threading

import rclpy
from rclpy._rclpy_pybind11 import RCLError
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from std_msgs.msg import String

from ..errors import ModelError
from . import parameters
from .description import DESCRIPTION_QOS, ServedModel
from .diagnostics import Diagnostics
from .guard import clip, ENDING, Guard
from .services import create_services
from .stream import Stream, StreamStats

STREAM_GIL_SWITCH = 5e-5     # s, interpreter switch interval (Python's default is 5 ms)
# s from SIGINT/SIGTERM (or an external shutdown) to the end of the process: time for DDS to
# destroy the participant (ended by force in the middle, it can leave a shared-memory port locked
# for every later process on the machine), under ros2 launch's 5 s from SIGINT to SIGTERM
EXIT_DEADLINE = 4.0
_ENDING_LOCK = threading.Lock()   # guard.ENDING is set once the process is ending (_end_within)


class DynamicsNode(LifecycleNode):
    """Serves the dynamics of a URDF+ robot: services, torque stream, TF, diagnostics. A managed
    node: configure loads the description, activate serves it (creates the services, the stream
    publishes), deactivate stops serving (withdraws them), cleanup drops the model; autostart does
    the first two by itself."""

    def __init__(self, **kwargs):
        super().__init__('dynamics_node', **kwargs)
        try:
            self.settings = parameters.declare(self)
        except (ModelError, ParameterException) as error:
            self.get_logger().fatal(f'invalid parameter: {clip(error)}')
            raise SystemExit(1) from None
        logger = self.get_logger()
        self.stats = StreamStats()
        self._starting, self._start_again = threading.Lock(), False
        self._served_services = []       # created at activate, destroyed at deactivate
        self.served = ServedModel(self.settings, self.stats, logger,
                                  self.autostart if self.settings['autostart'] else None)
        self.stream_node = _stream_node(self)
        self.stream = Stream(self.stream_node, self.resolve_topic_name, self.served,
                             self.settings, self.stats, self.get_clock(), logger)
        self.diagnostics = Diagnostics(self, self.served, self.settings, self.stats,
                                       self.stream.lost_reported)
        self.create_subscription(String, self.settings['robot_description_topic'],
                                 self.served.on_description, DESCRIPTION_QOS)
        self.add_on_set_parameters_callback(
            parameters.on_set_parameters(self.settings, self.served, self.stats, logger))

    def autostart(self):
        """Configure and activate on a thread of its own (loading may take minutes while numba
        compiles), one at a time; a call meanwhile (a description that arrived) has it try again
        once it ends."""
        self._start_again = True
        if self._starting.acquire(blocking=False):
            threading.Thread(target=self._start, name='autostart', daemon=True).start()

    def _start(self):
        try:
            while self._start_again:
                self._start_again = False
                if self.served.state == 'unconfigured':
                    self.trigger_configure()
                if self.served.state == 'inactive':
                    self.trigger_activate()
        finally:
            self._starting.release()
        if self._start_again:
            self.autostart()

    def on_configure(self, state):
        self.served.state = 'configuring'
        try:
            self.served.configure()
        except ModelError:
            self.served.state = 'unconfigured'
            return TransitionCallbackReturn.FAILURE
        self.served.state = 'inactive'
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state):
        self.served.state = 'active'
        self._served_services = create_services(self, self.served, self.settings, self.stats)
        return super().on_activate(state)

    def on_deactivate(self, state):
        self.served.state = 'inactive'
        self._destroy_services()
        return super().on_deactivate(state)

    def on_cleanup(self, state):
        self.served.state = 'unconfigured'
        self._destroy_services()
        self.served.cleanup()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state):
        self.served.state = 'finalized'
        self._destroy_services()
        self.served.cleanup()
        return TransitionCallbackReturn.SUCCESS

    def _destroy_services(self):
        """Withdraw the services: a client's wait_for_service waits for the next activation."""
        for service in self._served_services:
            self.destroy_service(service)
        self._served_services = []

    def destroy_node(self):
        """Destroy the stream node, then this one."""
        self.stream_node.destroy_node()
        return super().destroy_node()


def _stream_node(node):
    """The node of the stream's entities: ``_<name>_stream`` in node's namespace (hidden: a name
    that starts with '_' is left out of ``ros2 node list``), deaf to the command line's arguments
    (the stream's entities take the names node resolves, its remaps included, so that remaps
    written against node apply to them, and apply once)."""
    return Node(f'_{node.get_name()}_stream', namespace=node.get_namespace(), context=node.context,
                use_global_arguments=False, start_parameter_services=False)


def executor_of(node):
    """An executor of node alone: rclpy's EventsExecutor where it exists (Jazzy, Kilted; faster per
    service call than the SingleThreadedExecutor), else the latter (Humble)."""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        executor = SingleThreadedExecutor()
    else:
        executor = EventsExecutor()
    executor.add_node(node)
    return executor


def spin(executor, logger):
    """Spin until the context shuts down. A loop of spin_once: EventsExecutor.spin() (rclpy
    9.1.2) leaves services unanswered. An error of the executor itself is logged, not fatal."""
    while rclpy.ok():
        with Guard('executor', logger, bad_input=()), suppress(ExternalShutdownException):
            executor.spin_once(timeout_sec=0.1)


def _end_within(seconds):
    """From now on the process ends within seconds, whatever DDS does: faulthandler's watchdog is a
    C thread, which needs no GIL, and calls _exit(1) unless the clean exit of main comes first.
    That clean exit destroys the nodes, so that their peers see them leave at once, but DDS can
    hold it up for seconds (seen: 0.5-3 s, and once a crash, in a node whose client processes had
    ended without leaving the graph). True if this call armed the deadline (later calls keep the
    first one)."""
    with _ENDING_LOCK:
        if ENDING.is_set():
            return False
        ENDING.set()
    # no traceback
    faulthandler.dump_traceback_later(seconds, exit=True, file=open(os.devnull, 'w'))
    return True


def _on_signal(signum, frame):
    """SIGINT or SIGTERM, in the main thread: leave the spin loop unless the signal watcher ended
    it."""
    if _end_within(EXIT_DEADLINE):
        raise KeyboardInterrupt


def _watch_signals():
    """Start the deadline at a SIGINT or SIGTERM and shut the context down (the spin loops end),
    also while the main thread, the only one to run Python's signal handlers, is held up in a C
    call that releases the GIL (a compiled kernel). The interpreter's C-level handler writes the
    signal number to a pipe at once; a thread of its own reads it. A C call that keeps the GIL
    still delays both: rclpy's Service.send_response to clients killed in the middle of their
    requests was seen waiting in DDS 0.3 s after the signal."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _on_signal)
    signal.set_wakeup_fd(write)

    def watch():
        os.read(read, 1)
        _end_within(EXIT_DEADLINE)
        rclpy.try_shutdown()
    threading.Thread(target=watch, name='signals', daemon=True).start()


def _init(args):
    """rclpy.init, or, when the command line does not parse (e.g. an unquoted list of strings in
    -p), one FATAL line with rcl's reason and exit status 1. rcl also logs its own error on
    stderr, which is held back and shown only if init succeeds."""
    with tempfile.TemporaryFile('w+') as held:
        saved = os.dup(2)
        os.dup2(held.fileno(), 2)
        try:
            rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        except RCLError as error:
            failure = error
        else:
            failure = None
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        if failure is None:
            held.seek(0)
            sys.stderr.write(held.read())
            return
    print(f'[FATAL] [dynamics_node]: invalid command line: {clip(failure)}. A -p value is YAML: '
          'quote a list of strings (-p "stream.contacts:=[\'l_sole:6D\', \'r_sole:6D\']")',
          file=sys.stderr)
    sys.stderr.flush()
    os._exit(1)


def main(args=None):
    """Run the node until Ctrl-C, SIGTERM or an external shutdown, then end the process."""
    sys.setswitchinterval(STREAM_GIL_SWITCH)
    _init(args)
    _watch_signals()
    node = stream = None
    code = 0
    try:
        node = DynamicsNode()
        stream = threading.Thread(target=spin,
                                  args=(executor_of(node.stream_node), node.get_logger()),
                                  name='stream', daemon=True)
        stream.start()
        if node.settings['autostart']:
            node.autostart()
        spin(executor_of(node), node.get_logger())
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except SystemExit as error:
        code = error.code
    finally:
        _end_within(EXIT_DEADLINE)
        rclpy.try_shutdown()
        if stream is not None:
            stream.join()          # its spin loop ends with the context: no entity is in use below
        if node is not None:
            node.destroy_node()
    # The interpreter's own finalization (numba, llvmlite) takes ~0.7 s, and would wait for a
    # compilation in progress: skip it (destroying the last node destroyed the DDS participant).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
