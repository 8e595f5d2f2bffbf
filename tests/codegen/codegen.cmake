# Code generation tests: test_codegen compiles generated C with the system compiler (and
# CUDA C with NVRTC when present), so it takes tens of seconds on two cores.
if(TEST unit.test_codegen)
  set_tests_properties(unit.test_codegen PROPERTIES TIMEOUT 900)
endif()
# Speed of the MMA register-tile microkernel (GFLOP/s on one core); not a pass/fail check.
add_test(NAME bench.codegen_mma COMMAND test_codegen WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(bench.codegen_mma PROPERTIES ENVIRONMENT "KILN_BENCH=1" LABELS "bench"
                     TIMEOUT 900)
