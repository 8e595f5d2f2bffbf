# Compile-time scaling on generated 2k..20k-node graphs (`make bench-compile`); prints a table,
# checks nothing, so it carries the "bench" label that `make check` leaves out.
if(EXISTS ${CMAKE_SOURCE_DIR}/.venv/bin/python)
  add_test(NAME bench.compile_scaling
           COMMAND ${CMAKE_SOURCE_DIR}/.venv/bin/python ${CMAKE_SOURCE_DIR}/bench/compile_scaling.py
                   --kiln $<TARGET_FILE:kiln_cli>
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(bench.compile_scaling PROPERTIES LABELS "bench" TIMEOUT 900)
endif()
