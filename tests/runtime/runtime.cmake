# End-to-end tests of the compiler through the `kiln` command: the ONNX node suite on the
# optimized graph (opt), the program interpreter (tile) and compiled C (cpu), and the
# exported real models compiled for the CPU. Each backend's expected failures are the
# interpreter's list plus tests/conformance/node.<backend>.expect (cases that fail only
# there, with the reason); a listed case that passes fails the test.
# The cpu tests compile C for every case: their kernel cache lives in the build tree, so a
# second run is mostly cache lookups.
set(KILN_TEST_CACHE ${CMAKE_BINARY_DIR}/kernel-cache)

if(KILN_ONNX_DATA AND EXISTS ${KILN_ONNX_DATA}/node)
  foreach(backend opt tile cpu)
    set(lists --expect ${KILN_EXPECT_DIR}/node.expect)
    if(EXISTS ${KILN_EXPECT_DIR}/node.${backend}.expect)
      list(APPEND lists --expect ${KILN_EXPECT_DIR}/node.${backend}.expect)
    endif()
    add_test(NAME conformance.node.${backend}
             COMMAND kiln_cli test-onnx ${KILN_ONNX_DATA}/node --quiet --timeout 600 --jobs 2
                     --backend ${backend} ${lists})
  endforeach()
  # All three also run in the sanitizer build (asan): the passes, the lowering, the
  # program interpreter and the runtime are checked for memory errors and undefined
  # behaviour on every case (the generated kernels themselves are not instrumented).
  set_tests_properties(conformance.node.opt conformance.node.tile PROPERTIES
                       LABELS "quick;asan" TIMEOUT 3000)
  set_tests_properties(conformance.node.cpu PROPERTIES LABELS "cpu;asan" TIMEOUT 7200
                       ENVIRONMENT "KILN_CACHE_DIR=${KILN_TEST_CACHE}")
  # The other ONNX suites (real PyTorch layers and small models) compiled for the CPU.
  foreach(suite pytorch-converted pytorch-operator simple)
    if(EXISTS ${KILN_ONNX_DATA}/${suite})
      add_test(NAME conformance.${suite}.cpu
               COMMAND kiln_cli test-onnx ${KILN_ONNX_DATA}/${suite} --quiet --timeout 600
                       --jobs 2 --backend cpu --expect ${KILN_EXPECT_DIR}/${suite}.expect)
      set_tests_properties(conformance.${suite}.cpu PROPERTIES LABELS "cpu" TIMEOUT 3600
                           ENVIRONMENT "KILN_CACHE_DIR=${KILN_TEST_CACHE}")
    endif()
  endforeach()
endif()

if(KILN_MODELS AND EXISTS ${KILN_MODELS})
  add_test(NAME models.cpu
           COMMAND kiln_cli test-onnx ${KILN_MODELS} --backend cpu --rtol 1e-3 --atol 1e-4)
  set_tests_properties(models.cpu PROPERTIES LABELS "models;cpu" TIMEOUT 2400
                       ENVIRONMENT "KILN_CACHE_DIR=${KILN_TEST_CACHE}")
endif()
