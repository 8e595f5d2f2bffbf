# Conformance and end-to-end tests, registered when their data is available.
#  KILN_ONNX_DATA: onnx/backend/test/data of the pinned onnx package (set by `make check`)
#  KILN_MODELS:    folder of models exported by scripts/export_models.py
# Labels: quick (everyday iteration), asan (also run in the sanitizer build).
set(KILN_ONNX_DATA "" CACHE PATH "onnx/backend/test/data folder of the onnx package")
set(KILN_MODELS "" CACHE PATH "folder of exported real models (ONNX test layout)")
set(KILN_EXPECT_DIR ${CMAKE_SOURCE_DIR}/tests/conformance)

foreach(t ${KILN_UNIT_TESTS})
  get_filename_component(name ${t} NAME_WE)
  set_tests_properties(unit.${name} PROPERTIES LABELS "quick;asan")
endforeach()

if(KILN_ONNX_DATA AND EXISTS ${KILN_ONNX_DATA}/node)
  if(TEST unit.test_onnx)
    set_tests_properties(unit.test_onnx PROPERTIES ENVIRONMENT "KILN_ONNX_NODE_DIR=${KILN_ONNX_DATA}/node")
  endif()
  foreach(suite node pytorch-converted pytorch-operator simple)
    add_test(NAME conformance.${suite}
             COMMAND kiln_cli test-onnx ${KILN_ONNX_DATA}/${suite} --quiet --timeout 600
                     --expect ${KILN_EXPECT_DIR}/${suite}.expect)
    set_tests_properties(conformance.${suite} PROPERTIES LABELS "quick;asan" TIMEOUT 3000)
  endforeach()
endif()

if(KILN_MODELS AND EXISTS ${KILN_MODELS})
  add_test(NAME models.pytorch
           COMMAND kiln_cli test-onnx ${KILN_MODELS} --rtol 1e-3 --atol 1e-4)
  set_tests_properties(models.pytorch PROPERTIES LABELS "models" TIMEOUT 2400)
endif()

if(EXISTS ${CMAKE_SOURCE_DIR}/tests/malformed/run_malformed.sh)
  add_test(NAME malformed.models
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/malformed/run_malformed.sh
                   ${CMAKE_BINARY_DIR} ${CMAKE_BINARY_DIR}/malformed)
  set_tests_properties(malformed.models PROPERTIES LABELS "asan" TIMEOUT 1800
                       ENVIRONMENT "PYTHON=${CMAKE_SOURCE_DIR}/.venv/bin/python")
endif()

add_test(NAME cli.usage COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/test_cli.sh
                                 $<TARGET_FILE:kiln_cli>)
set_tests_properties(cli.usage PROPERTIES LABELS "quick;asan")

# Hostile-input suite: one test per tests/hostile/case_*.sh (see tests/hostile/lib.sh).
file(GLOB kiln_hostile_cases ${CMAKE_SOURCE_DIR}/tests/hostile/case_*.sh)
foreach(f ${kiln_hostile_cases})
  get_filename_component(name ${f} NAME_WE)
  string(REPLACE "case_" "" name ${name})
  add_test(NAME hostile.${name}
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/hostile/run_hostile.sh case_${name}
                   $<TARGET_FILE:kiln_cli> ${CMAKE_BINARY_DIR}/hostile)
  set_tests_properties(hostile.${name} PROPERTIES LABELS "asan" TIMEOUT 900
                       ENVIRONMENT "PYTHON=${CMAKE_SOURCE_DIR}/.venv/bin/python")
endforeach()

# Under the sanitizers a request for an absurd allocation (a size from a malformed model)
# must come back as NULL, which Kiln reports as an error, not abort the process.
get_property(kiln_all_tests DIRECTORY PROPERTY TESTS)
foreach(t ${kiln_all_tests})
  set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT
               "ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1"
               "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
endforeach()
