# Some binary distributions (e.g. the PyPI wheels of ROS 2) export imported targets such as
# std_msgs::std_msgs__rosidl_generator_py whose INTERFACE_INCLUDE_DIRECTORIES name directories of
# the machine they were built on (its Python and NumPy include dirs). CMake refuses to generate with
# a non-existent include path, so drop such entries from the imported targets of the including
# directory. Existing paths and generator expressions are kept; on a regular install this changes
# nothing. Include it after rosidl_generate_interfaces.
get_property(_imported_targets DIRECTORY PROPERTY IMPORTED_TARGETS)
foreach(_target IN LISTS _imported_targets)
  get_target_property(_include_dirs ${_target} INTERFACE_INCLUDE_DIRECTORIES)
  if(NOT _include_dirs)
    continue()
  endif()
  set(_kept_dirs "")
  foreach(_dir IN LISTS _include_dirs)
    if(IS_ABSOLUTE "${_dir}" AND NOT _dir MATCHES "[$<>]" AND NOT EXISTS "${_dir}")
      message(STATUS "Dropping missing include dir of ${_target}: ${_dir}")
    else()
      list(APPEND _kept_dirs "${_dir}")
    endif()
  endforeach()
  if(NOT _kept_dirs STREQUAL _include_dirs)
    set_property(TARGET ${_target} PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${_kept_dirs}")
  endif()
endforeach()
